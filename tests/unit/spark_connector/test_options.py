"""Option parsing: Spark's Kafka source/sink rules, defaults and clear errors, no I/O."""

from __future__ import annotations

import pytest

from spark_connector.client import READ_COMMITTED, parse_bootstrap_servers
from spark_connector.options import (
    OptionError,
    offsets_from_json,
    offsets_to_json,
    parse_duration_ms,
    parse_sink_options,
    parse_source_options,
)

BASE = {"kafka.bootstrap.servers": "localhost:9092", "subscribe": "a"}


def src(streaming: bool = True, **extra: str):
    return parse_source_options({**BASE, **extra}, streaming=streaming)


def test_defaults_streaming_and_batch():
    s = src()
    assert s.subscription.kind == "subscribe" and s.subscription.topics == ("a",)
    assert s.starting.kind == "latest" and s.ending is None
    assert s.fail_on_data_loss and not s.include_headers
    assert s.max_offsets_per_trigger is None and s.max_trigger_delay_ms == 15 * 60_000
    b = src(streaming=False)
    assert b.starting.kind == "earliest" and b.ending is not None and b.ending.kind == "latest"
    assert b.client.bootstrap_servers == (("localhost", 9092),)


def test_keys_are_case_insensitive():
    s = parse_source_options(
        {"KAFKA.BOOTSTRAP.SERVERS": "h:1", "subscribePattern": "t.*", "MaxOffsetsPerTrigger": "5"},
        streaming=True,
    )
    assert s.subscription.kind == "subscribePattern" and s.max_offsets_per_trigger == 5
    assert s.subscription.matches("topic") and not s.subscription.matches("xtopic")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"subscribe": "a"}, "kafka.bootstrap.servers"),
        ({"kafka.bootstrap.servers": "h:1"}, "One of the following options"),
        ({**BASE, "assign": '{"a":[0]}'}, "Only one of"),
        ({**BASE, "subscribe": " , "}, "No topics to subscribe"),
        (
            {"kafka.bootstrap.servers": "h:1", "subscribePattern": ""},
            "Pattern to subscribe is empty",
        ),
        ({"kafka.bootstrap.servers": "h:1", "subscribePattern": "(("}, "not a valid regex"),
        ({"kafka.bootstrap.servers": "h:1", "assign": "[1]"}, "JSON object"),
        ({"kafka.bootstrap.servers": "h:1", "assign": '{"a":["x"]}'}, "list of partition"),
        ({"kafka.bootstrap.servers": "h:1", "assign": "{}"}, "No topicpartitions"),
        ({**BASE, "kafka.bootstrap.servers": "nohost"}, "host:port"),
        ({**BASE, "kafka.auto.offset.reset": "earliest"}, "startingOffsets"),
        ({**BASE, "kafka.value.deserializer": "x"}, "not supported"),
        ({**BASE, "kafka.security.protocol": "SASL_SSL"}, "PLAINTEXT only"),
        ({**BASE, "startingOffsets": "{bad"}, "not valid JSON"),
        ({**BASE, "startingOffsets": '{"a":{"x":1}}'}, "is not a number"),
        ({**BASE, "startingOffsets": '{"a":{"0":-3}}'}, "invalid"),
        ({**BASE, "endingOffsets": "latest"}, "not valid in streaming"),
        ({**BASE, "maxOffsetsPerTrigger": "0"}, "at least 1"),
        ({**BASE, "maxOffsetsPerTrigger": "ten"}, "integer"),
        ({**BASE, "minOffsetsPerTrigger": "10", "maxOffsetsPerTrigger": "5"}, "above"),
        ({**BASE, "maxTriggerDelay": "soon"}, "duration"),
        ({**BASE, "failOnDataLoss": "yes"}, "'true' or 'false'"),
        ({**BASE, "kafka.isolation.level": "serializable"}, "read_committed"),
        ({**BASE, "startingOffsetsByTimestampStrategy": "earliest"}, "'error' or 'latest'"),
        ({**BASE, "minPartitions": "0"}, "at least 1"),
        ({**BASE, "startingTimestamp": "-5"}, "at least 0"),
        # accepted and unused (docs/spark.md), but still checked
        ({**BASE, "fetchOffset.numRetries": "three"}, "integer"),
        ({**BASE, "fetchOffset.retryIntervalMs": "-1"}, "at least 0"),
    ],
)
def test_bad_source_options_fail_clearly(options, message):
    with pytest.raises(OptionError, match=message):
        parse_source_options(options, streaming=True)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"startingOffsets": "latest"}, "can't be latest for batch"),
        ({"endingOffsets": "earliest"}, "can't be earliest for batch"),
        ({"startingOffsets": '{"a":{"0":-1}}'}, "can't be latest"),
        ({"endingOffsets": '{"a":{"0":-2}}'}, "can't be earliest"),
    ],
)
def test_batch_only_rules(extra, message):
    with pytest.raises(OptionError, match=message):
        src(streaming=False, **extra)


def test_offset_specs_and_precedence():
    s = src(startingOffsets='{"a":{"1":-2,"0":23}}')
    assert s.starting.kind == "offsets" and s.starting.offset_map == {("a", 0): 23, ("a", 1): -2}
    s = src(startingOffsets="earliest", startingTimestamp="1000")
    assert s.starting.kind == "timestamp" and s.starting.timestamp == 1000
    s = src(startingOffsetsByTimestamp='{"a":{"0":5}}', startingOffsets="earliest")
    assert s.starting.kind == "timestamps" and s.starting.offset_map == {("a", 0): 5}
    b = src(streaming=False, endingTimestamp="99")
    assert b.ending.kind == "timestamp" and b.ending_timestamp_given
    s = src(startingOffsetsByTimestampStrategy="LATEST")
    assert s.starting_timestamp_strategy == "latest"


def test_assign_and_offsets_must_agree():
    s = parse_source_options(
        {"kafka.bootstrap.servers": "h:1", "assign": '{"b":[1,0],"a":[2]}'}, streaming=True
    )
    assert s.subscription.assigned == (("a", 2), ("b", 0), ("b", 1))
    with pytest.raises(OptionError, match="not assigned: a-0"):
        parse_source_options(
            {
                "kafka.bootstrap.servers": "h:1",
                "assign": '{"a":[2]}',
                "startingOffsets": '{"a":{"0":1}}',
            },
            streaming=True,
        )


def test_client_and_fetch_settings():
    s = src(
        **{
            "kafka.isolation.level": "read_committed",
            "kafka.max.partition.fetch.bytes": "1000",
            "kafka.request.timeout.ms": "1234",
            "kafka.client.id": "me",
            "kafka.check.crcs": "false",
            "kafkaConsumer.pollTimeoutMs": "5000",
            "includeHeaders": "true",
            "minPartitions": "7",
            "maxRecordsPerPartition": "100",
            "kafka.group.id": "ignored",
            "groupIdPrefix": "ignored",
        }
    )
    assert s.isolation_level == READ_COMMITTED
    assert s.fetch.max_partition_fetch_bytes == 1000 and not s.fetch.check_crcs
    assert s.fetch.poll_timeout_ms == 5000
    assert s.client.request_timeout_ms == 1234 and s.client.client_id == "me"
    assert s.include_headers and s.min_partitions == 7 and s.max_records_per_partition == 100


def test_trigger_options():
    s = src(minOffsetsPerTrigger="10", maxTriggerDelay="30s", maxOffsetsPerTrigger="100")
    assert (s.min_offsets_per_trigger, s.max_trigger_delay_ms, s.max_offsets_per_trigger) == (
        10,
        30_000,
        100,
    )
    # Batch queries ignore trigger options, as Spark does.
    b = src(streaming=False, maxOffsetsPerTrigger="100")
    assert b.max_offsets_per_trigger is None


@pytest.mark.parametrize(
    ("text", "ms"),
    [("15m", 900_000), ("10s", 10_000), ("500ms", 500), ("250", 250), ("1h", 3_600_000)],
)
def test_durations(text, ms):
    assert parse_duration_ms(text) == ms


def test_offsets_json_is_sorted_as_text():
    offsets = {("b", 10): 1, ("b", 2): 2, ("a", 0): 3, ("b", 1): 4}
    as_json = offsets_to_json(offsets)
    assert list(as_json) == ["a", "b"]
    assert list(as_json["b"]) == ["1", "10", "2"]
    import json

    text = json.dumps(as_json)
    assert text == json.dumps(json.loads(text), sort_keys=True)
    assert offsets_from_json(text) == offsets


def test_bootstrap_parsing():
    assert parse_bootstrap_servers("a:1, b:2,[::1]:3") == (("a", 1), ("b", 2), ("::1", 3))
    for bad in ("", "a", "a:b", "a:0", "[::1"):
        with pytest.raises(ValueError):
            parse_bootstrap_servers(bad)


def test_sink_options():
    s = parse_sink_options({"kafka.bootstrap.servers": "h:1", "topic": "t"})
    assert s.topic == "t" and s.acks == -1 and s.idempotence and not s.idempotence_required
    s = parse_sink_options(
        {"kafka.bootstrap.servers": "h:1", "kafka.acks": "1", "kafka.compression.type": "zstd"}
    )
    assert s.acks == 1 and not s.idempotence and s.compression == 4 and s.topic is None
    with pytest.raises(OptionError, match=r"needs kafka\.acks=all"):
        parse_sink_options(
            {
                "kafka.bootstrap.servers": "h:1",
                "kafka.acks": "0",
                "kafka.enable.idempotence": "true",
            }
        )
    with pytest.raises(OptionError, match=r"compression\.type"):
        parse_sink_options({"kafka.bootstrap.servers": "h:1", "kafka.compression.type": "brotli"})
    with pytest.raises(OptionError, match=r"key\.serializer"):
        parse_sink_options({"kafka.bootstrap.servers": "h:1", "kafka.key.serializer": "x"})
    with pytest.raises(OptionError, match=r"kafka\.bootstrap\.servers"):
        parse_sink_options({"topic": "t"})
    with pytest.raises(OptionError, match="empty"):
        parse_sink_options({"kafka.bootstrap.servers": "h:1", "topic": " "})
