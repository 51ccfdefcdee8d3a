"""Captures golden request frames from real clients (run by hand; the frames are committed).

    .venv/bin/python -m tests.golden.capture

Starts the broker behind a recording TCP proxy (the broker advertises the proxy's address, so
every connection goes through it), runs a fixed scenario with each client — create a topic,
produce two keyed records with a header, consume them in a consumer group and commit — and saves
the first request of each (API, version) per client under tests/golden/frames/<client>/.
tests/unit/protocol/test_golden_frames.py decodes every frame and checks the values the scenario
put in (topic, group, keys, values, headers).
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from protocol.api_keys import ApiKey
from tests.integration.broker_process import BrokerProcess

FRAMES = Path(__file__).parent / "frames"
TOPIC = "golden-{client}"
GROUP = "golden-group-{client}"
RECORDS = [(b"key-1", b"hello-golden-1"), (b"key-2", b"hello-golden-2")]
HEADER = ("golden-header", b"golden-value")


class RecordingProxy:
    """Forwards 127.0.0.1:port to the broker and records every request frame sent by clients."""

    def __init__(self) -> None:
        #: where connections are forwarded; set once the broker is up (read at accept time)
        self.target: tuple[str, int] | None = None
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.frames: list[bytes] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            assert self.target is not None, "proxy target not set"
            upstream = socket.create_connection(self.target)
            threading.Thread(target=self._requests, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client), daemon=True).start()

    def _requests(self, src: socket.socket, dst: socket.socket) -> None:
        buf = b""
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
                buf += data
                while len(buf) >= 4:
                    (size,) = struct.unpack(">i", buf[:4])
                    if len(buf) < 4 + size:
                        break
                    with self.lock:
                        self.frames.append(buf[4 : 4 + size])
                    buf = buf[4 + size :]
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass

    def take(self) -> list[bytes]:
        with self.lock:
            frames, self.frames = self.frames, []
        return frames


def run_confluent(bootstrap: str, client: str) -> None:
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic, group = TOPIC.format(client=client), GROUP.format(client=client)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)
    producer = Producer({"bootstrap.servers": bootstrap})
    for key, value in RECORDS:
        producer.produce(topic, value, key, headers=[HEADER])
    producer.flush(10)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    got = 0
    deadline = time.monotonic() + 30
    while got < len(RECORDS) and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            got += 1
            consumer.commit(msg, asynchronous=False)
    consumer.list_topics(timeout=5)
    consumer.close()


def run_kafka_python(bootstrap: str, client: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    topic, group = TOPIC.format(client=client), GROUP.format(client=client)
    KafkaAdminClient(bootstrap_servers=bootstrap).create_topics([NewTopic(topic, 1, 1)])
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for key, value in RECORDS:
        producer.send(topic, value=value, key=key, headers=[HEADER])
    producer.flush(10)
    producer.close()
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=10000,
    )
    for _ in zip(range(len(RECORDS)), consumer, strict=False):
        consumer.commit()
    consumer.close()


def run_aiokafka(bootstrap: str, client: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    topic, group = TOPIC.format(client=client), GROUP.format(client=client)

    async def run() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        await admin.create_topics([NewTopic(topic, 1, 1)])
        await admin.close()
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
        await producer.start()
        for key, value in RECORDS:
            await producer.send_and_wait(topic, value, key=key, headers=[HEADER])
        await producer.stop()
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        await consumer.start()
        got = 0
        while got < len(RECORDS):
            batch = await consumer.getmany(timeout_ms=10000)
            if not batch:
                break
            got += sum(len(v) for v in batch.values())
            await consumer.commit()
        await consumer.stop()

    asyncio.run(run())


def run_kcat(bootstrap: str, client: str) -> None:
    topic, group = TOPIC.format(client=client), GROUP.format(client=client)
    lines = "".join(f"{k.decode()}:{v.decode()}\n" for k, v in RECORDS)
    subprocess.run(
        [
            "kcat",
            "-b",
            bootstrap,
            "-P",
            "-t",
            topic,
            "-K",
            ":",
            "-H",
            f"{HEADER[0]}={HEADER[1].decode()}",
        ],
        input=lines.encode(),
        check=True,
        timeout=60,
    )
    subprocess.run(
        ["kcat", "-b", bootstrap, "-C", "-t", topic, "-e", "-o", "beginning"],
        capture_output=True,
        check=True,
        timeout=60,
    )
    subprocess.run(
        [
            "kcat",
            "-b",
            bootstrap,
            "-G",
            group,
            "-e",
            "-o",
            "beginning",
            topic,
            "-X",
            "enable.auto.commit=true",
            "-X",
            "auto.commit.interval.ms=100",
        ],
        capture_output=True,
        timeout=60,
        check=False,
    )


CLIENTS = {
    "confluent-kafka": run_confluent,
    "kafka-python": run_kafka_python,
    "aiokafka": run_aiokafka,
    "kcat": run_kcat,
}


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="odradek-golden-"))
    proxy = RecordingProxy()
    broker = BrokerProcess(
        tmp / "data",
        {
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy.port}",
            "group.initial.rebalance.delay.ms": "0",
        },
    )
    broker.start()
    proxy.target = ("127.0.0.1", broker.port or 0)
    bootstrap = f"127.0.0.1:{proxy.port}"
    try:
        for client, scenario in CLIENTS.items():
            scenario(bootstrap, client)
            time.sleep(0.5)
            out = FRAMES / client
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir(parents=True)
            seen: set[tuple[int, int]] = set()
            for frame in proxy.take():
                api_key, version = struct.unpack(">hh", frame[:4])
                if (api_key, version) in seen:
                    continue
                seen.add((api_key, version))
                name = (
                    ApiKey(api_key).name.lower()
                    if api_key in ApiKey._value2member_map_
                    else str(api_key)
                )
                (out / f"{name}-v{version}.bin").write_bytes(frame)
            print(f"{client}: {sorted(f.name for f in out.iterdir())}")
    finally:
        broker.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
