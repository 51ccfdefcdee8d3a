"""A real ZooKeeper server for tests: Debian's ``zookeeper`` package, run on a free loopback port.

``ZooKeeperServer(base_dir).start()`` writes ``<base_dir>/zoo.cfg`` and runs
``java ... org.apache.zookeeper.server.ZooKeeperServerMain <base_dir>/zoo.cfg``; it is ready when
the ``srvr`` four-letter command answers with ``Mode:`` (``ruok`` answers earlier than that).

A small ``tickTime`` (200 ms by default) lets tests use short session timeouts: the server clamps
them to 2x-20x tickTime. :func:`expire_session` expires a client's session as ZooKeeper does for a
stalled process: a second client opens the same session (id + password) and closes it.

``scripts/install-system-deps.sh`` (run by ``make test``) installs the package; when the jar or
Java is missing, :func:`require_zookeeper` skips the test with a message saying so.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path

from tests.support.missing import skip_or_fail
from tests.support.ports import free_port

ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
SLF4J_SIMPLE_JAR = Path("/usr/share/java/slf4j-simple.jar")
MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"


def zookeeper_missing() -> str | None:
    """Why a ZooKeeper cannot be started here, or None."""
    if not ZOOKEEPER_JAR.exists():
        return (
            f"{ZOOKEEPER_JAR} is missing: run scripts/install-system-deps.sh (or `make test`), "
            "which installs Debian's zookeeper package"
        )
    if shutil.which("java") is None:
        return "java is missing: run scripts/install-system-deps.sh (or `make test`)"
    return None


def require_zookeeper() -> None:
    reason = zookeeper_missing()
    if reason:
        skip_or_fail(reason)


def four_letter_word(host: str, port: int, command: str, timeout: float = 2.0) -> str:
    """Sends a four-letter command (``srvr``, ``ruok``) and returns the whole answer."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(command.encode())
        chunks = []
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


class ZooKeeperServer:
    """One standalone ZooKeeper server process. ``connect`` is ``127.0.0.1:<port>``."""

    def __init__(
        self,
        base_dir: Path,
        *,
        tick_time_ms: int = 200,
        port: int | None = None,
        host: str = "127.0.0.1",
        max_session_timeout_ms: int = 60000,
    ) -> None:
        self.base_dir = base_dir
        self.tick_time_ms = tick_time_ms
        self.host = host
        self.port = port or free_port(host)
        self.max_session_timeout_ms = max_session_timeout_ms
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = base_dir / "zookeeper.log"

    @property
    def connect(self) -> str:
        return f"{self.host}:{self.port}"

    def chroot_connect(self, prefix: str = "t") -> str:
        """A connect string with a fresh chroot, so tests sharing a server do not meet."""
        return f"{self.connect}/{prefix}-{uuid.uuid4().hex[:10]}"

    def write_config(self) -> Path:
        data = self.base_dir / "data"
        data.mkdir(parents=True, exist_ok=True)
        cfg = self.base_dir / "zoo.cfg"
        cfg.write_text(
            "\n".join(
                [
                    f"tickTime={self.tick_time_ms}",
                    f"dataDir={data}",
                    f"clientPort={self.port}",
                    f"clientPortAddress={self.host}",
                    f"maxSessionTimeout={self.max_session_timeout_ms}",
                    "admin.enableServer=false",
                    "4lw.commands.whitelist=srvr,ruok",
                    "",
                ]
            )
        )
        return cfg

    def start(self, timeout: float = 30.0) -> ZooKeeperServer:
        require_zookeeper()
        cfg = self.write_config()
        classpath = [str(ZOOKEEPER_JAR)]
        if SLF4J_SIMPLE_JAR.exists():
            classpath.append(str(SLF4J_SIMPLE_JAR))
        args = [
            "java",
            "-Xms16m",
            "-Xmx64m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-cp",
            ":".join(classpath),
            MAIN_CLASS,
            str(cfg),
        ]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"ZooKeeper exited with {self.proc.returncode}:\n{self.log()}")
            with contextlib.suppress(OSError):
                if "Mode:" in four_letter_word(self.host, self.port, "srvr"):
                    return self
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"ZooKeeper did not become ready:\n{self.log()}")
            time.sleep(0.05)

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-20000:]
        except FileNotFoundError:
            return ""

    def stop(self, timeout: float = 10.0) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def __enter__(self) -> ZooKeeperServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def expire_session(connect: str, client_id: tuple[int, bytes], timeout: float = 10.0) -> None:
    """Expires the ZooKeeper session ``client_id`` (a kazoo ``client.client_id``) for real.

    A second client joins the session with its id and password and closes it: the server ends the
    session, deletes its ephemeral nodes and tells the first client its session expired.
    """
    from kazoo.client import KazooClient

    hosts = connect.split("/", 1)[0]
    other = KazooClient(hosts=hosts, client_id=client_id)
    other.start(timeout=timeout)
    other.stop()
    other.close()
