"""Runs the real Odradek daemon as a subprocess for integration tests (port 0, temp data dir)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

_LISTENING = re.compile(r"started, listening on (\S+?)://([\d.]+):(\d+)")
_LISTENER = re.compile(r"([A-Z0-9_]+)://([\d.]+):(\d+)")
ROOT = Path(__file__).resolve().parents[2]


class BrokerProcess:
    """``odradek serve`` in a subprocess (``python -m broker serve``, or ``command``).
    ``bootstrap`` is ``host:port`` once started."""

    def __init__(
        self,
        data_dir: Path,
        overrides: dict[str, str] | None = None,
        *,
        log_path: Path | None = None,
        wrapper: list[str] | None = None,
        command: list[str] | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.overrides = dict(overrides or {})
        #: a command the broker runs under (e.g. ``["prlimit", "--nofile=64"]``)
        self.wrapper = list(wrapper or [])
        #: the whole ``serve`` command line, as an operator types it (e.g. the installed
        #: ``odradek serve`` with its options); ``overrides`` are appended, and neither the
        #: listener on port 0 nor ``log.dir`` is added
        self.command = list(command) if command is not None else None
        self.log_path = log_path or data_dir.parent / f"broker-{uuid.uuid4().hex[:8]}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.port: int | None = None
        #: every bound listener's port, by listener name
        self.ports: dict[str, int] = {}
        self.host = "127.0.0.1"
        self._reader: threading.Thread | None = None

    @property
    def bootstrap(self) -> str:
        assert self.port is not None, "broker not started"
        return f"{self.host}:{self.port}"

    def address(self, listener: str) -> str:
        """``host:port`` of one listener."""
        return f"{self.host}:{self.ports[listener]}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout: float = 30.0) -> BrokerProcess:
        if self.command is None:
            settings = {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dir": str(self.data_dir)}
            command = [sys.executable, "-m", "broker", "serve"]
        else:
            settings, command = {}, self.command
        settings.update(self.overrides)
        args = [*self.wrapper, *command]
        for key, value in settings.items():
            args += ["--override", f"{key}={value}"]
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.port = None
        log_file = open(self.log_path, "ab")  # noqa: SIM115 - closed by the reader thread
        self.proc = subprocess.Popen(
            args, cwd=ROOT, env=env, stdout=log_file, stderr=subprocess.PIPE
        )
        found = threading.Event()

        def pump() -> None:
            assert self.proc is not None and self.proc.stderr is not None
            for line in self.proc.stderr:
                log_file.write(line)
                log_file.flush()
                text = line.decode(errors="replace")
                m = _LISTENING.search(text)
                if m and not found.is_set():
                    self.port = int(m.group(3))
                    bound = text[m.start() :].split("(advertised", 1)[0]
                    self.ports = {n: int(p) for n, _, p in _LISTENER.findall(bound)}
                    found.set()
            log_file.close()

        self._reader = threading.Thread(target=pump, daemon=True)
        self._reader.start()
        deadline = time.monotonic() + timeout
        while not found.wait(0.05):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"broker did not start; log:\n{self.log()}")
        return self

    def wait_for_log(self, text: str, timeout: float = 30.0) -> None:
        """Waits until ``text`` is in the broker's log (its lines reach the file through a
        reader thread, a moment after the broker wrote them); AssertionError after
        ``timeout``."""
        deadline = time.monotonic() + timeout
        while text not in self.log():
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} not in the broker's log after {timeout} s")
            time.sleep(0.05)

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        """Stops the broker (SIGTERM: clean shutdown) and returns its exit code."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        if self._reader is not None:
            self._reader.join(5)
        self.proc = None
        return code

    def kill(self) -> int:
        return self.stop(signal.SIGKILL)

    def restart(self) -> BrokerProcess:
        self.stop()
        return self.start()

    def __enter__(self) -> BrokerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
