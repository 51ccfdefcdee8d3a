"""Which request versions each client uses against Odradek: the data behind docs/clients.md.

    .venv/bin/python -m tests.clients.negotiated_versions [--json]

Starts the daemon behind the recording proxy (api_trace.py), runs a typical workload with every
client that is installed (produce, consume in a group with commits, admin: create, describe
configs, delete), and prints a Markdown table: one row per API, one column per client, the
versions seen (several when a client uses more than one). A client that is missing or fails is
reported on stderr and left out. Not a test: it asserts nothing.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from tests.clients import runners
from tests.clients.api_trace import ApiTrace
from tests.integration.broker_process import BrokerProcess

SETTINGS = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
}


def confluent(bootstrap: str, cid: str, topic: str) -> None:
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AdminClient,
        ConfigResource,
        NewTopic,
    )

    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": cid})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(15)
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    admin.describe_configs([res])[res].result(15)
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": cid,
            "compression.type": "zstd",
            "enable.idempotence": True,
        }
    )
    for i in range(20):
        producer.produce(topic, value=b"v%d" % i, partition=i % 2)
    assert producer.flush(30) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": cid,
            "group.id": cid,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    got = 0
    deadline = time.monotonic() + 30
    while got < 20 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            got += 1
            consumer.commit(message=msg, asynchronous=False)
    consumer.close()
    admin.delete_topics([topic])[topic].result(15)


def kcat(bootstrap: str, cid: str, topic: str) -> None:
    if shutil.which("kcat") is None:
        raise RuntimeError("kcat not installed")
    base = ["kcat", "-b", bootstrap, "-X", f"client.id={cid}"]
    lines = "".join(f"k{i}:v{i}\n" for i in range(20)).encode()
    subprocess.run([*base, "-P", "-t", topic, "-K", ":", "-z", "gzip"], input=lines, check=True)
    subprocess.run(
        [*base, "-C", "-t", topic, "-e", "-o", "beginning"],
        check=True,
        timeout=60,
        capture_output=True,
    )
    subprocess.run([*base, "-L"], check=True, capture_output=True, timeout=30)
    # a balanced consumer group: reads for a few seconds, commits, leaves
    subprocess.run(
        [*base, "-G", cid, "-X", "auto.offset.reset=earliest", "-e", topic],
        check=True,
        capture_output=True,
        timeout=60,
    )


def kafka_python(
    bootstrap: str, cid: str, topic: str, api_version: tuple[int, int] | None = None
) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic

    extra = {"api_version": api_version} if api_version else {}
    if api_version is None:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id=cid)
        admin.create_topics([NewTopic(topic, 2, 1)])
        admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    producer = KafkaProducer(
        bootstrap_servers=bootstrap, client_id=cid, compression_type="gzip", **extra
    )
    for i in range(20):
        producer.send(topic, key=b"k%d" % i, value=b"v%d" % i)
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        client_id=cid,
        group_id=None if api_version == (0, 9) else cid,
        auto_offset_reset="earliest",
        consumer_timeout_ms=5000,
        **extra,
    )
    got = list(consumer)
    assert len(got) == 20, len(got)
    if api_version != (0, 9):
        consumer.commit()
    consumer.close()
    if api_version is None:
        admin.delete_topics([topic])
        admin.close()


def aiokafka(bootstrap: str, cid: str, topic: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    async def run() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, client_id=cid)
        await admin.start()
        await admin.create_topics([NewTopic(topic, 2, 1)])
        await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            client_id=cid,
            compression_type="lz4",
            enable_idempotence=True,
        )
        await producer.start()
        for i in range(20):
            await producer.send(topic, value=b"v%d" % i, partition=i % 2)
        await producer.stop()
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            client_id=cid,
            group_id=cid,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        await consumer.start()
        got = 0
        while got < 20:
            batch = await consumer.getmany(timeout_ms=5000)
            if not batch:
                break
            got += sum(len(v) for v in batch.values())
        await consumer.commit()
        await consumer.stop()
        await admin.delete_topics([topic])
        await admin.close()

    asyncio.run(run())


def kafkajs(bootstrap: str, cid: str, topic: str) -> None:
    if runners.kafkajs_missing():
        raise RuntimeError(runners.kafkajs_missing())
    b = [bootstrap]
    runners.kafkajs("admin", brokers=b, topic=topic + "-admin", group=cid + "-a", clientId=cid)
    runners.kafkajs("produce", brokers=b, topic=topic, codec="gzip", count=20, clientId=cid)
    runners.kafkajs("produce", brokers=b, topic=topic, count=5, idempotent=True, clientId=cid)
    runners.kafkajs("consume", brokers=b, topic=topic, group=cid, count=25, clientId=cid)


def go_client(program: str, out: Path, version: str | None) -> Callable[[str, str, str], None]:
    def run(bootstrap: str, cid: str, topic: str) -> None:
        missing = runners.go_missing(program)
        if missing:
            raise RuntimeError(missing)
        binary = out / f"{program}-client"
        if not binary.exists():
            runners.build_go(program, out)
        args: dict[str, object] = {"brokers": [bootstrap], "clientId": cid, "topic": topic}
        if version is not None:
            args["version"] = version

        def call(command: str, **more: object) -> None:
            runners.run_json([str(binary), command], dict(args, **more))

        if program == "kafkago":
            call("admin", topic=topic + "-admin")
            call("produce", codec="snappy", count=20)
            call("read", partition=0, count=20)
            call("group", group=cid, count=20, sessionTimeoutMs=2000)
        elif version in ("", "0.10.2.0"):
            call("produce", codec="gzip", count=20)
            call("consume", count=20)
        else:
            call("admin", topic=topic + "-admin", group=cid, groupTopic=topic)
            call("produce", codec="lz4", count=20, idempotent=True)
            call("consume", count=20)
            call("group", group=cid, count=20)

    return run


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="odradek-versions-"))
    clients: dict[str, Callable[[str, str, str], None]] = {
        "confluent-kafka": confluent,
        "kcat": kcat,
        "kafka-python": kafka_python,
        "kafka-python (0,10)": lambda b, c, t: kafka_python(b, c, t, (0, 10)),
        "kafka-python (0,9)": lambda b, c, t: kafka_python(b, c, t, (0, 9)),
        "aiokafka": aiokafka,
        "KafkaJS": kafkajs,
        "sarama 2.1.0": go_client("sarama", work, "2.1.0"),
        "sarama 0.10.2": go_client("sarama", work, "0.10.2.0"),
        "sarama default": go_client("sarama", work, ""),
        "kafka-go": go_client("kafkago", work, None),
    }
    trace = ApiTrace().start()
    settings = dict(SETTINGS, **{"advertised.listeners": f"PLAINTEXT://127.0.0.1:{trace.port}"})
    broker = BrokerProcess(work / "data", settings).start()
    assert broker.port is not None
    trace.upstream = (broker.host, broker.port)
    bootstrap = f"127.0.0.1:{trace.port}"
    seen: dict[str, dict[str, list[int]]] = {}
    try:
        for i, (name, run) in enumerate(clients.items()):
            cid = f"client{i}"
            try:
                run(bootstrap, cid, f"versions-{i}")
            except Exception:
                print(f"{name}: failed\n{traceback.format_exc()}", file=sys.stderr)
            seen[name] = trace.versions(cid)
    finally:
        broker.stop()
        trace.stop()
    if "--json" in sys.argv:
        print(json.dumps(seen, indent=1))
        return 0
    apis = sorted({a for v in seen.values() for a in v}, key=_api_key)
    names = [n for n in clients if seen.get(n)]
    print("| API | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for api in apis:
        cells = [",".join(map(str, seen[n].get(api, []))) or "-" for n in names]
        print(f"| {api} | " + " | ".join(cells) + " |")
    return 0


def _api_key(name: str) -> int:
    from protocol.api_keys import ApiKey

    return ApiKey[name].value if name in ApiKey.__members__ else int(name)


if __name__ == "__main__":
    sys.exit(main())
