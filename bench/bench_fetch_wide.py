"""A wide Fetch over a real socket: what one sessionless Fetch naming every partition of a
10,000-partition topic costs the broker, split into user time, system time and page faults.

    python -m bench bench_fetch_wide [--partitions 10000] [--records 1000000] [--windows 5]

One standalone Odradek broker in its own process (a temp log dir), the topic filled as
bench_scale fills it (confluent-kafka, 100 B records in batches of 100, so one batch of about
10.7 KB per partition). Then a plain socket sends Fetch v12 frames naming every partition, with
``max_bytes`` 50 MiB and ``max_wait_ms`` 0, and reads each response whole:

* "data": every partition from offset 0 (read_committed and read_uncommitted): the response
  stops at 50 MiB, so about half the partitions return their batch, the rest nothing;
* "caught up": every partition at its log end: no records, only the per-partition work.

The broker's user and system CPU (``/proc/<pid>/stat``) and minor page faults are read around
``--windows`` windows of 4 fetches each; the best and the median window are printed per fetch.
This is bench_scale's 10,000-partition consume without the client: the same per-partition work,
with nothing else on the machine's two cores but the broker and this loop.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import struct
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_scale import worker  # noqa: E402
from protocol.headers import encode_request  # noqa: E402
from protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic  # noqa: E402
from tests.integration.broker_process import BrokerProcess  # noqa: E402

TOPIC = "wide"


def usage(pid: int) -> tuple[float, float, int]:
    """The process's user and system CPU seconds and minor page faults so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick, int(fields[7])


def fetch_frame(partitions: int, offset: int, isolation: int) -> bytes:
    request = FetchRequest(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=50 << 20,
        isolation_level=isolation,
        session_id=0,
        session_epoch=-1,
        topics=[
            FetchTopic(
                topic=TOPIC,
                partitions=[
                    FetchPartition(partition=p, fetch_offset=offset, partition_max_bytes=1 << 20)
                    for p in range(partitions)
                ],
            )
        ],
        forgotten_topics_data=[],
        rack_id="",
    )
    return encode_request(request, 12, 1, "bench")


def read_exactly(sock: socket.socket, n: int) -> None:
    buf = memoryview(bytearray(min(n, 1 << 20)))
    while n:
        got = sock.recv_into(buf, min(n, len(buf)))
        if not got:
            raise EOFError("the broker closed the connection")
        n -= got


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--partitions", type=int, default=10_000)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--windows", type=int, default=5)
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="bench-wide-"))
    broker = BrokerProcess(
        tmp / "data",
        {"num.partitions": "1", "socket.request.max.bytes": str(200 << 20)},
        log_path=tmp / "broker.log",
    )
    broker.start(timeout=900)
    try:
        worker("create", broker.bootstrap, TOPIC, args.partitions, 0, 100)
        produced = worker("produce", broker.bootstrap, TOPIC, args.partitions, args.records, 100)
        per_partition = produced["records"] // args.partitions
        host, port = broker.bootstrap.rsplit(":", 1)
        sock = socket.create_connection((host, int(port)))

        def call(frame: bytes) -> int:
            sock.sendall(frame)
            (size,) = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))
            read_exactly(sock, size)
            return size

        print(f"{args.partitions} partitions, {per_partition} records each; Fetch v12, 50 MiB")
        print(f"{'fetch':<26}{'MB':>6}{'CPU ms best':>12}{'median':>8}{'user':>7}{'sys':>7}"
              f"{'faults':>8}")  # fmt: skip
        for label, offset, isolation in (
            ("data, read_committed", 0, 1),
            ("data, read_uncommitted", 0, 0),
            ("caught up, read_committed", per_partition, 1),
        ):
            frame = fetch_frame(args.partitions, offset, isolation)
            for _ in range(2):
                size = call(frame)
            windows = []
            faults = 0
            for _ in range(args.windows):
                u0, s0, f0 = usage(broker.pid)
                for _ in range(4):
                    call(frame)
                u1, s1, f1 = usage(broker.pid)
                windows.append(((u1 - u0) / 4 * 1e3, (s1 - s0) / 4 * 1e3))
                faults += f1 - f0
            totals = sorted(u + s for u, s in windows)
            user, system = min(windows, key=lambda w: w[0] + w[1])
            print(
                f"{label:<26}{size / 1e6:>6.1f}{totals[0]:>12.1f}{statistics.median(totals):>8.1f}"
                f"{user:>7.1f}{system:>7.1f}{faults / 4 / args.windows:>8.0f}",
                flush=True,
            )
        sock.close()
    finally:
        broker.stop(timeout=900)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
