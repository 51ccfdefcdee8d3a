"""Request frames captured from real clients (tests/golden/capture.py) decode to the values the
capture scenario put in: topic, group, record keys, values and headers."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from protocol.api_keys import ApiKey
from protocol.headers import decode_request
from protocol.records.memory import iter_records
from tests.golden.capture import GROUP, HEADER, RECORDS, TOPIC

FRAMES = Path(__file__).resolve().parents[2] / "golden" / "frames"
CASES = sorted(FRAMES.glob("*/*.bin"))
REQUIRED = {
    "api_versions",
    "metadata",
    "produce",
    "fetch",
    "list_offsets",
    "join_group",
    "offset_commit",
}


def test_every_client_has_the_required_frames():
    clients = {p.parent.name for p in CASES}
    assert clients == {"confluent-kafka", "kafka-python", "aiokafka", "kcat"}
    for client in clients:
        names = {p.stem.rsplit("-v", 1)[0] for p in CASES if p.parent.name == client}
        missing = REQUIRED - names
        assert not missing, (client, missing)


def subscription_topics(metadata: bytes) -> list[str]:
    """The topics of a ConsumerProtocolSubscription (version int16, then [topic string])."""
    (count,) = struct.unpack_from(">i", metadata, 2)
    pos, topics = 6, []
    for _ in range(count):
        (n,) = struct.unpack_from(">h", metadata, pos)
        topics.append(metadata[pos + 2 : pos + 2 + n].decode())
        pos += 2 + n
    return topics


@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CASES])
def test_golden_frame_decodes_to_expected_values(path: Path):
    client = path.parent.name
    topic, group = TOPIC.format(client=client), GROUP.format(client=client)
    header, body = decode_request(memoryview(bytearray(path.read_bytes())))
    version = header.api_version
    assert f"{ApiKey(header.api_key).name.lower()}-v{version}" == path.stem
    key = header.api_key
    if key == ApiKey.API_VERSIONS:
        if version >= 3:
            assert body.client_software_name
    elif key == ApiKey.METADATA:
        for t in body.topics or []:
            assert t.name in (None, topic)
    elif key == ApiKey.CREATE_TOPICS:
        assert [t.name for t in body.topics] == [topic]
        assert body.topics[0].num_partitions == 1
    elif key == ApiKey.PRODUCE:
        assert [t.name for t in body.topic_data] == [topic]
        records = [r for p in body.topic_data[0].partition_data for r in iter_records(p.records)]
        assert records
        for r in records:
            assert (r.key, r.value) in RECORDS
            assert (HEADER[0], HEADER[1]) in [tuple(h) for h in r.headers]
    elif key == ApiKey.FETCH:
        if version >= 13:  # topics by id (random per capture)
            assert len(body.topics) == 1 and body.topics[0].topic_id.int != 0
        else:
            assert [t.topic for t in body.topics] == [topic]
        assert body.topics[0].partitions[0].partition == 0
    elif key == ApiKey.LIST_OFFSETS:
        assert [t.name for t in body.topics] == [topic]
    elif key == ApiKey.FIND_COORDINATOR:
        keys = body.coordinator_keys if version >= 4 else [body.key]
        assert keys == [group]
    elif key == ApiKey.JOIN_GROUP:
        assert body.group_id == group and body.protocol_type == "consumer"
        assert body.protocols
        assert all(topic in subscription_topics(p.metadata) for p in body.protocols)
    elif key in (ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP):
        assert body.group_id == group
    elif key == ApiKey.OFFSET_COMMIT:
        assert body.group_id == group
        assert [t.name for t in body.topics] == [topic]
        assert body.topics[0].partitions[0].committed_offset in (1, 2)
    elif key == ApiKey.OFFSET_FETCH:
        groups = [g.group_id for g in body.groups] if version >= 8 else [body.group_id]
        assert groups == [group]
    elif key == ApiKey.INIT_PRODUCER_ID:
        assert body.transactional_id is None
    else:
        pytest.fail(f"no expectations for {path.stem}")


def test_message_stubs_match_the_schemas() -> None:
    """The typing stubs of protocol/messages are generated from the schemas; a schema change
    must come with them (python scripts/gen_message_stubs.py)."""
    from scripts.gen_message_stubs import stubs

    for path, text in stubs().items():
        assert path.exists() and path.read_text() == text, f"stale {path.name}"
