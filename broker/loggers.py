"""Logger levels as BROKER_LOGGER resources (KIP-412): DescribeConfigs lists this broker's
loggers with their effective levels; IncrementalAlterConfigs SET changes a logger's level at
once and DELETE resets it to the root logger's. As in Kafka, these changes are not persisted:
a restart starts from the configured levels.

Log lines (:func:`configure`, ``log.format``): Kafka's log4j layout by default
(:class:`KafkaFormatter`), or one JSON object per line (:class:`JsonFormatter`).

Level names are Kafka's (log4j's): OFF, FATAL, ERROR, WARN, INFO, DEBUG, TRACE, ALL, mapped to
Python's levels. Logger names are this broker's module loggers (``broker.replication.
replica_manager``...) and ``root``.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import TextIO

ROOT = "root"

#: log4j level name -> Python level
LEVELS = {
    "OFF": logging.CRITICAL + 10,
    "FATAL": logging.CRITICAL,
    "ERROR": logging.ERROR,
    "WARN": logging.WARNING,
    "INFO": logging.INFO,
    "DEBUG": logging.DEBUG,
    "TRACE": 5,
    "ALL": 1,
}


def level_name(level: int) -> str:
    """The log4j name of a Python level (the closest at or below it)."""
    best = "ALL"
    for name, value in sorted(LEVELS.items(), key=lambda item: item[1]):
        if value <= level:
            best = name
    return best


class InvalidLoggerConfig(ValueError):
    """A logger or level that does not exist."""


def _logger(name: str) -> logging.Logger:
    if name == ROOT:
        return logging.getLogger()
    if name not in logging.root.manager.loggerDict:
        raise InvalidLoggerConfig(f"Logger {name} does not exist")
    return logging.getLogger(name)


def describe(names: list[str] | None = None) -> list[tuple[str, str]]:
    """(logger, effective level) for ``names`` (None: every logger)."""
    if names is None:
        names = [ROOT, *sorted(n for n, v in logging.root.manager.loggerDict.items()
                                if isinstance(v, logging.Logger))]  # fmt: skip
    out = []
    for name in names:
        out.append((name, level_name(_logger(name).getEffectiveLevel())))
    return out


def check(name: str, level: str | None) -> None:
    _logger(name)
    if level is not None and level.upper() not in LEVELS:
        raise InvalidLoggerConfig(
            f"Cannot set the log level of {name} to {level} as it is not a supported log level. "
            f"Valid levels are {', '.join(LEVELS)}"
        )


def set_level(name: str, level: str) -> None:
    check(name, level)
    _logger(name).setLevel(LEVELS[level.upper()])
    logging.getLogger(__name__).info("logger %s set to %s", name, level.upper())


def reset(name: str) -> None:
    """Back to the root logger's level (Kafka's DELETE on a BROKER_LOGGER key)."""
    if name == ROOT:
        raise InvalidLoggerConfig("Removing the log level of the root logger is not allowed")
    _logger(name).setLevel(logging.NOTSET)


# -- log line formats (log.format) -------------------------------------------------------------

#: Python level -> the name Kafka's log4j layout prints
_PRINTED = {logging.WARNING: "WARN", logging.CRITICAL: "FATAL", 5: "TRACE"}


def _printed_level(record: logging.LogRecord) -> str:
    return _PRINTED.get(record.levelno, record.levelname)


class KafkaFormatter(logging.Formatter):
    """Kafka's log4j layout, ``[%d] %p %m (%c)%n``:
    ``[2024-01-01 12:00:00,123] INFO message (logger.name)``, local time, the traceback (if
    any) on the lines after."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        # formatTime's default: local time, yyyy-MM-dd HH:mm:ss,SSS as log4j's %d
        line = f"[{self.formatTime(record)}] {_printed_level(record)} {message} ({record.name})"
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line += "\n" + record.exc_text
        if record.stack_info:
            line += "\n" + self.formatStack(record.stack_info)
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ``time`` (ISO 8601, UTC, ms), ``level`` (Kafka's names),
    ``logger``, ``thread``, ``message`` and, when there is one, ``exception`` (the traceback)."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        entry: dict[str, str] = {
            "time": f"{stamp}.{int(record.msecs):03d}Z",
            "level": _printed_level(record),
            "logger": record.name,
            "thread": record.threadName or "",
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False)


#: log.format values
FORMATS = {"kafka": KafkaFormatter, "json": JsonFormatter}


def configure(fmt: str = "kafka", level: str = "INFO", stream: TextIO | None = None) -> None:
    """The root handler (stderr) with the format ``fmt`` and the level (a Python or log4j name);
    loggers' own levels (BROKER_LOGGER configs) still apply below it."""
    formatter = FORMATS[fmt.lower()]()
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    name = level.upper()
    root.setLevel(LEVELS.get(name, getattr(logging, name, logging.INFO)))
