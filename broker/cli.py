"""``python -m broker``: ``serve`` runs a broker, ``dump-log`` prints segment files. The
``odradek`` command (package :mod:`cli`) offers the same two through :func:`serve` and
:func:`dump_log`, beside its cluster commands."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

import uvloop

from broker import gc_tuning
from broker.config import BrokerConfig, ConfigError
from broker.loggers import FORMATS as LOG_FORMATS
from broker.loggers import configure as configure_logging
from storage.dump import dump_files
from storage.util import INT32_MAX

log = logging.getLogger("odradek")


async def _serve(config: BrokerConfig) -> int:
    from broker.server import Broker, StartupError

    try:
        broker = Broker(config)
    except ConfigError as e:
        log.error("broker failed to start: %s", e)
        return 1
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, broker.stop_requested.set)
    try:
        await broker.start()
    except StartupError as e:
        log.error("broker failed to start: %s", e)
        await broker.stop()
        return 1
    except Exception:
        log.exception("broker failed to start")
        await broker.stop()
        return 1
    await broker.stop_requested.wait()
    if broker.halt_reason is not None:
        log.critical("stopping the broker: %s", broker.halt_reason)
    await broker.stop()
    return 1 if broker.halt_reason is not None else 0


def serve(config_path: str | None, overrides: list[str], log_level: str = "INFO") -> int:
    """Runs a broker until SIGTERM or SIGINT; returns the exit status."""
    try:
        config = BrokerConfig.load(config_path, overrides)
    except (ConfigError, OSError) as e:
        configure_logging("kafka", log_level)
        print(f"odradek: configuration error: {e}", file=sys.stderr)
        return 2
    fmt = str(config["log.format"]).lower()
    if fmt not in LOG_FORMATS:
        configure_logging("kafka", log_level)
        print(
            f"odradek: configuration error: log.format must be one of {sorted(LOG_FORMATS)}, "
            f"not {fmt!r}",
            file=sys.stderr,
        )
        return 2
    configure_logging(fmt, log_level)
    gc_tuning.configure()
    code: int = uvloop.run(_serve(config))
    return code


def dump_log(paths: list[str], *, records: bool, print_data: bool, max_bytes: int) -> int:
    return dump_files(paths, records=records, print_data=print_data, max_bytes=max_bytes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="odradek", description="A Kafka-compatible broker.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve_parser = sub.add_parser("serve", help="run a broker")
    serve_parser.add_argument("--config", "-c", help="a Kafka server.properties file")
    serve_parser.add_argument(
        "--override",
        "-o",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a configuration key (repeatable)",
    )
    serve_parser.add_argument("--log-level", default="INFO")
    dump = sub.add_parser(
        "dump-log",
        help="print the batches (and records) of segment files",
        description="Print the batches (and records) of log segments and their indexes, "
        "like kafka-dump-log.",
    )
    dump.add_argument("paths", nargs="*", metavar="FILE", help=".log, .index or .timeindex")
    dump.add_argument("--files", default="", help="comma-separated files (Kafka's spelling)")
    dump.add_argument(
        "--records",
        "--deep-iteration",
        dest="records",
        action="store_true",
        help="print every record, not only batches",
    )
    dump.add_argument(
        "--print-data-log", action="store_true", help="print keys and values (implies --records)"
    )
    dump.add_argument("--max-bytes", type=int, default=INT32_MAX)
    args = parser.parse_args(argv)

    if args.command == "dump-log":
        paths = [*args.paths, *(p for p in args.files.split(",") if p)]
        if not paths:
            dump.error("no files given")
        return dump_log(
            paths, records=args.records, print_data=args.print_data_log, max_bytes=args.max_bytes
        )
    return serve(args.config, args.override, args.log_level)


if __name__ == "__main__":
    sys.exit(main())
