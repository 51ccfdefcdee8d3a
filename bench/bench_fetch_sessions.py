"""Fetch sessions (KIP-227): what a caught-up consumer of many partitions costs the broker per
Fetch, sessionless (every partition in every request and response) vs incremental (a session:
empty requests and responses), in one run.

    python -m bench bench_fetch_sessions [--partitions 1000] [--fetches 300] [--profile]

A real broker runs in this process (standalone, a temp log dir) with a topic of N partitions
holding a few records each; Fetch frames go through the broker's dispatcher and handler on the
main loop (no sockets, so the figures are the request's own work: decoding, the session, reading
every partition, the fetch purgatory, encoding). Each fetch is at the log end of every partition,
``max_wait_ms`` 0 (answered at once) and 5 (waits in the purgatory). CPU is the process's (every
thread) per fetch, the best of ``--repeats`` runs; request and response bytes are frame sizes.
``--profile`` prints cProfile's top functions of the incremental and the sessionless fetch.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from broker.config import BrokerConfig  # noqa: E402
from broker.dispatch import Dispatcher  # noqa: E402
from broker.metrics import RequestMetrics  # noqa: E402
from broker.net.session import Session  # noqa: E402
from broker.server import Broker  # noqa: E402
from protocol.headers import decode_response, encode_request  # noqa: E402
from protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic  # noqa: E402
from protocol.records.record import SimpleRecord, build_batch  # noqa: E402

TOPIC = "bench-sessions"
RECORDS_PER_PARTITION = 3


class Conn:
    """What the dispatcher needs of a connection."""

    def __init__(self) -> None:
        self.session = Session.accepted("PLAINTEXT", "PLAINTEXT", ("127.0.0.1", 1))
        self.request_metrics = RequestMetrics()
        #: when the connection last read (the dispatcher's request queue time starts there)
        self.read_ns = time.monotonic_ns()

    def mute(self, ms: int) -> None:
        pass


def fetch_frame(
    version: int,
    session_id: int,
    epoch: int,
    partitions: list[tuple[Any, int, int]],
    max_wait_ms: int,
    topic_id: uuid.UUID,
) -> bytes:
    by_topic: dict[Any, list[FetchPartition]] = {}
    for topic, index, offset in partitions:
        by_topic.setdefault(topic, []).append(
            FetchPartition(partition=index, fetch_offset=offset, partition_max_bytes=1 << 20)
        )
    request = FetchRequest(
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=1,
        max_bytes=50 << 20,
        isolation_level=0,
        session_id=session_id,
        session_epoch=epoch,
        topics=[
            FetchTopic(topic=t, topic_id=topic_id, partitions=ps) for t, ps in by_topic.items()
        ],
        forgotten_topics_data=[],
        rack_id="",
    )
    return encode_request(request, version, 1, "bench")


async def run(args: argparse.Namespace) -> None:
    data = Path(tempfile.mkdtemp(prefix="bench-sessions-"))
    config = BrokerConfig.from_dict(
        {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dir": str(data), "num.network.threads": "1"}
    )
    broker = Broker(config)
    await broker.start()
    try:
        assert broker.admin is not None and broker.replica_manager is not None
        meta = broker.admin.create_topic(TOPIC, args.partitions, 1)
        rm = broker.replica_manager
        deadline = time.monotonic() + 60
        while len(rm.partitions) < args.partitions and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        batch = build_batch([SimpleRecord(b"x" * 100) for _ in range(RECORDS_PER_PARTITION)])
        for p in range(args.partitions):
            rm.append_records(TOPIC, p, memoryview(bytearray(batch)), api_version=9, now_ms=0)
        dispatcher: Dispatcher = broker.processors[0].channel  # type: ignore[assignment]
        conn = Conn()
        version = 13
        at_end = [(TOPIC, p, RECORDS_PER_PARTITION) for p in range(args.partitions)]

        last: list[Any] = []

        async def handle(frame: bytes) -> None:
            """The broker's work for one request (what is timed)."""
            conn.read_ns = time.monotonic_ns()
            result = dispatcher.handle(conn, memoryview(frame)[4:])  # type: ignore[arg-type]
            if asyncio.iscoroutine(result):
                result = await result
            last[:] = result

        def decoded() -> tuple[int, Any]:
            """The last response's size and body (not timed)."""
            body = b"".join(bytes(p) if not hasattr(p, "read") else p.read() for p in last)
            return len(body), decode_response(1, version, body[4:])[1]

        async def send(frame: bytes) -> Any:
            await handle(frame)
            return decoded()[1]

        print(f"{args.partitions} partitions, caught-up consumer, Fetch v{version}\n")
        print(f"{'fetch':<36}{'request B':>10}{'response B':>11}{'CPU us/fetch':>14}")
        for wait in (0, 5):
            sessionless = fetch_frame(version, 0, -1, at_end, wait, meta.topic_id)
            first = await send(fetch_frame(version, 0, 0, at_end, wait, meta.topic_id))
            session_id = first.session_id
            epoch = 1
            rows = []
            labels = ["sessionless (full)"]
            if session_id > 0:
                labels.append("incremental (session)")
            else:
                print("  (this broker created no fetch session)")
            for label in labels:
                n = args.fetches if wait == 0 else max(args.fetches // 5, 20)
                best = float("inf")
                for _ in range(args.repeats):
                    frames = []
                    for _ in range(n):
                        if label.startswith("sessionless"):
                            frames.append(sessionless)
                        else:
                            frames.append(
                                fetch_frame(version, session_id, epoch, [], wait, meta.topic_id)
                            )
                            epoch += 1
                    c0 = time.process_time()
                    for frame in frames:
                        await handle(frame)
                    best = min(best, (time.process_time() - c0) / n * 1e6)
                    size, response = decoded()
                    assert response.error_code == 0, response.error_code
                rows.append((f"{label}, max_wait_ms={wait}", len(frames[0]), size, best))
            for label, req, resp, cpu in rows:
                print(f"{label:<36}{req:>10,}{resp:>11,}{cpu:>14,.0f}")
            if len(rows) == 2:
                print(f"  incremental / sessionless CPU: {rows[1][3] / rows[0][3]:.2f}x")
            if args.profile and session_id > 0:
                prof = cProfile.Profile()
                prof.enable()
                for _ in range(100):
                    frame = fetch_frame(version, session_id, epoch, [], wait, meta.topic_id)
                    epoch += 1
                    await send(frame)
                prof.disable()
                pstats.Stats(prof).sort_stats("tottime").print_stats(15)
                prof = cProfile.Profile()
                prof.enable()
                for _ in range(100):
                    await send(sessionless)
                prof.disable()
                pstats.Stats(prof).sort_stats("tottime").print_stats(15)
    finally:
        await broker.stop()
        shutil.rmtree(data, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--fetches", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5, help="the best of this many runs")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    print(
        "command: python -m bench bench_fetch_sessions "
        + " ".join(sys.argv[1:] if argv is None else argv)
    )
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
