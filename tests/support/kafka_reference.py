"""Apache Kafka itself, run beside Odradek as the reference (issue 15).

The jars come from ``tests/reference/pom.xml``: ``make reference-kafka`` (a prerequisite of
``make test``) copies each release named in ``tests/reference/versions.mk`` into
``tests/reference/.cache/<version>/lib``. Nothing here downloads anything.

- :class:`KafkaBroker` runs one Kafka broker as a JVM subprocess on free loopback ports with a
  small heap: ZooKeeper mode (``zookeeper_connect`` given: Kafka 3.9, the last line with it) or a
  KRaft single node (``kafka-storage format`` then a combined broker+controller; Kafka 4.x).
- :func:`run_tool` runs one of Kafka's command-line tools (``kafka-topics`` and friends) as
  ``java -cp <release's jars> <main class> ARGS``, the way Kafka's ``bin/*.sh`` scripts do.
- :func:`reference_missing` says why a release cannot run here (its jars or Java are missing);
  tests skip with that reason rather than silently, and fail with it under CI (the ``CI``
  environment variable set, as .ci/run's environment has it), so that a missing install step
  cannot pass as a skip (:func:`skip_or_fail`).
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from tests.support.missing import skip_or_fail
from tests.support.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
REFERENCE_DIR = ROOT / "tests" / "reference"
CACHE_DIR = REFERENCE_DIR / ".cache"

#: JVM options for the brokers the tests run: a small heap (the issue's -Xmx512m), one GC thread
#: and the C1 compiler only, so a broker starts quickly on a 2-core machine.
TEST_JVM_OPTS = (
    "-Xms64m",
    "-Xmx512m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Djava.awt.headless=true",
)
#: JVM options for short-lived tools (kafka-topics and friends).
TOOL_JVM_OPTS = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")


@cache
def versions() -> dict[str, str]:
    """``KAFKA_ZK_VERSION`` and ``KAFKA_KRAFT_VERSION`` from tests/reference/versions.mk."""
    found: dict[str, str] = {}
    for line in (REFERENCE_DIR / "versions.mk").read_text().splitlines():
        m = re.match(r"\s*([A-Z_]+)\s*:?=\s*(\S+)", line)
        if m:
            found[m.group(1)] = m.group(2)
    return found


def zk_version() -> str:
    """The Kafka release run in ZooKeeper mode (3.9.x)."""
    return versions()["KAFKA_ZK_VERSION"]


def kraft_version() -> str:
    """The newest Kafka 4.x release (KRaft only)."""
    return versions()["KAFKA_KRAFT_VERSION"]


def lib_dir(version: str) -> Path:
    return CACHE_DIR / version / "lib"


def reference_missing(version: str) -> str | None:
    """Why Kafka ``version`` cannot be run here, or None."""
    if shutil.which("java") is None:
        return "java is missing: run scripts/install-system-deps.sh (or `make test`)"
    if not (CACHE_DIR / version / ".complete").exists():
        return (
            f"Apache Kafka {version} is not in {CACHE_DIR / version}: run `make reference-kafka` "
            "(`make test` does it), which copies it from Maven Central with tests/reference/pom.xml"
        )
    return None


def require_reference(version: str) -> None:
    reason = reference_missing(version)
    if reason:
        skip_or_fail(reason)


def classpath(version: str, *extra: Path) -> str:
    jars = sorted(str(p) for p in lib_dir(version).glob("*.jar"))
    return ":".join([*(str(p) for p in extra), *jars])


def is_kraft_line(version: str) -> bool:
    return int(version.split(".", 1)[0]) >= 4


def _write_config(path: Path, text: str) -> None:
    """Writes a configuration file that running JVMs may be reading: tools run concurrently share
    one file per Kafka version, and a JVM that read it while it was truncated in place started
    without appenders and printed log4j's warnings into the tool's output."""
    if path.exists() and path.read_text() == text:
        return
    pending = path.with_name(f"{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    pending.write_text(text)
    os.replace(pending, path)


def _log_config(directory: Path, version: str, level: str = "INFO") -> list[str]:
    """A logging configuration that writes to stdout (the caller's file), as a -D option."""
    if is_kraft_line(version):
        path = directory / "log4j2.properties"
        _write_config(
            path,
            "\n".join(
                [
                    "status = error",
                    "appender.out.type = Console",
                    "appender.out.name = OUT",
                    "appender.out.layout.type = PatternLayout",
                    "appender.out.layout.pattern = [%d] %p %m (%c)%n",
                    f"rootLogger.level = {level}",
                    "rootLogger.appenderRef.out.ref = OUT",
                    "logger.zk.name = org.apache.zookeeper",
                    "logger.zk.level = WARN",
                    "",
                ]
            ),
        )
        return [f"-Dlog4j2.configurationFile=file:{path}"]
    path = directory / "log4j.properties"
    _write_config(
        path,
        "\n".join(
            [
                f"log4j.rootLogger={level}, out",
                "log4j.appender.out=org.apache.log4j.ConsoleAppender",
                "log4j.appender.out.layout=org.apache.log4j.PatternLayout",
                "log4j.appender.out.layout.ConversionPattern=[%d] %p %m (%c)%n",
                "log4j.logger.org.apache.zookeeper=WARN",
                "log4j.logger.kafka.request.logger=WARN",
                "",
            ]
        ),
    )
    return [f"-Dlog4j.configuration=file:{path}"]


@cache
def _tool_log_dir() -> Path:
    directory = CACHE_DIR / "tool-logging"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def tool_command(
    version: str,
    main_class: str,
    *args: str,
    extra_cp: tuple[Path, ...] = (),
    jvm_opts: tuple[str, ...] = (),
) -> list[str]:
    """``java -cp <Kafka version's jars> main_class args`` with a quiet (WARN) log config."""
    sub = _tool_log_dir() / version
    sub.mkdir(exist_ok=True)
    return [
        "java",
        *TOOL_JVM_OPTS,
        *jvm_opts,
        *_log_config(sub, version, level="WARN"),
        "-cp",
        classpath(version, *extra_cp),
        main_class,
        *args,
    ]


def _class_data_sharing(version: str, main_class: str) -> tuple[tuple[str, ...], Path | None]:
    """JVM options that start a tool from its class-data archive (the JDK's AppCDS: about half
    the start-up CPU of a tool run), and the temporary file a first run writes the archive to.

    The first run of a tool archives the classes it loaded (``-XX:ArchiveClassesAtExit``); later
    runs map them (``-XX:SharedArchiveFile``). The archive lives in the reference cache beside
    the jars; a JVM that cannot use it (another JDK) ignores it. JVM logging is off so that a
    warning about the archive never mixes with the tool's output."""
    directory = CACHE_DIR / version / "cds"
    directory.mkdir(parents=True, exist_ok=True)
    archive = directory / f"{main_class}.jsa"
    if archive.exists():
        return ("-Xlog:disable", "-Xshare:auto", f"-XX:SharedArchiveFile={archive}"), None
    pending = directory / f"{main_class}.{uuid.uuid4().hex[:8]}.tmp"
    return ("-Xlog:disable", f"-XX:ArchiveClassesAtExit={pending}"), pending


def run_tool(
    version: str,
    main_class: str,
    *args: str,
    timeout: float = 120.0,
    check: bool = True,
    input_text: str | None = None,
    extra_cp: tuple[Path, ...] = (),
    jvm_opts: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    """Runs one of Kafka's tools to completion and returns its output (text); ``jvm_opts``:
    more JVM options (system properties)."""
    require_reference(version)
    cds: tuple[str, ...] = ()
    pending = None
    if not extra_cp:
        cds, pending = _class_data_sharing(version, main_class)
    proc = subprocess.run(
        tool_command(version, main_class, *args, extra_cp=extra_cp, jvm_opts=(*cds, *jvm_opts)),
        capture_output=True,
        text=True,
        timeout=timeout,
        input=input_text,
        check=False,
    )
    if pending is not None and pending.exists():
        # atomically, so that a concurrent run never maps a half-written archive
        os.replace(pending, pending.with_name(f"{main_class}.jsa"))
    if check and proc.returncode != 0:
        raise AssertionError(
            f"{main_class} {' '.join(args)} exited with {proc.returncode}\n"
            f"stdout:\n{proc.stdout[-5000:]}\nstderr:\n{proc.stderr[-5000:]}"
        )
    return proc


#: Main classes of the command-line tools, by the name of their bin/ script, per release line
#: (Kafka 4 moved the last Scala ones into the tools module).
TOOLS_3 = {
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-configs": "kafka.admin.ConfigCommand",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-console-producer": "kafka.tools.ConsoleProducer",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "kafka-leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "kafka-reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "kafka-acls": "kafka.admin.AclCommand",
    "kafka-delegation-tokens": "org.apache.kafka.tools.DelegationTokenCommand",
    "kafka-features": "org.apache.kafka.tools.FeatureCommand",
    "kafka-transactions": "org.apache.kafka.tools.TransactionsCommand",
    "kafka-broker-api-versions": "kafka.admin.BrokerApiVersionsCommand",
    "kafka-dump-log": "kafka.tools.DumpLogSegments",
    "kafka-storage": "kafka.tools.StorageTool",
    "kafka-producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "kafka-consumer-perf-test": "org.apache.kafka.tools.ConsumerPerformance",
    "kafka-e2e-latency": "org.apache.kafka.tools.EndToEndLatency",
}
TOOLS_4 = {
    **TOOLS_3,
    "kafka-configs": "org.apache.kafka.tools.ConfigCommand",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-acls": "org.apache.kafka.tools.AclCommand",
    "kafka-broker-api-versions": "org.apache.kafka.tools.BrokerApiVersionsCommand",
    "kafka-dump-log": "org.apache.kafka.tools.DumpLogSegments",
}


def tool_class(version: str, script: str) -> str:
    return (TOOLS_4 if is_kraft_line(version) else TOOLS_3)[script]


def random_cluster_id() -> str:
    """A cluster id as ``kafka-storage random-uuid`` prints one (base64url of 16 bytes)."""
    while True:
        # as Kafka's Uuid.randomUuid, never one starting with "-" (a command line reads that as
        # an option)
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


@dataclass
class KafkaBroker:
    """One Apache Kafka broker process.

    ZooKeeper mode when ``zookeeper_connect`` is given (``host:port/chroot``; Kafka creates the
    chroot), else a KRaft combined broker+controller, formatted on first start. ``bootstrap`` is
    ``127.0.0.1:<port>`` once started. ``overrides`` are extra ``server.properties`` lines.
    """

    home: Path
    version: str
    zookeeper_connect: str | None = None
    broker_id: int = 0
    overrides: dict[str, str] | None = None
    log_dirs: Path | None = None
    jvm_opts: tuple[str, ...] = TEST_JVM_OPTS

    def __post_init__(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.controller_port = free_port() if self.zookeeper_connect is None else None
        self.data = self.log_dirs or (self.home / "logs")
        self.log_path = self.home / "server.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.cluster_id = random_cluster_id()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def kraft(self) -> bool:
        return self.zookeeper_connect is None

    def properties(self) -> dict[str, str]:
        props = {
            "log.dirs": str(self.data),
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "50",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "true",
            "log.retention.check.interval.ms": "300000",
        }
        if self.kraft:
            voter = f"{self.broker_id}@127.0.0.1:{self.controller_port}"
            props.update(
                {
                    "process.roles": "broker,controller",
                    "node.id": str(self.broker_id),
                    "controller.quorum.voters": voter,
                    "listeners": (
                        f"PLAINTEXT://127.0.0.1:{self.port},"
                        f"CONTROLLER://127.0.0.1:{self.controller_port}"
                    ),
                    "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
                    "controller.listener.names": "CONTROLLER",
                    "inter.broker.listener.name": "PLAINTEXT",
                    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                    "share.coordinator.state.topic.replication.factor": "1",
                    "share.coordinator.state.topic.min.isr": "1",
                }
            )
        else:
            assert self.zookeeper_connect is not None
            props.update(
                {
                    "broker.id": str(self.broker_id),
                    "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
                    "zookeeper.connect": self.zookeeper_connect,
                    "zookeeper.session.timeout.ms": "18000",
                }
            )
        props.update(self.overrides or {})
        return props

    def write_properties(self) -> Path:
        path = self.home / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in self.properties().items()))
        return path

    def format_storage(self, config: Path) -> None:
        if (self.data / "meta.properties").exists():
            return
        run_tool(
            self.version,
            tool_class(self.version, "kafka-storage"),
            "format",
            "-t",
            self.cluster_id,
            "-c",
            str(config),
            "--ignore-formatted",
        )

    def start(self, timeout: float = 120.0) -> KafkaBroker:
        require_reference(self.version)
        if self.zookeeper_connect is not None and is_kraft_line(self.version):
            raise ValueError(f"Kafka {self.version} has no ZooKeeper mode")
        config = self.write_properties()
        if self.kraft:
            self.format_storage(config)
        args = [
            "java",
            *self.jvm_opts,
            *_log_config(self.home, self.version),
            "-cp",
            classpath(self.version),
            "kafka.Kafka",
            str(config),
        ]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        try:
            self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, timeout: float) -> None:
        """Ready when a Metadata request lists this broker (ZooKeeper mode: the controller has
        sent it UpdateMetadata; KRaft: the broker has caught up with the metadata log)."""
        from tests.support.reference_probe import metadata_brokers

        deadline = time.monotonic() + timeout
        while True:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"Kafka {self.version} exited with {self.proc.returncode}:\n{self.log()}"
                )
            with contextlib.suppress(OSError, ConnectionError, ValueError):
                if self.broker_id in metadata_brokers(self.bootstrap):
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kafka {self.version} did not become ready:\n{self.log()}")
            time.sleep(0.2)

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-20000:]
        except FileNotFoundError:
            return ""

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60.0) -> int:
        """Stops the broker (SIGTERM: Kafka's clean shutdown) and returns its exit code."""
        proc, self.proc = self.proc, None
        if proc is None:
            return 0
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            return proc.wait()

    def kill(self) -> int:
        return self.stop(signal.SIGKILL)

    def __enter__(self) -> KafkaBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
