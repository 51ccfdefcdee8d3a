"""The broker under a bounded fuzz run (tests.support.fuzzing): 50,000 mutated, truncated and
random frames over every API key and version it advertises. Every complete frame gets an answer
or a closed connection, every connect succeeds, nothing logs a traceback, memory stays bounded,
and a well-behaved client is served throughout. The counts and the time taken are printed in
the run's summary. ``make fuzz`` runs a million frames with a fresh seed."""

from __future__ import annotations

import os
import threading
import time

from confluent_kafka import Producer

from tests.integration.broker_process import BrokerProcess
from tests.integration.conftest import SUMMARY_PROPERTY
from tests.integration.test_hardening import rss_bytes, served
from tests.support import fuzzing
from tests.support.kafka_clients import consume_from_start, create_topic

FRAMES = int(os.environ.get("ODRADEK_FUZZ_FRAMES", "50000"))
SEED = int(os.environ.get("ODRADEK_FUZZ_SEED", "20261125"))


def test_fuzzed_frames_get_an_answer_or_a_closed_connection(tmp_path, record_property):
    started = time.monotonic()
    broker = BrokerProcess(tmp_path / "data", fuzzing.FUZZ_BROKER_CONFIG).start()
    try:
        fuzzing.prepare(broker.bootstrap)
        create_topic(broker.bootstrap, "steady", 1)
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        for i in range(20):
            producer.produce("steady", value=b"%d" % i)
        assert producer.flush(30) == 0
        base_rss = rss_bytes(broker.pid)
        peak = [base_rss]
        refused: list[str] = []
        stop = threading.Event()

        def watch() -> None:
            while not stop.wait(0.5):
                peak[0] = max(peak[0], rss_bytes(broker.pid))
                try:
                    if not served(broker.bootstrap):
                        refused.append("ApiVersions answered with an error")
                except OSError as e:
                    refused.append(repr(e))

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        report = fuzzing.run(broker.bootstrap, frames=FRAMES, seed=SEED, batch=1, wait_s=10)
        stop.set()
        watcher.join()
        # the figures, not a limit: shown in the run's summary (tests/integration/conftest.py)
        line = (f"fuzz test, seed {SEED}: {report.summary()}; the whole test "
                f"{time.monotonic() - started:.1f} s; RSS {base_rss >> 20} -> peak "
                f"{peak[0] >> 20} MiB")  # fmt: skip
        print(line)
        record_property(SUMMARY_PROPERTY, line)
        assert not report.hangs, report.hangs[:10]
        assert not report.unanswered, report.unanswered[:10]
        assert not report.errors, report.problems()
        assert report.frames_sent >= FRAMES
        assert not refused, f"a well-behaved client was refused: {refused[:5]}"
        assert broker.proc is not None and broker.proc.poll() is None, "the broker died"
        log = broker.log()
        assert "Traceback" not in log, log[log.index("Traceback") - 2000 :][:6000]
        grown = peak[0] - base_rss
        assert grown < 256 * 1024 * 1024, f"the fuzz run grew the broker by {grown >> 20} MiB"
        # records written before the run (to a topic the fuzzer does not name) are intact
        got = consume_from_start(broker.bootstrap, "steady", 1, 20)
        assert [m.value() for m in got] == [b"%d" % i for i in range(20)]
    finally:
        broker.stop()
