"""Logger levels as BROKER_LOGGER resources (KIP-412): DescribeConfigs lists this broker's
loggers with their effective levels; IncrementalAlterConfigs SET changes a logger's level at
once and DELETE resets it to the root logger's. As in Kafka, these changes are not persisted:
a restart starts from the configured levels.

Level names are Kafka's (log4j's): OFF, FATAL, ERROR, WARN, INFO, DEBUG, TRACE, ALL, mapped to
Python's levels. Logger names are this broker's module loggers (``broker.replication.
replica_manager``...) and ``root``.
"""

from __future__ import annotations

import logging

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
