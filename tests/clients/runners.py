"""Running the non-Python clients: the KafkaJS script (tests/clients/js) and the Go programs
(tests/clients/go, built in GOPATH mode against Debian's sarama and kafka-go sources).

Each program takes a command and one JSON argument and prints one JSON object on stdout. Nothing
here installs anything: the ``*_missing`` functions say why a client cannot run (the project's
set-up installs them: ``scripts/install-system-deps.sh`` and ``make js-clients``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
JS_DIR = ROOT / "tests" / "clients" / "js"
GO_DIR = ROOT / "tests" / "clients" / "go"
GOPATH_DEBIAN = Path("/usr/share/gocode")
GO_SOURCES = {
    "sarama": GOPATH_DEBIAN / "src/github.com/Shopify/sarama",
    "kafkago": GOPATH_DEBIAN / "src/github.com/segmentio/kafka-go",
}
GO_PACKAGES = {
    "sarama": "golang-github-shopify-sarama-dev",
    "kafkago": "golang-github-segmentio-kafka-go-dev",
}


class ClientFailed(AssertionError):
    """A client program exited non-zero; the message carries its stderr."""


def kafkajs_missing() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed"
    if not (JS_DIR / "node_modules" / "kafkajs" / "package.json").exists():
        return f"KafkaJS is not installed in {JS_DIR} (run `make js-clients`, i.e. npm ci)"
    return None


def go_missing(program: str) -> str | None:
    if shutil.which("go") is None:
        return "go is not installed (Debian golang-go; scripts/install-system-deps.sh)"
    if not GO_SOURCES[program].is_dir():
        return f"{GO_SOURCES[program]} missing (Debian {GO_PACKAGES[program]})"
    return None


def go_env(cache_dir: Path) -> dict[str, str]:
    env = dict(os.environ, GO111MODULE="off", GOPATH=str(GOPATH_DEBIAN), GOFLAGS="")
    if not env.get("HOME") and not env.get("XDG_CACHE_HOME") and not env.get("GOCACHE"):
        env["GOCACHE"] = str(cache_dir)
    return env


def build_go(program: str, out_dir: Path) -> Path:
    """Builds tests/clients/go/<program> into out_dir; returns the binary's path."""
    binary = out_dir / f"{program}-client"
    result = subprocess.run(
        ["go", "build", "-o", str(binary), f"./tests/clients/go/{program}"],
        cwd=ROOT,
        env=go_env(out_dir / "gocache"),
        capture_output=True,
        text=True,
        timeout=540,
    )
    if result.returncode != 0:
        raise RuntimeError(f"go build {program} failed:\n{result.stderr[-4000:]}")
    return binary


def run_json(argv: list[str], args: dict[str, Any], timeout: float = 120.0) -> Any:
    """Runs ``argv + [json(args)]`` and returns the JSON object on the last stdout line."""
    try:
        result = subprocess.run(
            [*argv, json.dumps(args)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as e:
        raise ClientFailed(f"{argv} timed out after {timeout} s; stderr:\n{e.stderr!r}") from e
    if result.returncode != 0:
        raise ClientFailed(
            f"{' '.join(argv)} {json.dumps(args)} exited {result.returncode}; stderr:\n"
            + result.stderr[-4000:]
        )
    lines = result.stdout.strip().splitlines()
    if not lines:
        raise ClientFailed(f"{argv} printed nothing; stderr:\n{result.stderr[-4000:]}")
    return json.loads(lines[-1])


def kafkajs(command: str, **args: Any) -> Any:
    return run_json(["node", str(JS_DIR / "kafkajs_client.js"), command], args)
