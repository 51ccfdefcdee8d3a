"""What the group, offset and transaction handlers share: the coordinator, the client's host,
answering once a coordinator's callback arrives, and the partitions an offset commit names."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from broker.coordinators.scheduler import Answer
from broker.dispatch import Later, RequestContext
from coordination.group.coordinator import GroupCoordinator
from protocol.acl import AclOperation, ResourceType
from protocol.error_codes import ErrorCode

T = TypeVar("T")
R = TypeVar("R")


def coordinator(ctx: RequestContext) -> GroupCoordinator:
    """The broker's group coordinator."""
    return ctx.services.groups.coordinator


def client_host(ctx: RequestContext) -> str:
    """Kafka's member ``clientHost``: "/" and the peer's address."""
    return f"/{ctx.session.client_host}"


def respond(answer: Answer[T], build: Callable[[T], R]) -> R | Later:
    """``build(value)`` now if the answer is there, else later (the dispatcher awaits it)."""
    if answer.ready:
        return build(answer.value)  # type: ignore[arg-type]

    async def later() -> R:
        return build(await answer.wait())

    return Later(later())


TopicPartition = tuple[str, int]
#: a partition as the request names its topic: by name, or by id
Keyed = tuple[str | uuid.UUID, int]


@dataclass
class CommitTopics:
    """The partitions of an OffsetCommit or TxnOffsetCommit (topics by name, or by id from
    OffsetCommit v10 and TxnOffsetCommit v6), checked as Kafka checks them before a commit: an
    id no topic has (the zero id too) is UNKNOWN_TOPIC_ID, a topic the principal may not READ
    TOPIC_AUTHORIZATION_FAILED, a partition that does not exist UNKNOWN_TOPIC_OR_PARTITION.
    ``errors`` keys each partition as the request names its topic."""

    errors: dict[Keyed, ErrorCode] = field(default_factory=dict)
    #: the id of each topic the request names by id
    ids: dict[str, uuid.UUID] = field(default_factory=dict)
    #: the partitions that may be committed, with the request's partition entry
    valid: list[tuple[TopicPartition, Any]] = field(default_factory=list)

    @classmethod
    def check(cls, ctx: RequestContext, topics: Sequence[Any], by_id: bool) -> CommitTopics:
        out = cls()
        view = ctx.services.metadata.view
        for t in topics:
            if by_id:
                topic = view.topics_by_id.get(t.topic_id)
                if topic is None:
                    for p in t.partitions:
                        out.errors[(t.topic_id, p.partition_index)] = ErrorCode.UNKNOWN_TOPIC_ID
                    continue
                name = topic.name
                out.ids[name] = t.topic_id
            else:
                name = t.name
            denied = not ctx.authorize(AclOperation.READ, ResourceType.TOPIC, name)
            for p in t.partitions:
                tp = (name, p.partition_index)
                if denied:
                    out.errors[out.keyed(tp)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                elif view.partition(*tp) is None:
                    out.errors[out.keyed(tp)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    out.valid.append((tp, p))
        return out

    def keyed(self, tp: TopicPartition) -> Keyed:
        """A partition as the request names its topic."""
        topic_id = self.ids.get(tp[0])
        return tp if topic_id is None else (topic_id, tp[1])

    def answered(self, found: dict[TopicPartition, ErrorCode]) -> None:
        """The coordinator's answers, by partition name, into ``errors``."""
        self.errors.update((self.keyed(tp), e) for tp, e in found.items())

    def error(self, t: Any, p: Any, by_id: bool) -> ErrorCode:
        """The answer of the request's partition ``p`` of topic ``t``."""
        return self.errors.get((t.topic_id if by_id else t.name, p.partition_index), ErrorCode.NONE)

    def __iter__(self) -> Iterator[tuple[TopicPartition, Any]]:
        return iter(self.valid)
