"""Unmodified Go and JavaScript clients against the daemon: KafkaJS 2.2.4 (npm), Sarama 1.22 and
kafka-go 0.2 (Debian's Go sources, built in GOPATH mode). Each client produces with every codec
it has, consumes in a consumer group that commits and resumes, and uses its admin API; what one
client writes, confluent-kafka reads back field by field (and the other way round). kcat gets
what tests/integration/test_clients.py leaves out: zstd and its balanced consumer group.

All client connections go through a recording proxy (tests/clients/api_trace.py; the broker
advertises the proxy's address), so each test also checks the request versions the client chose.
Nothing is installed here: a missing client skips with the reason (the set-up is
``scripts/install-system-deps.sh`` and ``make js-clients``).
"""

from __future__ import annotations

import shutil
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.clients import runners
from tests.clients.api_trace import ApiTrace
from tests.integration.broker_process import BrokerProcess
from tests.support import kafka_clients

#: Broker settings for quick groups; topics are created explicitly, so that deletes show.
SETTINGS = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    "auto.create.topics.enable": "false",
}
SETUP_CLIENT = "odradek-test-setup"


@dataclass
class Traced:
    broker: BrokerProcess
    trace: ApiTrace

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.trace.port}"

    @property
    def brokers(self) -> list[str]:
        return [self.bootstrap]


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Traced]:
    trace = ApiTrace().start()
    data = tmp_path_factory.mktemp("traced") / "data"
    settings = dict(SETTINGS, **{"advertised.listeners": f"PLAINTEXT://127.0.0.1:{trace.port}"})
    broker = BrokerProcess(data, settings).start()
    assert broker.port is not None
    trace.upstream = (broker.host, broker.port)
    yield Traced(broker, trace)
    broker.stop()
    trace.stop()


@pytest.fixture(scope="session")
def go_bin(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path | str]:
    """The Go client programs, built once per session; a string is the reason one is missing."""
    out = tmp_path_factory.mktemp("go-clients")
    built: dict[str, Path | str] = {}
    for program in ("sarama", "kafkago"):
        missing = runners.go_missing(program)
        built[program] = missing if missing else runners.build_go(program, out)
    return built


@pytest.fixture
def sarama(go_bin: dict[str, Path | str]) -> Path:
    if isinstance(go_bin["sarama"], str):
        pytest.skip(go_bin["sarama"])
    return go_bin["sarama"]


@pytest.fixture
def kafkago(go_bin: dict[str, Path | str]) -> Path:
    if isinstance(go_bin["kafkago"], str):
        pytest.skip(go_bin["kafkago"])
    return go_bin["kafkago"]


@pytest.fixture(scope="session")
def js_codecs() -> list[str]:
    missing = runners.kafkajs_missing()
    if missing:
        pytest.skip(missing)
    return list(runners.kafkajs("codecs")["codecs"])


def client_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


# -- confluent-kafka on the other side -------------------------------------------------------


def create_topic(t: Traced, name: str, partitions: int = 1) -> None:
    kafka_clients.create_topic(
        t.bootstrap, name, partitions, timeout=15, client={"client.id": SETUP_CLIENT}
    )


def consume_confluent(t: Traced, topic: str, partitions: int, expected: int) -> list[dict]:
    """Reads ``expected`` records from offset 0 of every partition; returns them as dicts in
    the shape the client programs print, ordered by partition then offset."""
    messages = kafka_clients.consume_from_start(
        t.bootstrap,
        topic,
        partitions,
        expected,
        group_id=f"{topic}-check",
        client={"client.id": SETUP_CLIENT},
    )
    got = [
        {
            "partition": msg.partition(),
            "offset": msg.offset(),
            "key": None if msg.key() is None else msg.key().decode(),
            "value": None if msg.value() is None else msg.value().decode(),
            "timestamp": msg.timestamp()[1],
            "headers": {k: v.decode() for k, v in (msg.headers() or [])},
        }
        for msg in messages
    ]
    assert len(got) == expected
    return sorted(got, key=lambda m: (m["partition"], m["offset"]))


def produce_confluent(t: Traced, topic: str, partitions: int, count: int, codec: str) -> list[dict]:
    producer = Producer(
        {
            "bootstrap.servers": t.bootstrap,
            "client.id": SETUP_CLIENT,
            "compression.type": codec,
            "linger.ms": 5,
        }
    )
    for i in range(count):
        producer.produce(
            topic,
            key=None if i % 5 == 0 else f"k{i}".encode(),
            value=f"v{i}-".encode() * (1 + i % 9),
            headers=[("n", str(i).encode())],
            timestamp=1_700_000_100_000 + i,
            partition=i % partitions,
        )
    assert producer.flush(30) == 0
    return consume_confluent(t, topic, partitions, count)


def committed(t: Traced, group: str, topic: str, partitions: int) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": t.bootstrap, "group.id": group})
    try:
        tps = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], 15)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in tps}


def by_partition(messages: list[dict]) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for m in sorted(messages, key=lambda m: (m["partition"], m["offset"])):
        out.setdefault(m["partition"], []).append(m)
    return out


def same_records(got: list[dict], want: list[dict], fields: tuple[str, ...]) -> None:
    """Same records per partition, in offset order, compared on ``fields``."""
    g, w = by_partition(got), by_partition(want)
    assert sorted(g) == sorted(w)
    for p in w:
        assert [tuple(m[f] for f in fields) for m in g[p]] == [
            tuple(m[f] for f in fields) for m in w[p]
        ], f"partition {p}"


def committed_prefix(t: Traced, run: dict, group: str, topic: str, parts: int) -> None:
    """A group member read a prefix of each partition and committed exactly that."""
    assert not run.get("timedOut") and not run.get("error"), run.get("error")
    read = by_partition(run["messages"])
    offsets = committed(t, group, topic, parts)
    for p in range(parts):
        got = [m["offset"] for m in read.get(p, [])]
        assert got == list(range(offsets[p] if offsets[p] >= 0 else 0)), (p, got, offsets)


def resumed(first: dict, second: dict, want: list[dict]) -> None:
    """The group's next member read exactly the records the first one had not committed."""
    assert not second.get("timedOut") and not second.get("error"), second.get("error")
    fields = ("partition", "offset", "key", "value", "timestamp")
    same_records(first["messages"] + second["messages"], want, fields)


# -- KafkaJS ---------------------------------------------------------------------------------

#: KafkaJS has gzip built in; the other codecs come from plugins, optional npm dependencies
#: (lz4 and zstd build native code at install time).
JS_PLUGINS = {
    "snappy": "kafkajs-snappy",
    "lz4": "kafkajs-lz4",
    "zstd": "@sensejs/kafkajs-zstd-support",
}


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_kafkajs_produces_every_codec(traced, topic_name, js_codecs, codec):
    """KafkaJS writes keys, null keys and values, headers and timestamps in batches to three
    partitions (several requests); confluent-kafka reads back exactly that."""
    if codec not in js_codecs:
        pytest.skip(f"no KafkaJS {codec} codec: {JS_PLUGINS[codec]} is not installed")
    create_topic(traced, topic_name, 3)
    cid = client_id("kafkajs-produce")
    out = runners.kafkajs(
        "produce",
        brokers=traced.brokers,
        topic=topic_name,
        codec=codec,
        count=90,
        partitions=3,
        clientId=cid,
    )
    got = consume_confluent(traced, topic_name, 3, 90)
    fields = ("partition", "key", "value", "timestamp", "headers")
    same_records(got, [dict(m, offset=i) for i, m in enumerate(out["sent"])], fields)
    for p, msgs in by_partition(got).items():
        assert [m["offset"] for m in msgs] == list(range(30)), p
    versions = traced.trace.versions(cid)
    assert versions["PRODUCE"] == [7] and versions["API_VERSIONS"] == [2]


@pytest.mark.parametrize("acks", [0, 1])
def test_kafkajs_acks(traced, topic_name, js_codecs, acks):
    create_topic(traced, topic_name)
    args = {"brokers": traced.brokers, "topic": topic_name, "acks": acks, "count": 30}
    runners.kafkajs("produce", codec="gzip", **args)
    assert len(consume_confluent(traced, topic_name, 1, 30)) == 30


def test_kafkajs_default_broker_auto_creates_topics(broker, topic_name, js_codecs):
    """Against the stock configuration (auto-create on, initial rebalance delay 3 s): a KafkaJS
    producer's Metadata v6 creates the topic, a KafkaJS group member reads it."""
    out = runners.kafkajs("produce", brokers=[broker.bootstrap], topic=topic_name, count=12)
    assert [o["baseOffset"] for o in out["offsets"]] == ["0", "4", "8"]
    got = runners.kafkajs(
        "consume", brokers=[broker.bootstrap], topic=topic_name, group=topic_name, count=12
    )
    assert [m["offset"] for m in got["messages"]] == list(range(12))
    assert [(m["key"], m["value"]) for m in got["messages"]] == [
        (m["key"], m["value"]) for m in out["sent"]
    ]


def test_kafkajs_idempotent_producer(traced, topic_name, js_codecs):
    create_topic(traced, topic_name, 2)
    cid = client_id("kafkajs-idempotent")
    out = runners.kafkajs(
        "produce",
        brokers=traced.brokers,
        topic=topic_name,
        codec="gzip",
        count=40,
        partitions=2,
        idempotent=True,
        clientId=cid,
    )
    got = consume_confluent(traced, topic_name, 2, 40)
    same_records(got, [dict(m, offset=0) for m in out["sent"]], ("partition", "key", "value"))
    versions = traced.trace.versions(cid)
    assert versions["INIT_PRODUCER_ID"] == [1] and versions["PRODUCE"] == [7]


@pytest.mark.parametrize("codec", ["gzip", "lz4", "zstd"])
def test_kafkajs_consumer_group_commits_and_resumes(traced, topic_name, js_codecs, codec):
    """confluent-kafka writes batches to two partitions; a KafkaJS group member reads 25 records
    and commits them; the group's next member resumes at the commits."""
    if codec not in js_codecs:
        pytest.skip(f"no KafkaJS {codec} codec: {JS_PLUGINS[codec]} is not installed")
    create_topic(traced, topic_name, 2)
    want = produce_confluent(traced, topic_name, 2, 40, codec)
    group = f"{topic_name}-g"
    cid = client_id("kafkajs-group")
    args = {"brokers": traced.brokers, "topic": topic_name, "group": group, "clientId": cid}
    first = runners.kafkajs("consume", count=25, **args)
    assert len(first["messages"]) == 25
    assert sorted(p for p in first["assigned"]) == [0, 1]
    committed_prefix(traced, first, group, topic_name, 2)
    second = runners.kafkajs("consume", count=15, **args)
    resumed(first, second, want)
    headers = {m["offset"]: m["headers"] for m in first["messages"] if m["partition"] == 0}
    assert headers[0] == {"n": "0"}
    versions = traced.trace.versions(cid)
    assert versions["FETCH"] == [11] and versions["JOIN_GROUP"] == [5]
    assert versions["OFFSET_COMMIT"] and versions["OFFSET_FETCH"]


def test_kafkajs_admin(traced, topic_name, js_codecs):
    """Create (with configs; again: already exists), list, metadata, describe cluster,
    describe/alter configs, create partitions, delete records, offsets, set/fetch group
    offsets, list/describe/delete groups, delete topic."""
    group = f"{topic_name}-g"
    out = runners.kafkajs(
        "admin", brokers=traced.brokers, topic=topic_name, group=group, clientId="kafkajs-admin"
    )
    assert out["created"] is True and out["createdAgain"] is False
    assert out["listed"] is True and out["partitions"] == [0, 1]
    assert out["cluster"]["brokers"][0]["port"] == traced.trace.port
    assert out["cluster"]["controller"] == out["cluster"]["brokers"][0]["nodeId"]
    assert out["describedBefore"]["configs"]["retention.ms"] == "3600000"
    assert out["describedAfter"]["configs"]["retention.ms"] == "7200000"
    assert out["describedAfter"]["configs"]["cleanup.policy"] == "compact,delete"
    assert out["brokerConfigCount"] > 20
    assert out["partitionsAfter"] == [0, 1, 2]
    p0 = out["offsets"][0]
    assert (p0["partition"], p0["low"], p0["high"]) == (0, "4", "10")
    assert out["offsetsByTime"][0] == {"partition": 0, "offset": "4"}
    assert out["groupOffsets"][0]["partitions"][0]["offset"] == "6"
    assert group in out["groups"]
    assert out["describedGroups"] == [{"groupId": group, "state": "Empty", "errorCode": 0}]
    assert out["deletedGroups"] == [{"groupId": group, "errorCode": 0}]
    assert out["listedAfterDelete"] is False
    versions = traced.trace.versions("kafkajs-admin")
    assert versions["CREATE_TOPICS"] == [3] and versions["DESCRIBE_CONFIGS"] == [2]


# -- Sarama ----------------------------------------------------------------------------------

#: (Kafka version Sarama is told, codecs it may use, Produce and Fetch versions it then sends).
#: "" is Sarama's default, 0.8.2: magic-0 message sets; 0.10.2: magic 1; 2.1.0: record batches.
#: Not zstd: Sarama 1.22 sends zstd batches with Produce v3, which Kafka refuses (zstd needs
#: Produce v7 and Fetch v10, KIP-110); see docs/clients.md.
SARAMA_MATRIX = [
    ("", ["none", "gzip", "snappy"], 0, 0),
    ("0.10.2.0", ["none", "gzip", "snappy", "lz4"], 2, 3),
    ("2.1.0", ["none", "gzip", "snappy", "lz4"], 3, 4),
]


@pytest.mark.parametrize(
    ("version", "codec", "produce_v", "fetch_v"),
    [(v, c, pv, fv) for v, codecs, pv, fv in SARAMA_MATRIX for c in codecs],
    ids=[f"{v or 'default'}-{c}" for v, codecs, _, _ in SARAMA_MATRIX for c in codecs],
)
def test_sarama_produce_consume(traced, topic_name, sarama, version, codec, produce_v, fetch_v):
    """Sarama's sync producer writes to two partitions, its partition consumers read back at
    the same protocol version (down-converted for old versions), and confluent-kafka reads the
    converted batches."""
    create_topic(traced, topic_name, 2)
    cid = client_id("sarama")
    args = {"brokers": traced.brokers, "topic": topic_name, "version": version, "clientId": cid}
    sent = runners.run_json(
        [str(sarama), "produce"], dict(args, codec=codec, count=60, partitions=2)
    )["sent"]
    read = runners.run_json([str(sarama), "consume"], dict(args, count=60, partitions=2))
    assert not read.get("timedOut")
    got = consume_confluent(traced, topic_name, 2, 60)
    fields = ["partition", "offset", "key", "value", "headers"]
    if version:  # magic 1 and 2 carry timestamps; magic 0 has none
        fields.append("timestamp")
    else:
        assert {m["timestamp"] for m in got} == {-1}
    same_records(read["messages"], sent, tuple(fields))
    same_records(got, sent, tuple(fields))
    versions = traced.trace.versions(cid)
    assert versions["PRODUCE"] == [produce_v] and versions["FETCH"] == [fetch_v]


def test_sarama_zstd_needs_kafka_2_1(traced, topic_name, sarama):
    """zstd in a magic-1 message set (Sarama told 0.10.2) is refused, as Kafka does."""
    create_topic(traced, topic_name)
    args = {"brokers": traced.brokers, "topic": topic_name, "version": "0.10.2.0"}
    with pytest.raises(runners.ClientFailed, match="compression type"):
        runners.run_json([str(sarama), "produce"], dict(args, codec="zstd", count=3))


@pytest.mark.parametrize("codec", ["gzip", "lz4"])
def test_sarama_legacy_consumer_reads_modern_batches(traced, topic_name, sarama, codec):
    """confluent-kafka's v2 batches (with headers), read by Sarama at 0.8.2 (Fetch v0, magic 0)
    and 0.10.2 (Fetch v3, magic 1): the broker down-converts them."""
    create_topic(traced, topic_name, 2)
    want = produce_confluent(traced, topic_name, 2, 30, codec)
    for version in ["", "0.10.2.0"] if codec == "gzip" else ["0.10.2.0"]:
        args = {"brokers": traced.brokers, "topic": topic_name, "version": version}
        read = runners.run_json([str(sarama), "consume"], dict(args, count=30, partitions=2))
        assert not read.get("timedOut"), version
        fields = ("partition", "offset", "key", "value") + (("timestamp",) if version else ())
        same_records(read["messages"], want, fields)


@pytest.mark.parametrize("version", ["0.10.2.0", "2.1.0"])
def test_sarama_consumer_group_commits_and_resumes(traced, topic_name, sarama, version):
    create_topic(traced, topic_name, 3)
    want = produce_confluent(traced, topic_name, 3, 45, "snappy")
    group = f"{topic_name}-g"
    cid = client_id("sarama-group")
    args = {
        "brokers": traced.brokers,
        "topic": topic_name,
        "group": group,
        "version": version,
        "clientId": cid,
    }
    first = runners.run_json([str(sarama), "group"], dict(args, count=20))
    assert first["claims"] == {topic_name: [0, 1, 2]}
    committed_prefix(traced, first, group, topic_name, 3)
    second = runners.run_json([str(sarama), "group"], dict(args, count=25))
    resumed(first, second, want)
    versions = traced.trace.versions(cid)
    assert versions["JOIN_GROUP"] == [1] and versions["OFFSET_COMMIT"]
    assert versions["LEAVE_GROUP"] == [0]


def test_sarama_idempotent_producer(traced, topic_name, sarama):
    create_topic(traced, topic_name, 2)
    cid = client_id("sarama-idempotent")
    args = {"brokers": traced.brokers, "topic": topic_name, "version": "2.1.0", "clientId": cid}
    sent = runners.run_json(
        [str(sarama), "produce"], dict(args, codec="lz4", count=50, partitions=2, idempotent=True)
    )["sent"]
    got = consume_confluent(traced, topic_name, 2, 50)
    same_records(got, sent, ("partition", "offset", "key", "value", "timestamp", "headers"))
    versions = traced.trace.versions(cid)
    assert versions["INIT_PRODUCER_ID"] == [0] and versions["PRODUCE"] == [3]


def test_sarama_admin(traced, topic_name, sarama):
    """ClusterAdmin: create (with a config; again: already exists), list, describe topics and
    cluster, describe/alter configs, create partitions, delete records, groups, delete topic."""
    create_topic(traced, topic_name + "-g")
    produce_confluent(traced, topic_name + "-g", 1, 5, "none")
    group = f"{topic_name}-g"
    args = {"brokers": traced.brokers, "topic": topic_name + "-g", "group": group}
    args.update(version="2.1.0", count=5)
    runners.run_json([str(sarama), "group"], args)
    out = runners.run_json(
        [str(sarama), "admin"],
        {
            "brokers": traced.brokers,
            "topic": topic_name,
            "version": "2.1.0",
            "group": group,
            "groupTopic": topic_name + "-g",
            "clientId": "sarama-admin",
        },
    )
    assert "already exists" in out["createAgainError"]
    assert out["listed"] is True and out["listedPartitions"] == 2
    assert out["partitions"] == [0, 1] and out["brokers"] == 1
    assert out["retentionBefore"] == "3600000" and out["retentionAfter"] == "7200000"
    assert out["configCount"] > 20
    # Sarama 1.22 numbers the broker config resource 5 (ACL numbering); Kafka wants 4.
    assert out["brokerConfigError"] != "<nil>"
    assert out["partitionsAfter"] == 3
    assert (out["oldest"], out["newest"]) == (4, 10)
    assert out["groupListed"] is True and out["groupState"] == "Empty"
    assert out["groupOffsets"] == {f"{topic_name}-g/0": 5}
    assert out["listedAfterDelete"] is False


# -- kafka-go --------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
def test_kafkago_writer_every_codec(traced, topic_name, kafkago, codec):
    """kafka-go's Writer spreads magic-1 message sets over three partitions (Produce v2); its
    partition Readers (Fetch v2) and confluent-kafka read them back."""
    create_topic(traced, topic_name, 3)
    cid = client_id("kafkago")
    args = {"brokers": traced.brokers, "topic": topic_name, "clientId": cid}
    sent = runners.run_json([str(kafkago), "produce"], dict(args, codec=codec, count=60))["sent"]
    got = consume_confluent(traced, topic_name, 3, 60)
    key = ("key", "value", "timestamp")
    assert sorted(tuple(str(m[f]) for f in key) for m in got) == sorted(
        tuple(str(m[f]) for f in key) for m in sent
    )
    for p, msgs in by_partition(got).items():
        assert [m["offset"] for m in msgs] == list(range(len(msgs)))
        read = runners.run_json(
            [str(kafkago), "read"], dict(args, partition=p, count=len(msgs), timeoutMs=20000)
        )
        assert not read.get("error"), read.get("error")
        same_records(read["messages"], msgs, ("partition", "offset", *key))
    versions = traced.trace.versions(cid)
    assert versions["PRODUCE"] == [2] and versions["FETCH"] == [2]
    assert "API_VERSIONS" not in versions


def test_kafkago_reads_modern_batches(traced, topic_name, kafkago):
    """confluent-kafka's v2 batches (lz4, headers) down-converted to magic 1 for Fetch v2."""
    create_topic(traced, topic_name, 1)
    want = produce_confluent(traced, topic_name, 1, 40, "lz4")
    args = {"brokers": traced.brokers, "topic": topic_name, "partition": 0, "count": 40}
    read = runners.run_json([str(kafkago), "read"], dict(args, timeoutMs=20000))
    assert not read.get("error"), read.get("error")
    same_records(read["messages"], want, ("partition", "offset", "key", "value", "timestamp"))


def test_kafkago_consumer_group_commits_and_resumes(traced, topic_name, kafkago):
    create_topic(traced, topic_name, 2)
    want = produce_confluent(traced, topic_name, 2, 30, "gzip")
    group = f"{topic_name}-g"
    cid = client_id("kafkago-group")
    args = {
        "brokers": traced.brokers,
        "topic": topic_name,
        "group": group,
        "clientId": cid,
        # kafka-go 0.2 sends no LeaveGroup: the second member waits out the first's session
        "sessionTimeoutMs": 2000,
    }
    first = runners.run_json([str(kafkago), "group"], dict(args, count=12))
    committed_prefix(traced, first, group, topic_name, 2)
    second = runners.run_json([str(kafkago), "group"], dict(args, count=18))
    resumed(first, second, want)
    versions = traced.trace.versions(cid)
    assert versions["JOIN_GROUP"] == [1] and versions["OFFSET_COMMIT"] == [2]
    assert "LEAVE_GROUP" not in versions


def test_kafkago_admin(traced, topic_name, kafkago):
    out = runners.run_json(
        [str(kafkago), "admin"],
        {"brokers": traced.brokers, "topic": topic_name, "clientId": "kafkago-admin"},
    )
    assert out["partitions"] == [0, 1, 2]
    assert out["createAgainError"] == "<nil>"  # kafka-go treats TOPIC_ALREADY_EXISTS as success
    # kafka-go reports a deleted topic (UNKNOWN_TOPIC_OR_PARTITION) as one without partitions
    assert out["partitionsAfterDelete"] == 0
    versions = traced.trace.versions("kafkago-admin")
    assert versions["CREATE_TOPICS"] == [0] and versions["DELETE_TOPICS"] == [1]


# -- kcat (librdkafka 2.0.2): what test_clients.py does not cover ----------------------------


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat not installed (system-deps)")
def test_kcat_zstd_and_balanced_group_commits_and_resumes(traced, topic_name):
    """kcat writes zstd batches; its balanced consumer (-G) reads them to the end, commits and
    leaves; the next run of the group reads only what was produced after."""
    create_topic(traced, topic_name, 2)
    cid = client_id("kcat")
    base = ["kcat", "-b", traced.bootstrap, "-X", f"client.id={cid}"]

    def produce(first: int, last: int) -> None:
        lines = "".join(f"k{i}:v{i}\n" for i in range(first, last)).encode()
        subprocess.run(
            [*base, "-P", "-t", topic_name, "-K", ":", "-z", "zstd"],
            input=lines,
            check=True,
            timeout=60,
        )

    def consume() -> list[str]:
        group = ["-G", f"{topic_name}-g", "-X", "auto.offset.reset=earliest"]
        out = subprocess.run(
            [*base, *group, "-e", "-f", "%k=%s\n", topic_name],
            capture_output=True,
            check=True,
            timeout=60,
        )
        return out.stdout.decode().splitlines()

    produce(0, 40)
    assert sorted(consume()) == sorted(f"k{i}=v{i}" for i in range(40))
    produce(40, 50)
    assert sorted(consume()) == sorted(f"k{i}=v{i}" for i in range(40, 50))
    versions = traced.trace.versions(cid)
    assert versions["PRODUCE"] == [7] and versions["JOIN_GROUP"] == [5]
