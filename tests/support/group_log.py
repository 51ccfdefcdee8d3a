"""Worker processes of the consumer group tests (:mod:`tests.support.group_worker`) and what
their logs show: who owned which partition when, what was processed and committed, how long a
member that kept its partitions stopped consuming around a change of the group.

The checks, as the tests use them:

* :func:`overlaps`: two members owning one partition at the same moment (an owner's interval
  runs from its ``assign`` to its ``revoke``/``lost``/``closed``, or to the moment the test
  SIGKILLed it);
* :func:`bad_resumptions`: a new owner of a partition must start where the group's committed
  offset was: at or after the last commit a member logged as acknowledged, at or before the
  highest one a member tried (a member killed between the broker's acknowledgement and its log
  line);
* :func:`longest_pause`: around each change, the longest gap between two records of a partition
  that a member not involved in the change owned throughout.
"""

from __future__ import annotations

import itertools
import signal
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Worker:
    """A running worker process."""

    name: str
    log_path: Path
    proc: subprocess.Popen[bytes]
    started: float
    #: when the test killed (SIGKILL) or stopped (SIGTERM) it
    ended: float | None = None
    killed: bool = False

    def kill(self) -> None:
        self.ended = time.time()
        self.killed = True
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)

    def stop(self, timeout: float = 60) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.ended is None:
            self.ended = time.time()


def start_worker(
    tmp: Path,
    name: str,
    bootstrap: str,
    group: str,
    topic: str,
    *,
    protocol: str = "consumer",
    rate: float = 0,
    instance: str = "",
) -> Worker:
    log_path = tmp / f"{name}.log"
    log_path.touch()
    args = [
        sys.executable, "-m", "tests.support.group_worker", "--bootstrap", bootstrap,
        "--group", group, "--topic", topic, "--log", str(log_path), "--name", name,
        "--protocol", protocol, "--rate", str(rate), "--instance", instance,
    ]  # fmt: skip
    stderr = open(tmp / f"{name}.stderr", "ab")  # noqa: SIM115 - the child owns it
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr)
    stderr.close()
    return Worker(name, log_path, proc, time.time())


@dataclass
class Ownership:
    worker: str
    partition: int
    start: float
    end: float


@dataclass
class Parsed:
    """Everything the workers' logs say."""

    ownerships: list[Ownership] = field(default_factory=list)
    #: (time, worker, partition, offset, value)
    records: list[tuple[float, str, int, int, int]] = field(default_factory=list)
    #: (time, partition, offset, acknowledged)
    commits: list[tuple[float, int, int, bool]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _partitions(text: str) -> list[int]:
    return [int(p) for p in text.split(",") if p]


def parse(workers: list[Worker]) -> Parsed:
    out = Parsed()
    for w in workers:
        owned: dict[int, float] = {}
        closed = False
        last = w.started
        for line in w.log_path.read_text().splitlines():
            parts = line.split(" ")
            if len(parts) < 2:
                continue  # a line cut by SIGKILL
            try:
                t = float(parts[0])
            except ValueError:
                continue
            last = t
            kind = parts[1]
            if kind == "assign" and len(parts) > 2:
                for p in _partitions(parts[2]):
                    owned.setdefault(p, t)
            elif kind in ("revoke", "lost") and len(parts) > 2:
                for p in _partitions(parts[2]):
                    if p in owned:
                        out.ownerships.append(Ownership(w.name, p, owned.pop(p), t))
            elif kind == "rec" and len(parts) == 5:
                out.records.append((t, w.name, int(parts[2]), int(parts[3]), int(parts[4])))
            elif kind in ("commit", "commit-try") and len(parts) == 3:
                for item in parts[2].split(","):
                    p, o = item.split(":")
                    out.commits.append((t, int(p), int(o), kind == "commit"))
            elif kind in ("error", "commit-failed"):
                out.errors.append(f"{w.name}: {' '.join(parts[1:])}")
            elif kind == "closed":
                closed = True
                for p, start in owned.items():
                    out.ownerships.append(Ownership(w.name, p, start, t))
                owned.clear()
        if not closed:
            end = w.ended if w.ended is not None else last
            for p, start in owned.items():
                out.ownerships.append(Ownership(w.name, p, start, end))
    out.records.sort()
    out.commits.sort()
    return out


def overlaps(parsed: Parsed) -> list[str]:
    """Moments two members owned one partition."""
    problems = []
    by_partition: dict[int, list[Ownership]] = defaultdict(list)
    for o in parsed.ownerships:
        by_partition[o.partition].append(o)
    for p, owners in by_partition.items():
        owners.sort(key=lambda o: o.start)
        for a, b in itertools.pairwise(owners):
            if b.start < a.end:
                problems.append(
                    f"partition {p}: {a.worker} owned it until {a.end:.3f}, "
                    f"{b.worker} from {b.start:.3f}"
                )
    return problems


def bad_resumptions(parsed: Parsed) -> list[str]:
    """New owners that did not start at the group's committed offset."""
    problems = []
    for o in parsed.ownerships:
        first = next(
            (
                offset
                for t, w, p, offset, _ in parsed.records
                if w == o.worker and p == o.partition and o.start <= t <= o.end
            ),
            None,
        )
        if first is None:
            continue
        acked = [off for t, p, off, ok in parsed.commits if p == o.partition and ok and t < o.start]
        tried = [off for t, p, off, _ in parsed.commits if p == o.partition and t < o.start]
        lo = max(acked, default=0)
        hi = max(tried, default=0)
        if not lo <= first <= max(lo, hi):
            problems.append(
                f"partition {o.partition}: {o.worker} started at {first}, the group had "
                f"committed {lo} (highest attempt {hi})"
            )
    return problems


def longest_pause(
    parsed: Parsed, changes: list[tuple[float, str]], *, before: float = 1.0, after: float = 10.0
) -> tuple[float, str]:
    """The longest gap between two records of a partition that a member not involved in a
    change owned from ``before`` seconds before it to ``after`` seconds after it; and where."""
    records: dict[tuple[str, int], list[float]] = defaultdict(list)
    for t, w, p, _, _ in parsed.records:
        records[(w, p)].append(t)
    worst, where = 0.0, "no member kept partitions through a change"
    for at, subject in changes:
        lo, hi = at - before, at + after
        for o in parsed.ownerships:
            if o.worker == subject or not (o.start <= lo and o.end >= hi):
                continue
            times = [t for t in records[(o.worker, o.partition)] if lo <= t <= hi]
            if len(times) < 2:
                continue  # nothing left to read in that partition
            gaps = [b - a for a, b in itertools.pairwise(times)]
            gap = max(gaps)
            if gap > worst:
                worst = gap
                where = f"{o.worker} on partition {o.partition} around {subject}"
    return worst, where
