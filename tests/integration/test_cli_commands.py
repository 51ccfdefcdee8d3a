"""The ``odradek`` subcommands test_operations.py leaves to one output format (or none), driven as a
user drives them (a subprocess against a real broker) in both formats, checking what each one
says: ``topic create``, ``cluster describe|brokers|controller``, ``log-dirs describe``, ``group
list``, ``transaction describe``, ``group reset-offsets`` with ``--to-latest``,
``--to-datetime`` and ``--shift-by``, ``topic consume`` with ``-p/--partition`` and with
``--follow`` (a consumer left running that gets a record produced after it started, then stopped
with Ctrl-C), and ``check-log`` on a batch whose CRC is wrong and on damaged index files.

A table is read as a user reads it: a header line, then one line per row, cells separated by
spaces; a single object is printed as KEY VALUE lines."""

from __future__ import annotations

import json
import os
import queue
import signal
import struct
import subprocess
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.integration.broker_process import BrokerProcess
from tests.support.cli import ODRADEK, as_json, odradek, pairs, rows, unique
from tests.support.kafka_clients import consume_in_group


@pytest.fixture(scope="module")
def cli_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(
        tmp_path_factory.mktemp("cli") / "data", {"group.initial.rebalance.delay.ms": "0"}
    )
    proc.start()
    yield proc
    proc.stop()


# --- topic create --------------------------------------------------------------------------------


def test_topic_create_in_both_formats(cli_broker: BrokerProcess) -> None:
    b = cli_broker.bootstrap
    text_topic, json_topic = unique("create-text"), unique("create-json")
    created = pairs(odradek("topic", "create", text_topic, "--partitions", "3", "-b", b).stdout)
    assert {k: created[k] for k in ("name", "created", "partitions", "replication_factor")} == {
        "name": text_topic,
        "created": "true",
        "partitions": "3",
        "replication_factor": "1",
    }
    assert created["topic_id"] == as_json("topic", "describe", text_topic, "-b", b)["topic_id"]

    answer = as_json("topic", "create", json_topic, "-p", "2", "-c", "retention.ms=60000", "-b", b)
    topic_id = answer.pop("topic_id")
    assert answer == {
        "name": json_topic,
        "created": True,
        "partitions": 2,
        "replication_factor": 1,
    }
    described = as_json("topic", "describe", json_topic, "-b", b)
    assert described["topic_id"] == topic_id and described["configs"] == {"retention.ms": "60000"}

    # again: Kafka's TOPIC_ALREADY_EXISTS, or "not created" with --if-not-exists
    again = odradek("topic", "create", json_topic, "-b", b, check=False)
    assert again.returncode == 1 and "TOPIC_ALREADY_EXISTS" in again.stderr
    assert as_json("topic", "create", json_topic, "--if-not-exists", "-b", b) == {
        "name": json_topic,
        "created": False,
    }
    kept = odradek("topic", "create", text_topic, "--if-not-exists", "-b", b).stdout
    assert pairs(kept) == {"name": text_topic, "created": "false"}
    # --validate-only creates nothing
    validated = pairs(
        odradek("topic", "create", unique("nope"), "-p", "4", "--validate-only", "-b", b).stdout
    )
    assert (validated["created"], validated["partitions"]) == ("false", "4")


# --- cluster describe | brokers | controller -----------------------------------------------------


def test_cluster_commands_in_both_formats(cli_broker: BrokerProcess) -> None:
    b = cli_broker.bootstrap
    odradek("topic", "create", unique("cluster"), "--partitions", "2", "-b", b)
    described = as_json("cluster", "describe", "-b", b)
    assert described["controller"] == 0 and described["brokers"] == [0]
    assert described["cluster_id"] and described["topics"] >= 1 and described["partitions"] >= 2
    text = pairs(odradek("cluster", "describe", "-b", b).stdout)
    assert text == {
        "cluster_id": described["cluster_id"],
        "controller": "0",
        "brokers": "0",
        "topics": str(described["topics"]),
        "partitions": str(described["partitions"]),
    }

    port = cli_broker.port
    me = {"id": 0, "host": "127.0.0.1", "port": port, "rack": None, "controller": True}
    assert as_json("cluster", "brokers", "-b", b) == [me]
    header, table = rows(odradek("cluster", "brokers", "-b", b).stdout)
    assert header == ["ID", "HOST", "PORT", "RACK", "CONTROLLER"]
    assert table == [["0", "127.0.0.1", str(port), "-", "true"]]

    assert as_json("cluster", "controller", "-b", b) == me
    assert pairs(odradek("cluster", "controller", "-b", b).stdout) == {
        "id": "0",
        "host": "127.0.0.1",
        "port": str(port),
        "rack": "-",
        "controller": "true",
    }


# --- log-dirs describe ---------------------------------------------------------------------------


def test_log_dirs_describe_in_both_formats(cli_broker: BrokerProcess) -> None:
    """``log-dirs describe`` (which the bare ``log-dirs`` stands for): the broker's one log
    directory, online, its space, and with ``--topic`` that topic's partitions and their sizes;
    ``--broker 0`` answers the same."""
    b = cli_broker.bootstrap
    topic = unique("logdirs")
    odradek("topic", "create", topic, "--partitions", "2", "-b", b)
    odradek("topic", "produce", topic, "-p", "0", "-b", b, stdin="a\nb\nc\n")

    (described,) = as_json("log-dirs", "describe", "--topic", topic, "-b", b)
    partitions = described.pop("partitions")
    usable = described.pop("usable_bytes")
    assert described == {
        "broker": 0,
        "path": str(cli_broker.data_dir),
        "error": None,
        "total_bytes": described["total_bytes"],
    }
    assert described["total_bytes"] >= usable > 0
    assert [(p["topic"], p["partition"], p["offset_lag"], p["is_future"]) for p in partitions] == [
        (topic, 0, 0, False),
        (topic, 1, 0, False),
    ]
    size = partitions[0]["size"]
    assert size > 0 and partitions[1]["size"] == 0  # three records in partition 0, none in 1
    (by_id,) = as_json("log-dirs", "describe", "--broker", "0", "--topic", topic, "-b", b)
    assert (by_id["path"], by_id["partitions"]) == (described["path"], partitions)

    header, table = rows(odradek("log-dirs", "describe", "--topic", topic, "-b", b).stdout)
    assert header == [
        "BROKER", "DIR", "STATUS", "PARTITIONS", "SIZE", "TOTAL-BYTES", "USABLE-BYTES",
    ]  # fmt: skip
    ((*shown, total, free),) = table
    assert shown == ["0", str(cli_broker.data_dir), "online", "2", str(size)]
    assert int(total) == described["total_bytes"] and 0 < int(free) <= int(total)

    # without --topic: every partition in the directory, this topic's among them
    (everything,) = as_json("log-dirs", "describe", "-b", b)
    assert {(p["topic"], p["partition"]) for p in everything["partitions"]} >= {
        (topic, 0),
        (topic, 1),
    }
    ((*_, count, _, _, _),) = rows(odradek("log-dirs", "describe", "-b", b).stdout)[1]
    assert int(count) >= len(everything["partitions"]) >= 2


# --- group list ----------------------------------------------------------------------------------


def commit(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commits offsets for ``group`` as a consumer outside the group does (no member: the group
    stays Empty, so its offsets may be reset)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    consumer.commit(
        offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False
    )
    consumer.close()


def test_group_list_in_both_formats(cli_broker: BrokerProcess) -> None:
    b = cli_broker.bootstrap
    topic, group = unique("glist"), unique("glist-g")
    odradek("topic", "create", topic, "--partitions", "1", "-b", b)
    odradek("topic", "produce", topic, "-b", b, stdin="a\nb\n")
    assert len(consume_in_group(b, group, topic, 2)) == 2  # a consumer that subscribed, then left
    listed = [g for g in as_json("group", "list", "-b", b) if g["group"] == group]
    assert listed == [{"group": group, "state": "Empty", "protocol_type": "consumer"}]
    header, table = rows(odradek("group", "list", "-b", b).stdout)
    assert header == ["GROUP", "STATE", "PROTOCOL-TYPE"]
    assert [group, "Empty", "consumer"] in table
    odradek("group", "delete", group, "-b", b)
    assert group not in [g["group"] for g in as_json("group", "list", "-b", b)]
    assert group not in odradek("group", "list", "-b", b).stdout


# --- transaction describe ------------------------------------------------------------------------


def test_transaction_describe_in_both_formats(cli_broker: BrokerProcess) -> None:
    b = cli_broker.bootstrap
    topic, txn_id = unique("txn"), unique("txn-id")
    odradek("topic", "create", topic, "--partitions", "2", "-b", b)
    producer = Producer(
        {"bootstrap.servers": b, "transactional.id": txn_id, "transaction.timeout.ms": 60000}
    )
    producer.init_transactions(60)
    producer.begin_transaction()
    producer.produce(topic, value=b"open", partition=1)
    producer.flush(30)

    ongoing = as_json("transaction", "describe", txn_id, "-b", b)
    assert ongoing["transactional_id"] == txn_id and ongoing["state"] == "Ongoing"
    assert ongoing["partitions"] == [f"{topic}-1"] and ongoing["timeout_ms"] == 60000
    assert ongoing["producer_id"] >= 0 and ongoing["start_time_ms"] > 0
    text = pairs(odradek("transaction", "describe", txn_id, "-b", b).stdout)
    assert text == {
        "transactional_id": txn_id,
        "state": "Ongoing",
        "producer_id": str(ongoing["producer_id"]),
        "producer_epoch": str(ongoing["producer_epoch"]),
        "timeout_ms": "60000",
        "start_time_ms": str(ongoing["start_time_ms"]),
        "partitions": f"{topic}-1",
    }

    producer.commit_transaction(60)
    done = as_json("transaction", "describe", txn_id, "-b", b)
    assert (done["state"], done["partitions"]) == ("CompleteCommit", [])
    assert done["producer_id"] == ongoing["producer_id"]
    text = pairs(odradek("transaction", "describe", txn_id, "-b", b).stdout)
    assert (text["state"], text["partitions"]) == ("CompleteCommit", "-")

    unknown = odradek("transaction", "describe", unique("none"), "--format", "json", "-b", b,
                      check=False)  # fmt: skip
    assert unknown.returncode == 1 and "TRANSACTIONAL_ID_NOT_FOUND" in unknown.stderr


# --- group reset-offsets --to-latest | --to-datetime | --shift-by ---------------------------------

#: five records per partition, one second apart from this moment
BASE = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
BASE_MS = int(BASE.timestamp() * 1000)


def iso(seconds: int) -> str:
    return datetime.fromtimestamp(BASE.timestamp() + seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def plan(text: str) -> dict[int, tuple[str, str]]:
    """reset-offsets' table: partition -> (current, new offset)."""
    header, table = rows(text)
    assert header == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"]
    return {int(r[2]): (r[3], r[4]) for r in table}


def committed(b: str, group: str) -> dict[int, int]:
    return {r["partition"]: r["current_offset"] for r in as_json("group", "lag", group, "-b", b)}


def test_reset_offsets_to_latest_to_datetime_and_shift_by_in_both_formats(
    cli_broker: BrokerProcess,
) -> None:
    b = cli_broker.bootstrap
    topic, group = unique("reset"), unique("reset-g")
    odradek("topic", "create", topic, "--partitions", "2", "-b", b)
    odradek(
        "topic", "produce", topic, "--format", "json", "-b", b,
        stdin="".join(
            json.dumps({"value": f"p{p}-{i}", "partition": p, "timestamp": BASE_MS + i * 1000})
            + "\n"
            for p in (0, 1)
            for i in range(5)
        ),
    )  # fmt: skip
    commit(b, group, {(topic, 0): 1, (topic, 1): 2})
    spec = ("--topic", topic, "-b", b)

    # --to-latest: the dry run (the default) shows the plan and commits nothing
    latest = as_json("group", "reset-offsets", group, "--to-latest", *spec)
    assert latest == [
        {"group": group, "topic": topic, "partition": 0, "current_offset": 1, "new_offset": 5},
        {"group": group, "topic": topic, "partition": 1, "current_offset": 2, "new_offset": 5},
    ]
    dry = odradek("group", "reset-offsets", group, "--to-latest", "--dry-run", *spec)
    assert plan(dry.stdout) == {0: ("1", "5"), 1: ("2", "5")}
    assert "dry run: nothing committed" in dry.stderr
    assert committed(b, group) == {0: 1, 1: 2}
    executed = odradek("group", "reset-offsets", group, "--to-latest", "--execute", *spec)
    assert plan(executed.stdout) == {0: ("1", "5"), 1: ("2", "5")}
    assert committed(b, group) == {0: 5, 1: 5}
    assert {r["lag"] for r in as_json("group", "lag", group, "-b", b)} == {0}

    # --to-datetime: the first offset whose timestamp is at or after it, in any time zone
    # notation; after the last record, the log end
    at_3s = as_json("group", "reset-offsets", group, "--to-datetime", iso(3), *spec)
    assert [(r["partition"], r["current_offset"], r["new_offset"]) for r in at_3s] == [
        (0, 5, 3),
        (1, 5, 3),
    ]
    shifted_zone = datetime.fromtimestamp(BASE.timestamp() + 2.5, UTC).astimezone(
        datetime.now().astimezone().tzinfo
    )
    text = odradek(
        "group", "reset-offsets", group, "--to-datetime", shifted_zone.isoformat(), "--execute",
        *spec,
    )  # fmt: skip
    assert plan(text.stdout) == {0: ("5", "3"), 1: ("5", "3")}
    assert committed(b, group) == {0: 3, 1: 3}
    after = as_json("group", "reset-offsets", group, "--to-datetime", iso(3600), *spec)
    assert [r["new_offset"] for r in after] == [5, 5]
    before = odradek("group", "reset-offsets", group, "--to-datetime", iso(-3600), *spec)
    assert plan(before.stdout) == {0: ("3", "0"), 1: ("3", "0")}
    bad = odradek("group", "reset-offsets", group, "--to-datetime", "yesterday", *spec, check=False)
    assert bad.returncode == 2 and "is not an ISO date-time" in bad.stderr

    # --shift-by: from the committed offsets, clamped to each partition's log
    back = as_json("group", "reset-offsets", group, "--shift-by", "-2", "--execute", *spec)
    assert [(r["current_offset"], r["new_offset"]) for r in back] == [(3, 1), (3, 1)]
    assert committed(b, group) == {0: 1, 1: 1}
    forward = odradek("group", "reset-offsets", group, "--shift-by", "3", *spec)
    assert plan(forward.stdout) == {0: ("1", "4"), 1: ("1", "4")}
    clamped = as_json("group", "reset-offsets", group, "--all-topics", "--shift-by", "-10", "-b", b)
    assert [(r["partition"], r["new_offset"]) for r in clamped] == [(0, 0), (1, 0)]
    clamped = odradek("group", "reset-offsets", group, "--all-topics", "--shift-by", "99", "-b", b)
    assert plan(clamped.stdout) == {0: ("1", "5"), 1: ("1", "5")}
    assert committed(b, group) == {0: 1, 1: 1}  # only dry runs since
    # one partition only (Kafka's TOPIC:PARTITIONS spelling)
    one = as_json("group", "reset-offsets", group, "--topic", f"{topic}:1", "--to-latest",
                  "--execute", "-b", b)  # fmt: skip
    assert [(r["partition"], r["new_offset"]) for r in one] == [(1, 5)]
    assert committed(b, group) == {0: 1, 1: 5}


# --- topic consume -p/--partition and --follow ---------------------------------------------------


def test_consume_chosen_partitions_in_both_formats(cli_broker: BrokerProcess) -> None:
    b = cli_broker.bootstrap
    topic = unique("parts")
    odradek("topic", "create", topic, "--partitions", "3", "-b", b)
    records = [("p0-a", 0), ("p1-a", 1), ("p2-a", 2), ("p1-b", 1)]
    odradek(
        "topic", "produce", topic, "--format", "json", "-b", b,
        stdin="".join(json.dumps({"value": v, "partition": p}) + "\n" for v, p in records),
    )  # fmt: skip
    odradek("topic", "produce", topic, "-p", "2", "-b", b, stdin="p2-b\n")
    out = odradek("topic", "consume", topic, "-p", "1", "--from-beginning", "--format", "json",
                  "-b", b).stdout  # fmt: skip
    got = [json.loads(line) for line in out.splitlines()]
    assert [(r["partition"], r["offset"], r["value"]) for r in got] == [
        (1, 0, "p1-a"),
        (1, 1, "p1-b"),
    ]
    text = odradek(
        "topic", "consume", topic, "--partition", "2", "--partition", "0", "--offset", "earliest",
        "-b", b,
    ).stdout  # fmt: skip
    assert sorted(text.split()) == ["p0-a", "p2-a", "p2-b"]
    # -N: the last N of each chosen partition
    last = odradek("topic", "consume", topic, "-p", "2", "--offset", "-1", "-b", b).stdout
    assert last.split() == ["p2-b"]
    missing = odradek("topic", "consume", topic, "-p", "5", "-b", b, check=False)
    assert missing.returncode == 1 and f"topic {topic} has no partition 5" in missing.stderr


class Follower:
    """``odradek topic consume ... --follow`` left running; its output lines arrive in a queue."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [ODRADEK, "topic", "consume", *args, "--follow"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ, COLUMNS="200"),
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def next_line(self, timeout: float = 60.0) -> str:
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            self.proc.kill()
            raise AssertionError(
                f"no line from the follower in {timeout} s: {self.proc.communicate()}"
            ) from None

    def interrupt(self) -> tuple[int, str]:
        """Ctrl-C, as a user stops it; its exit status and stderr."""
        self.proc.send_signal(signal.SIGINT)
        try:
            _, err = self.proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        return self.proc.returncode, err


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_consume_follow_gets_records_produced_after_it_started(
    cli_broker: BrokerProcess, fmt: str
) -> None:
    b = cli_broker.bootstrap
    topic = unique(f"follow-{fmt}")
    odradek("topic", "create", topic, "--partitions", "2", "-b", b)
    odradek("topic", "produce", topic, "-p", "0", "-b", b, stdin="before\n")
    follower = Follower(topic, "--from-beginning", "--format", fmt, "-b", b)
    try:

        def value(line: str) -> str:
            if fmt == "text":
                return line
            record = json.loads(line)
            assert record["topic"] == topic
            return str(record["value"])

        # the record from before it started, then it waits at the end of the log
        assert value(follower.next_line()) == "before"
        odradek("topic", "produce", topic, "-p", "1", "-b", b, stdin="after\n")
        assert value(follower.next_line()) == "after"
        odradek("topic", "produce", topic, "-p", "0", "-b", b, stdin="later\n")
        line = follower.next_line()
        assert value(line) == "later"
        if fmt == "json":
            assert (json.loads(line)["partition"], json.loads(line)["offset"]) == (0, 1)
        assert follower.proc.poll() is None  # still following
        code, err = follower.interrupt()
        # stopped as kafka-console-consumer stops on Ctrl-C: a count on stderr, status 130
        assert code == 130, err
        assert "Processed a total of 3 records" in err
        assert follower.lines.empty()
    finally:
        if follower.proc.poll() is None:
            follower.proc.kill()
            follower.proc.wait()


# --- check-log on CRC and index damage -----------------------------------------------------------


def damaged_copy(proc: BrokerProcess, tmp_path: Path, values: list[str]) -> Path:
    """A copy of a fresh one-partition topic's directory, one batch per value."""
    topic = unique("check")
    odradek("topic", "create", topic, "--partitions", "1", "-b", proc.bootstrap)
    for v in values:
        odradek("topic", "produce", topic, "-b", proc.bootstrap, stdin=v + "\n")
    copy = tmp_path / f"{topic}-0"
    copy.mkdir()
    for f in (proc.data_dir / f"{topic}-0").iterdir():
        if f.is_file():
            (copy / f.name).write_bytes(f.read_bytes())
    return copy


def first_batch_size(segment: Path) -> int:
    # a v2 batch: base offset (int64), then the length of the rest (int32)
    (length,) = struct.unpack_from(">i", segment.read_bytes(), 8)
    return 12 + int(length)


def check(directory: Path, *extra: str) -> tuple[subprocess.CompletedProcess[str], Any]:
    text = odradek("check-log", str(directory), *extra, check=False)
    as_json_ = odradek("check-log", str(directory), *extra, "--format", "json", check=False)
    return text, json.loads(as_json_.stdout) if as_json_.stdout.strip() else None


def test_check_log_finds_a_crc_mismatch(cli_broker: BrokerProcess, tmp_path: Path) -> None:
    copy = damaged_copy(cli_broker, tmp_path, ["first", "second", "third"])
    segment = copy / "00000000000000000000.log"
    healthy_text, healthy = check(copy)
    assert healthy_text.returncode == 0 and healthy == []
    assert "1 segments checked" in healthy_text.stdout and "all healthy" in healthy_text.stdout
    everything = json.loads(odradek("check-log", str(copy), "--all", "--format", "json").stdout)
    assert [(s["batches"], s["records"], s["ok"]) for s in everything] == [(3, 3, True)]

    data = bytearray(segment.read_bytes())
    at = first_batch_size(segment)
    second = 12 + struct.unpack_from(">i", data, at + 8)[0]
    data[at + second - 2] ^= 0xFF  # the last byte of the second batch's value
    segment.write_bytes(bytes(data))
    text, report = check(copy)
    assert text.returncode == 1
    assert len(report) == 1
    found = report[0]
    assert found["segment"] == str(segment) and not found["ok"]
    assert found["truncate_reason"] == f"CRC mismatch in the batch at position {at}"
    assert (found["batches"], found["records"], found["valid_bytes"]) == (1, 1, at)
    assert found["truncate_bytes"] == len(data) - at and found["errors"] == []
    assert f"CRC mismatch in the batch at position {at}" in text.stdout
    header = text.stdout.splitlines()[0].split()
    assert header[:4] == ["SEGMENT", "BATCHES", "VALID-BYTES", "TRUNCATE-BYTES"]
    row = next(line.split() for line in text.stdout.splitlines() if str(segment) in line)
    assert row[:4] == [str(segment), "1", str(at), str(len(data) - at)]
    assert "1 segments checked" in text.stdout and "1 with problems" in text.stdout
    assert segment.read_bytes() == bytes(data)  # read-only


def test_check_log_finds_damaged_indexes(cli_broker: BrokerProcess, tmp_path: Path) -> None:
    copy = damaged_copy(cli_broker, tmp_path, ["one", "two"])
    segment = copy / "00000000000000000000.log"
    index, timeindex = segment.with_suffix(".index"), segment.with_suffix(".timeindex")
    size = segment.stat().st_size

    # an offset index entry pointing inside the first batch rather than at a batch's start
    before = index.read_bytes()
    index.write_bytes(struct.pack(">ii", 0, 5) + before[8:])
    text, report = check(copy)
    assert text.returncode == 1
    [found] = report
    assert found["errors"] == [
        "00000000000000000000.index: entry 0: position 5 is not a batch start"
    ]
    assert (found["truncate_bytes"], found["valid_bytes"], found["batches"]) == (0, size, 2)
    assert "entry 0: position 5 is not a batch start" in text.stdout
    assert "1 with problems" in text.stdout

    # an index entry beyond the log, and a time index entry naming an offset the log lacks
    index.write_bytes(struct.pack(">ii", 1, size + 100) + before[8:])
    timeindex.write_bytes(struct.pack(">qi", BASE_MS, 7) + timeindex.read_bytes()[12:])
    text, report = check(copy)
    assert text.returncode == 1
    [found] = report
    assert found["errors"] == [
        f"00000000000000000000.index: entry 0: position {size + 100} outside the valid log "
        f"({size} bytes) or not increasing",
        "00000000000000000000.timeindex: entry 0: offset 7 beyond the log's last offset",
    ]
    assert "offset 7 beyond the log's last offset" in text.stdout

    # an index cut mid-entry (its one whole entry is right: offset 0 at position 0)
    index.write_bytes(struct.pack(">ii", 0, 0) + b"\x00\x00\x00")
    timeindex.unlink()
    _, report = check(copy)
    assert report[0]["errors"] == [
        "00000000000000000000.index: 11 bytes is not a whole number of entries"
    ]
    assert segment.stat().st_size == size
