"""A wire fuzzer for a running broker: mutations of valid requests for every API key and version
the broker advertises, random bytes, truncations and size prefixes.

Seeds are valid requests built from our schemas with random (but mostly plausible) values:
topic names from a small set the fuzzer creates, small partition numbers, short timeouts.
Each is encoded with the real codecs, then mutated (bit flips, interesting integers written over
fields, bytes inserted or deleted, the body truncated, the API key or version changed) with the
size prefix kept consistent, so every frame is complete. Frames are sent pipelined on a
connection, followed by a sentinel ApiVersions; the broker must answer every frame in order or
close the connection. A connection that stays open without answering is a *hang*, unless the
request at the head of its queue is one that may legitimately wait (a fetch long poll, a join,
a produce waiting for its replicas). Other connections send what is not a frame at all: random
bytes, negative or huge size prefixes, a frame cut short.

``run(bootstrap, frames=..., seed=...)`` returns a :class:`Report`; the suite's fuzz test runs
50,000 frames, ``make fuzz`` a million (``python -m tests.support.fuzzing --frames N``, which
starts its own broker unless ``--bootstrap`` names one). The command prints the counts and
every problem, and exits with 1 on a hang, a frame skipped without an answer, a failed connect,
a traceback in its broker's log or a dead broker.
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import struct
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from protocol.api_keys import ApiKey
from protocol.headers import decode_response, encode_request
from protocol.messages import SCHEMAS
from protocol.records.record import RecordBatchBuilder
from protocol.schema import (
    BOOL,
    BYTES,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    RECORDS,
    STRING,
    UINT16,
    UINT32,
    UUID,
    ArrayOf,
    Field,
    Struct,
)
from tests.support.raw_client import api_versions

#: Topics the fuzzer creates before it starts, so seeds name partitions that exist.
TOPICS = ("fuzz-a", "fuzz-b")
GROUPS = ("fuzz-group", "fuzz-other")
#: APIs whose answer may legitimately wait (long polls, rebalances, replication).
MAY_WAIT = {ApiKey.FETCH, ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.PRODUCE}
SENTINEL_ID = 0x7FFFFFF0
INTERESTING_INT32 = (0, -1, 1, -2, 2**31 - 1, -(2**31), 2**30, 2**16, 2**24, 255, 256, -5)

_TIME_FIELDS = (
    "timeout_ms",
    "max_wait_ms",
    "session_timeout_ms",
    "rebalance_timeout_ms",
    "transaction_timeout_ms",
)


class _Values:
    """Random values for the fields of a request, plausible more often than not."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def string(self, name: str) -> str:
        r = self.rng
        lowered = name.lower()
        if "topic" in lowered or lowered == "name":
            return r.choice((*TOPICS, *TOPICS, "__consumer_offsets", "fuzz-" + str(r.randrange(9))))
        if "group" in lowered:
            return r.choice(GROUPS)
        if "member" in lowered:
            return r.choice(("", "", "member-" + uuid.UUID(int=r.getrandbits(128)).hex[:8]))
        if "protocol_type" in lowered:
            return "consumer"
        return r.choice(("", "x", "fuzz", "\u00e9t\u00e9", "a" * r.randrange(40)))

    def integer(self, fl: Field, lo: int, hi: int) -> int:
        r = self.rng
        name = fl.name.lower()
        if any(name.endswith(t) for t in _TIME_FIELDS):
            return r.choice((0, 10, 100))
        if "partition" in name or name in ("index", "replica_id", "leader_epoch", "broker_id"):
            return r.choice((0, 0, 1, -1, 3))
        if "offset" in name:
            return r.choice((0, 1, -1, -2, 5, 10**6))
        if "acks" in name:
            return r.choice((1, 1, 0))
        if "bytes" in name:
            return r.choice((0, 1, 1 << 20, 50 << 20))
        if "count" in name:
            return r.choice((1, 2, 3))
        if r.random() < 0.2:
            return max(lo, min(hi, r.choice(INTERESTING_INT32)))
        return r.randint(max(lo, -3), min(hi, 100))

    def records(self) -> bytes | None:
        r = self.rng
        if r.random() < 0.1:
            return None
        builder = RecordBatchBuilder()
        for i in range(r.randint(1, 4)):
            builder.append(
                os.urandom(r.randrange(30)), key=b"k%d" % i, timestamp=int(time.time() * 1000)
            )
        return bytes(builder.build())

    def value(self, fl: Field, t: Any, version: int, depth: int) -> Any:
        r = self.rng
        if fl.is_nullable(version) and r.random() < 0.05:
            return None
        if isinstance(t, ArrayOf):
            n = r.choice((0, 1, 1, 2)) if depth < 3 else r.choice((0, 1))
            return [self.value(fl, t.element, version, depth + 1) for _ in range(n)]
        if isinstance(t, type) and issubclass(t, Struct):
            return self.struct(t, version, depth + 1)
        if t is BOOL:
            return r.random() < 0.5
        if t in (INT8, INT16, INT32, INT64, UINT16, UINT32):
            bits = {INT8: 7, INT16: 15, INT32: 31, INT64: 63}.get(t)
            if bits is not None:
                return self.integer(fl, -(2**bits), 2**bits - 1)
            return r.randint(0, 100)
        if t is FLOAT64:
            return r.random()
        if t is UUID:
            return uuid.UUID(int=r.getrandbits(128)) if r.random() < 0.3 else uuid.UUID(int=0)
        if t is STRING:
            return self.string(fl.name)
        if t is BYTES:
            return os.urandom(r.randrange(16))
        if t is RECORDS:
            return self.records()
        raise AssertionError(f"no value for {t!r}")

    def struct(self, cls: type[Struct], version: int, depth: int = 0) -> Any:
        kwargs = {}
        for fl in cls.__fields__:
            if version in fl.versions:
                kwargs[fl.name] = self.value(fl, fl.type, version, depth)
        return cls(**kwargs)


def seeds(advertised: list[tuple[int, int, int]], rng: random.Random) -> list[tuple[int, bytes]]:
    """Valid request frames, several per advertised (api key, version)."""
    values = _Values(rng)
    out = []
    for api_key, lo, hi in advertised:
        schema = SCHEMAS.get(api_key)
        if schema is None:
            continue
        for version in range(lo, hi + 1):
            for _ in range(4):
                try:
                    body = values.struct(schema.request, version)
                    out.append((api_key, encode_request(body, version, 0)))
                except Exception:
                    continue
    return out


def mutate(frame: bytes, rng: random.Random) -> bytes:
    """A mutation of a whole frame (size prefix included), with the prefix made consistent."""
    body = bytearray(frame[4:])
    kind = rng.randrange(9)
    if kind == 0 and body:  # bit flips
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(body))
            body[i] ^= 1 << rng.randrange(8)
    elif kind == 1 and len(body) > 4:  # an interesting int32 over 4 bytes
        i = rng.randrange(len(body) - 3)
        struct.pack_into(">i", body, i, rng.choice(INTERESTING_INT32))
    elif kind == 2 and len(body) > 2:  # an interesting int16 (a length or a count)
        i = rng.randrange(len(body) - 1)
        struct.pack_into(">h", body, i, rng.choice((0, -1, 1, 0x7FFF, -2, 0x100)))
    elif kind == 3:  # random bytes inserted
        i = rng.randrange(len(body) + 1)
        body[i:i] = os.urandom(rng.randint(1, 8))
    elif kind == 4 and body:  # bytes deleted
        i = rng.randrange(len(body))
        del body[i : i + rng.randint(1, 8)]
    elif kind == 5 and body:  # truncated
        del body[rng.randrange(len(body)) :]
    elif kind == 6 and len(body) >= 4:  # another version of the API, or another API
        if rng.random() < 0.5:
            struct.pack_into(">h", body, 2, rng.choice((-1, 0, 1, 7, 13, 99, 0x7FFF)))
        else:
            struct.pack_into(">h", body, 0, rng.choice((-1, 42, 67, 100, 1000, rng.randrange(80))))
    elif kind == 7 and body:  # a byte set to a varint / length edge
        i = rng.randrange(len(body))
        body[i] = rng.choice((0x00, 0x01, 0x7F, 0x80, 0xFF, 0xFE))
    elif kind == 8 and body:  # a chunk duplicated
        i = rng.randrange(len(body))
        j = min(len(body), i + rng.randint(1, 32))
        body[j:j] = body[i:j]
    return struct.pack(">i", len(body)) + bytes(body)


def _with_correlation(frame: bytes, correlation_id: int) -> bytes:
    if len(frame) < 12:
        return frame
    return frame[:8] + struct.pack(">i", correlation_id) + frame[12:]


@dataclass
class Report:
    frames_sent: int = 0
    frames_answered: int = 0
    connections: int = 0
    closed_by_broker: int = 0
    allowed_waits: int = 0
    raw_connections: int = 0
    hangs: list[str] = field(default_factory=list)
    unanswered: list[str] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0

    def merge(self, other: Report) -> None:
        for name in (
            "frames_sent",
            "frames_answered",
            "connections",
            "closed_by_broker",
            "allowed_waits",
            "raw_connections",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.hangs += other.hangs
        self.unanswered += other.unanswered
        self.errors.update(other.errors)

    def summary(self) -> str:
        return (
            f"{self.frames_sent} frames on {self.connections} connections in "
            f"{self.seconds:.1f} s: {self.frames_answered} answered, {self.closed_by_broker} "
            f"connections closed by the broker, {self.allowed_waits} long waits of APIs that may "
            f"wait, {self.raw_connections} raw-byte connections, {len(self.hangs)} hangs, "
            f"{len(self.unanswered)} frames skipped without an answer, "
            f"{sum(self.errors.values())} failed connects"
        )

    def problems(self) -> list[str]:
        """What fails a run, one line each (at most 20 of each kind): hangs, frames skipped
        without an answer, connects that failed (with their count)."""
        return (
            [f"hang: {h}" for h in self.hangs[:20]]
            + [f"unanswered: {u}" for u in self.unanswered[:20]]
            + [f"failed connect ({n}x): {e}" for e, n in self.errors.most_common(20)]
        )


def _connect(host: str, port: int) -> socket.socket:
    sock = socket.create_connection((host, port), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    return sock


def _frames_in(buffer: bytearray) -> Iterator[bytes]:
    while len(buffer) >= 4:
        (size,) = struct.unpack_from(">i", buffer, 0)
        if len(buffer) < 4 + size:
            return
        frame = bytes(buffer[4 : 4 + size])
        del buffer[: 4 + size]
        yield frame


def _batch(
    host: str, port: int, frames: list[tuple[int, bytes]], report: Report, wait_s: float
) -> None:
    """One connection: ``frames`` pipelined, then the sentinel; checks every answer."""
    report.connections += 1
    sock = _connect(host, port)
    sent_keys: dict[int, int] = {}
    try:
        payload = bytearray()
        for i, (_, frame) in enumerate(frames):
            frame = _with_correlation(frame, i)
            key = struct.unpack_from(">h", frame, 4)[0] if len(frame) >= 6 else -1
            sent_keys[i] = key
            payload += frame
        payload += encode_request(api_versions(), 0, SENTINEL_ID)
        try:
            sock.sendall(payload)
        except OSError:
            pass  # closed while we were sending: what was answered is read below
        report.frames_sent += len(frames)
        answered: list[int] = []
        buffer = bytearray()
        deadline = time.monotonic() + wait_s
        closed = False
        done = False
        while not done:
            sock.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                chunk = sock.recv(1 << 16)
            except TimeoutError:
                break
            except OSError:
                chunk = b""
            if not chunk:
                closed = True
                break
            buffer += chunk
            for frame in _frames_in(buffer):
                (cid,) = struct.unpack_from(">i", frame, 0)
                if cid == SENTINEL_ID:
                    done = True
                    break
                answered.append(cid)
        report.frames_answered += len(answered)
        if answered != sorted(answered) or len(set(answered)) != len(answered):
            report.hangs.append(f"answers out of order: {answered[:20]}")
        pending = [i for i in sent_keys if i not in set(answered)]
        if closed:
            report.closed_by_broker += 1
            return
        if done:
            # every frame before the sentinel is answered, but a produce with acks=0
            report.unanswered += [
                f"frame {i} (api key {sent_keys[i]}) of {frames[i][1][:40].hex()}"
                for i in pending
                if sent_keys[i] != ApiKey.PRODUCE
            ]
            return
        head = pending[0] if pending else None
        if head is not None and sent_keys[head] in MAY_WAIT:
            report.allowed_waits += 1
            return
        frame = frames[head][1] if head is not None else b""
        report.hangs.append(
            f"no answer within {wait_s:.0f} s and the connection open: head frame {head} "
            f"(api key {None if head is None else sent_keys[head]}): {frame[:64].hex()}"
        )
    finally:
        sock.close()


def _raw(host: str, port: int, rng: random.Random, report: Report) -> None:
    """A connection that sends something other than frames, then leaves."""
    report.raw_connections += 1
    try:
        sock = _connect(host, port)
    except OSError as e:
        report.errors[f"connect: {e}"] += 1
        return
    try:
        kind = rng.randrange(4)
        if kind == 0:
            data = os.urandom(rng.randrange(1, 512))
        elif kind == 1:
            data = struct.pack(">i", rng.choice((-1, -(2**31), 0, 2**31 - 1, 100 << 20)))
        elif kind == 2:
            data = struct.pack(">i", rng.randrange(12, 4096)) + os.urandom(rng.randrange(12))
        else:
            data = struct.pack(">i", 3) + b"\x00\x12\x00"
        sock.sendall(data)
        sock.settimeout(0.05)
        try:
            sock.recv(1 << 16)
        except OSError:
            pass
    except OSError:
        pass
    finally:
        sock.close()


def advertised_versions(host: str, port: int) -> list[tuple[int, int, int]]:
    with _connect(host, port) as sock:
        sock.sendall(encode_request(api_versions(), 0, 1))
        buffer = bytearray()
        while True:
            chunk = sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("closed before ApiVersions answered")
            buffer += chunk
            for frame in _frames_in(buffer):
                _, response = decode_response(ApiKey.API_VERSIONS, 0, frame)
                return [(k.api_key, k.min_version, k.max_version) for k in response.api_keys]


def run(
    bootstrap: str,
    *,
    frames: int,
    seed: int,
    workers: int = 4,
    batch: int = 1,
    wait_s: float = 20.0,
    progress: Any = None,
) -> Report:
    """Sends ``frames`` fuzzed frames to the broker at ``bootstrap``; see the module docstring."""
    host, port_text = bootstrap.rsplit(":", 1)
    port = int(port_text)
    rng = random.Random(seed)
    corpus = seeds(advertised_versions(host, port), rng)
    per_worker = frames // workers
    reports = [Report() for _ in range(workers)]

    def work(n: int) -> None:
        wrng = random.Random(seed * 1000 + n)
        report = reports[n]
        while report.frames_sent < per_worker:
            if wrng.random() < 0.05:
                _raw(host, port, wrng, report)
                continue
            chosen = []
            for _ in range(batch):
                key, frame = wrng.choice(corpus)
                if wrng.random() < 0.85:
                    frame = mutate(frame, wrng)
                chosen.append((key, frame))
            try:
                _batch(host, port, chosen, report, wait_s)
            except OSError as e:
                report.errors[f"{type(e).__name__}: {e}"] += 1
            if progress is not None and n == 0 and report.connections % 200 == 0:
                progress(report.frames_sent * workers)

    start = time.monotonic()
    threads = [threading.Thread(target=work, args=(n,), daemon=True) for n in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    total = Report()
    for r in reports:
        total.merge(r)
    total.seconds = time.monotonic() - start
    return total


def prepare(bootstrap: str) -> None:
    """Creates the fuzzer's topics (with a few records) and a committed group offset."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(t, 4, 1) for t in TOPICS]).values():
        try:
            f.result(30)
        except Exception as e:
            if "already exists" not in str(e):
                raise
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(40):
        producer.produce(TOPICS[i % 2], value=b"v%d" % i, key=b"k%d" % i, partition=i % 4)
    producer.flush(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--bootstrap", help="a running broker (default: start one)")
    args = parser.parse_args()
    broker = None
    bootstrap = args.bootstrap
    if bootstrap is None:
        import tempfile
        from pathlib import Path

        from tests.integration.broker_process import BrokerProcess

        tmp = Path(tempfile.mkdtemp(prefix="odradek-fuzz-"))
        broker = BrokerProcess(tmp / "data", FUZZ_BROKER_CONFIG).start()
        bootstrap = broker.bootstrap
        print(f"broker on {bootstrap}, data and log in {tmp}")
    try:
        prepare(bootstrap)
        print(f"seed {args.seed}")
        report = run(
            bootstrap,
            frames=args.frames,
            seed=args.seed,
            workers=args.workers,
            progress=lambda n: print(f"  {n} frames", flush=True),
        )
        print(report.summary(), flush=True)
        problems = report.problems()
        for line in problems:
            print("  ", line)
        failed = bool(problems)
        if broker is not None:
            tracebacks = broker.log().count("Traceback")
            alive = broker.proc is not None and broker.proc.poll() is None
            print(f"broker alive: {alive}; tracebacks in its log: {tracebacks}")
            failed = failed or bool(tracebacks) or not alive
        else:
            print("the broker's log is not checked for tracebacks (--bootstrap: not ours)")
        print("FAILED" if failed else "passed", flush=True)
    finally:
        if broker is not None:
            broker.stop()
    if failed:
        raise SystemExit(1)


#: The fuzz broker's settings: topics it may create are bounded (a hardened deployment's
#: choice), requests' waits are short.
FUZZ_BROKER_CONFIG = {
    "max.broker.partitions": "2000",
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "10",
}


if __name__ == "__main__":
    main()
