"""The brokers a benchmark runs its workloads against, side by side (issue 19): Odradek, and
Apache Kafka as the reference when its jars are present.

Kafka runs as a KRaft combined broker+controller of the newest 4.x release
(tests/reference/versions.mk: ``KAFKA_KRAFT_VERSION``): what a Kafka user deploys today, the
line with KIP-848 generally available, and no ZooKeeper to start beside it. Its JVM gets the
heap and GC options of Kafka's ``kafka-server-start.sh`` (bench_kafka's ``KAFKA_JVM_OPTS``),
with the heap size given by the caller.
"""

from __future__ import annotations

import resource
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_kafka import KAFKA_JVM_OPTS  # noqa: E402
from tests.support.kafka_reference import (  # noqa: E402
    KafkaBroker,
    kraft_version,
    reference_missing,
)

BROKERS = ("kafka", "odradek")
#: Kafka's documentation (Operations, "OS"): allow the broker at least 100,000 file
#: descriptors; Kafka keeps every segment's .log file open.
NOFILE = 100_000


def kafka_missing() -> str | None:
    """Why the Kafka reference cannot run here, or None."""
    return reference_missing(kraft_version())


def choose_brokers(option: str | None) -> tuple[list[str], str | None]:
    """The brokers to run (``--brokers`` or the default: both when Kafka can run), and the
    reason Kafka is left out when it is not run by default."""
    if option:
        chosen = [b.strip() for b in option.split(",") if b.strip()]
        unknown = sorted(set(chosen) - set(BROKERS))
        if unknown:
            raise SystemExit(f"--brokers: unknown {unknown}; choose from {', '.join(BROKERS)}")
        if "kafka" in chosen:
            reason = kafka_missing()
            if reason:
                raise SystemExit(f"--brokers kafka: {reason}")
        return chosen, None
    reason = kafka_missing()
    if reason:
        return ["odradek"], f"Apache Kafka {kraft_version()}: not run: {reason}"
    return list(BROKERS), None


def raise_file_limit(wanted: int = NOFILE) -> int:
    """Raises this process's open-file limit (inherited by the brokers it starts) toward
    ``wanted``, as far as it may, and returns the soft limit in effect."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= wanted:
        return soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, max(hard, wanted)))
    except (ValueError, OSError):
        target = hard if hard != resource.RLIM_INFINITY else wanted
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, target), hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def kafka_kraft(
    home: Path, overrides: dict[str, str], *, heap: str = "1G", jvm_opts: tuple[str, ...] = ()
) -> KafkaBroker:
    """A KRaft single-node Kafka (not started) with kafka-server-start's JVM options."""
    opts = tuple(o for o in KAFKA_JVM_OPTS if not o.startswith("-Xmx") and not o.startswith("-Xms"))
    return KafkaBroker(
        home,
        kraft_version(),
        overrides=overrides,
        jvm_opts=(f"-Xmx{heap}", f"-Xms{heap}", *opts, *jvm_opts),
    )
