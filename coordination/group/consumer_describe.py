"""ConsumerGroupDescribe: a consumer group as Kafka describes it (``ConsumerGroup.
asDescribedGroup``): its state, epochs, assignor and members, with topic names for the ids of
their current and target assignments (topics deleted meanwhile are left out)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from coordination.group.consumer_group import EMPTY_PARTITIONS, ConsumerGroup
from coordination.group.consumer_records import Partitions
from coordination.metadata.view import ClusterView
from protocol.error_codes import ErrorCode


@dataclass(frozen=True, slots=True)
class DescribedPartitions:
    topic_id: uuid.UUID
    topic_name: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class DescribedMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: tuple[DescribedPartitions, ...]
    target_assignment: tuple[DescribedPartitions, ...]
    #: KIP-1099: 0 classic, 1 consumer
    member_type: int


@dataclass(frozen=True, slots=True)
class DescribedGroup:
    error: ErrorCode
    message: str | None
    group_id: str
    state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor: str = ""
    members: tuple[DescribedMember, ...] = ()


def describe_group(
    group: ConsumerGroup, view: ClusterView, default_assignor: str
) -> DescribedGroup:

    def parts(assignment: Partitions) -> tuple[DescribedPartitions, ...]:
        out = []
        for topic_id, p in assignment.items():
            topic = view.topics_by_id.get(topic_id)
            if topic is not None:
                out.append(DescribedPartitions(topic_id, topic.name, tuple(sorted(p))))
        return tuple(sorted(out, key=lambda d: d.topic_name))

    members = tuple(
        DescribedMember(
            member_id=m.member_id,
            instance_id=m.instance_id,
            rack_id=m.rack_id,
            member_epoch=m.member_epoch,
            client_id=m.client_id,
            client_host=m.client_host,
            subscribed_topic_names=tuple(sorted(m.subscribed_topic_names)),
            subscribed_topic_regex=m.subscribed_topic_regex,
            assignment=parts(m.assigned),
            target_assignment=parts(group.target_assignment.get(m.member_id, EMPTY_PARTITIONS)),
            member_type=0 if m.uses_classic_protocol else 1,
        )
        for m in group.members.values()
    )
    preferred = group.preferred_assignor()
    return DescribedGroup(
        ErrorCode.NONE,
        None,
        group.group_id,
        group.state.value,
        group.group_epoch,
        group.target_assignment_epoch,
        preferred if preferred is not None else default_assignor,
        members,
    )
