"""JAAS login contexts as Kafka reads them from ``sasl.jaas.config`` (and its per-listener,
per-mechanism forms ``listener.name.<listener>.<mechanism>.sasl.jaas.config``).

The syntax is the one of a JAAS configuration entry (Kafka's ``JaasConfig``)::

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret"
        user_admin="admin-secret" user_alice="alice-secret";

one or more login modules, each a class name, a control flag (``required``, ``requisite``,
``sufficient``, ``optional``), ``name=value`` options (values quoted with ``"`` or bare) and a
``;``. For the broker, PlainLoginModule's ``user_<name>`` options are the users SASL/PLAIN
accepts; ``username``/``password`` are what the broker itself presents to other brokers.

Values are secrets: nothing here logs them, and errors name the position, never the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
#: PlainLoginModule's prefix for the users the broker accepts
USER_PREFIX = "user_"
_FLAGS = frozenset({"required", "requisite", "sufficient", "optional"})

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<quoted>"(?:[^"\\]|\\.)*")
      | (?P<eq>=)
      | (?P<semi>;)
      | (?P<word>[^\s=;"]+)
    )""",
    re.VERBOSE,
)


class JaasConfigError(ValueError):
    """A JAAS configuration that cannot be read (the message never quotes its values)."""


@dataclass(frozen=True)
class LoginModule:
    class_name: str
    flag: str
    options: dict[str, str] = field(default_factory=dict)


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out: list[tuple[str, str, int]] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise JaasConfigError(f"unexpected character at offset {pos}")
        kind = m.lastgroup or ""
        value = m.group(kind)
        if kind == "quoted":
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        out.append((kind, value, m.start(kind)))
        pos = m.end()
    return out


def parse_jaas_config(text: str) -> list[LoginModule]:
    """The login modules of a JAAS configuration entry; raises :class:`JaasConfigError`."""
    tokens = _tokens(text)
    modules: list[LoginModule] = []
    i = 0
    while i < len(tokens):
        kind, class_name, at = tokens[i]
        if kind != "word":
            raise JaasConfigError(f"expected a login module class name at offset {at}")
        if i + 1 >= len(tokens) or tokens[i + 1][0] != "word":
            raise JaasConfigError(f"expected a control flag after the class name at offset {at}")
        flag = tokens[i + 1][1].lower()
        if flag not in _FLAGS:
            raise JaasConfigError(
                f"invalid control flag at offset {tokens[i + 1][2]} "
                f"(expected one of {', '.join(sorted(_FLAGS))})"
            )
        i += 2
        options: dict[str, str] = {}
        while True:
            if i >= len(tokens):
                raise JaasConfigError("a login module must end with ';'")
            kind, name, at = tokens[i]
            if kind == "semi":
                i += 1
                break
            if kind != "word" or i + 2 >= len(tokens) or tokens[i + 1][0] != "eq":
                raise JaasConfigError(f"expected name=value at offset {at}")
            value_kind, value, _ = tokens[i + 2]
            if value_kind not in ("word", "quoted"):
                raise JaasConfigError(f"expected a value after '=' at offset {tokens[i + 1][2]}")
            options[name] = value
            i += 3
        modules.append(LoginModule(class_name, flag, options))
    if not modules:
        raise JaasConfigError("no login module")
    return modules


def module_options(modules: list[LoginModule], class_name: str) -> dict[str, str] | None:
    """The options of the first login module of class ``class_name`` (None: not present)."""
    for m in modules:
        if m.class_name == class_name:
            return m.options
    return None


def plain_users(options: dict[str, str]) -> dict[str, str]:
    """PlainLoginModule's ``user_<name>="<password>"`` options as {name: password}."""
    return {k[len(USER_PREFIX) :]: v for k, v in options.items() if k.startswith(USER_PREFIX)}
