"""Versions Kafka 4.4 added that no oracle knows yet (kio and kafka-python 3 stop at Kafka 4.x
definitions before them): ApiVersions v5, DeleteGroups v3, TxnOffsetCommit v6, against bytes
written field by field as Kafka 4.4's generated ``*Data`` classes write them (read from
kafka-clients 4.4.0), decoded back to the same values. tests/reference's corpus compares the
brokers' answers at these versions with Kafka 4.4 itself."""

from __future__ import annotations

import struct
import uuid

from protocol.messages.api_versions import ApiVersion, ApiVersionsRequest, ApiVersionsResponse
from protocol.messages.delete_groups import (
    DeletableGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
)
from protocol.messages.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
    TxnOffsetCommitResponse,
    TxnOffsetCommitResponsePartition,
    TxnOffsetCommitResponseTopic,
)
from tests.support.frames import request_body, response_body

TOPIC_ID = uuid.UUID("6c2a4a7e-2f1b-4a35-9b6a-0d1c9f3f0b01")


def compact(text: str | None) -> bytes:
    """A compact (nullable) string: unsigned varint length + 1 (0 for null), then UTF-8."""
    if text is None:
        return b"\x00"
    raw = text.encode()
    assert len(raw) < 127
    return bytes([len(raw) + 1]) + raw


def test_api_versions_v5_request_names_the_cluster_and_the_node() -> None:
    body = ApiVersionsRequest(
        client_software_name="x", client_software_version="1", cluster_id="abc", node_id=3
    )
    assert request_body(18, 5, body) == (
        compact("x") + compact("1") + compact("abc") + struct.pack(">i", 3) + b"\x00"
    )
    neither = ApiVersionsRequest(client_software_name="x", client_software_version="1")
    assert request_body(18, 5, neither) == (
        compact("x") + compact("1") + compact(None) + struct.pack(">i", -1) + b"\x00"
    )


def test_api_versions_v5_response_is_v4s() -> None:
    body = ApiVersionsResponse(
        error_code=0,
        api_keys=[ApiVersion(api_key=18, min_version=0, max_version=5)],
        throttle_time_ms=0,
    )
    # the response header is v0 even when flexible (no tagged fields after the correlation id)
    expected = (
        struct.pack(">h", 0)
        + b"\x02"
        + struct.pack(">hhh", 18, 0, 5)
        + b"\x00"
        + struct.pack(">i", 0)
        + b"\x00"
    )
    header = struct.pack(">i", 9)
    assert response_body(18, 5, body, header) == expected
    assert response_body(18, 4, body, header) == expected


def test_delete_groups_v3() -> None:
    assert request_body(42, 3, DeleteGroupsRequest(groups_names=["g"])) == (
        b"\x02" + compact("g") + b"\x00"
    )
    body = DeleteGroupsResponse(
        throttle_time_ms=0,
        results=[
            DeletableGroupResult(group_id="g", error_code=69, error_message=None),
            DeletableGroupResult(group_id="h", error_code=68, error_message="busy"),
        ],
    )
    header = struct.pack(">i", 9) + b"\x00"
    assert response_body(42, 3, body, header) == (
        struct.pack(">i", 0)
        + b"\x03"
        + compact("g")
        + struct.pack(">h", 69)
        + compact(None)
        + b"\x00"
        + compact("h")
        + struct.pack(">h", 68)
        + compact("busy")
        + b"\x00"
        + b"\x00"
    )


def test_txn_offset_commit_v6_names_topics_by_id() -> None:
    body = TxnOffsetCommitRequest(
        transactional_id="t",
        group_id="g",
        producer_id=7,
        producer_epoch=2,
        generation_id=5,
        member_id="m",
        group_instance_id=None,
        topics=[
            TxnOffsetCommitRequestTopic(
                name="ignored in v6",
                topic_id=TOPIC_ID,
                partitions=[
                    TxnOffsetCommitRequestPartition(
                        partition_index=1,
                        committed_offset=100,
                        committed_leader_epoch=4,
                        committed_metadata="md",
                    )
                ],
            )
        ],
    )
    assert request_body(28, 6, body.replace(topics=[body.topics[0].replace(name="")])) == (
        compact("t")
        + compact("g")
        + struct.pack(">qhi", 7, 2, 5)
        + compact("m")
        + compact(None)
        + b"\x02"
        + TOPIC_ID.bytes
        + b"\x02"
        + struct.pack(">iqi", 1, 100, 4)
        + compact("md")
        + b"\x00"
        + b"\x00"
        + b"\x00"
    )
    response = TxnOffsetCommitResponse(
        throttle_time_ms=0,
        topics=[
            TxnOffsetCommitResponseTopic(
                topic_id=TOPIC_ID,
                partitions=[TxnOffsetCommitResponsePartition(partition_index=1, error_code=100)],
            )
        ],
    )
    header = struct.pack(">i", 9) + b"\x00"
    assert response_body(28, 6, response, header) == (
        struct.pack(">i", 0)
        + b"\x02"
        + TOPIC_ID.bytes
        + b"\x02"
        + struct.pack(">ih", 1, 100)
        + b"\x00"
        + b"\x00"
        + b"\x00"
    )
