"""Declarative message schemas: versions are data, not classes.

A schema is a list of :class:`Field` rows. Each row names a field, its type, the versions it exists
in, the versions in which it may be null, and (for tagged fields) its tag. ``struct()`` turns a list
of rows into a value class with ``__slots__``; ``message()`` does the same for a whole request or
response and records its API key, valid versions and flexible versions.

Codecs are not written by hand: :mod:`protocol.codegen` compiles one encoder and one decoder per
(message, version) on first use, and :mod:`protocol.reference` interprets the same rows slowly, as
the yardstick the compiled codecs are tested against.

Example::

    Partition = struct("Partition", [
        f("index", INT32),
        f("records", RECORDS, null="0+"),
    ])
    ProduceRequest = message("ProduceRequest", api_key=0, kind="request",
                             valid="0-13", flexible="9+", fields=[...])
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from protocol.errors import LocalProtocolError
from protocol.primitives import ZERO_UUID

# --- versions --------------------------------------------------------------------------------

MAX_VERSION = 0x7FFF


class Versions(NamedTuple):
    """An inclusive version range; ``lo > hi`` means no version at all."""

    lo: int
    hi: int

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.lo <= version <= self.hi

    @property
    def empty(self) -> bool:
        return self.lo > self.hi

    def intersect(self, other: Versions) -> Versions:
        return Versions(max(self.lo, other.lo), min(self.hi, other.hi))

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.hi >= MAX_VERSION:
            return f"{self.lo}+"
        return f"{self.lo}" if self.lo == self.hi else f"{self.lo}-{self.hi}"

    @classmethod
    def parse(cls, spec: str | Versions | None) -> Versions:
        """``"3+"``, ``"0-12"``, ``"7"`` or ``"none"`` (Kafka's notation)."""
        if isinstance(spec, Versions):
            return spec
        if spec is None or spec == "none":
            return NO_VERSIONS
        spec = spec.strip()
        if spec.endswith("+"):
            return cls(int(spec[:-1]), MAX_VERSION)
        if "-" in spec:
            lo, hi = spec.split("-", 1)
            return cls(int(lo), int(hi))
        return cls(int(spec), int(spec))


NO_VERSIONS = Versions(0, -1)
ALL_VERSIONS = Versions(0, MAX_VERSION)


# --- types -----------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Primitive:
    """A primitive protocol type. ``fmt`` is its struct format when it has a fixed width."""

    name: str
    fmt: str | None
    default: Any

    def __repr__(self) -> str:
        return self.name


BOOL = Primitive("bool", "?", False)
INT8 = Primitive("int8", "b", 0)
INT16 = Primitive("int16", "h", 0)
INT32 = Primitive("int32", "i", 0)
INT64 = Primitive("int64", "q", 0)
UINT16 = Primitive("uint16", "H", 0)
UINT32 = Primitive("uint32", "I", 0)
FLOAT64 = Primitive("float64", "d", 0.0)
UUID = Primitive("uuid", "16s", ZERO_UUID)
STRING = Primitive("string", None, "")
BYTES = Primitive("bytes", None, b"")
#: A record batch blob (or legacy message set): kept as a zero-copy view when decoded.
RECORDS = Primitive("records", None, None)

PRIMITIVES: tuple[Primitive, ...] = (
    BOOL,
    INT8,
    INT16,
    INT32,
    INT64,
    UINT16,
    UINT32,
    FLOAT64,
    UUID,
    STRING,
    BYTES,
    RECORDS,
)


@dataclass(frozen=True, eq=False)
class ArrayOf:
    """An array of a primitive or of a struct."""

    element: FieldType

    def __repr__(self) -> str:
        name = self.element.__name__ if isinstance(self.element, type) else repr(self.element)
        return f"[{name}]"


FieldType = Primitive | ArrayOf | type["Struct"]


def array(element: FieldType) -> ArrayOf:
    return ArrayOf(element)


# --- fields ----------------------------------------------------------------------------------


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


@dataclass(frozen=True, eq=False)
class Field:
    """One row of a schema."""

    name: str
    type: FieldType
    versions: Versions
    nullable: Versions
    tag: int | None
    tagged: Versions
    default: Any

    def is_nullable(self, version: int) -> bool:
        return version in self.nullable

    def is_tagged(self, version: int, flexible: bool) -> bool:
        return flexible and self.tag is not None and version in self.tagged

    def make_default(self) -> Any:
        """The default value: a fresh list for arrays; for a struct of primitives, one shared
        frozen instance (see :func:`frozen_default`); otherwise a fresh struct."""
        d = self.default
        if d is MISSING:
            t = self.type
            if isinstance(t, ArrayOf):
                return []
            if isinstance(t, type):
                if _all_primitive(t):
                    return frozen_default(t)
                return t()
            return t.default
        return d

    @property
    def default_is_mutable(self) -> bool:
        """True when every value needs its own default object (arrays, structs with arrays)."""
        if self.default is not MISSING or isinstance(self.type, Primitive):
            return False
        return not (isinstance(self.type, type) and _all_primitive(self.type))


def f(
    name: str,
    type: FieldType,
    v: str | Versions = "0+",
    *,
    null: str | Versions | None = None,
    tag: int | None = None,
    tagged: str | Versions | None = None,
    default: Any = MISSING,
) -> Field:
    """A schema row. ``v``: versions the field exists in; ``null``: versions where it may be
    null; ``tag``: its tag in flexible versions (``tagged`` narrows the versions where the tag
    applies; it defaults to all of ``v``); ``default``: Kafka's default, for absent fields."""
    versions = Versions.parse(v)
    if tag is not None:
        tagged_versions = versions if tagged is None else Versions.parse(tagged)
    else:
        tagged_versions = NO_VERSIONS
    if default is None and null is None:
        raise LocalProtocolError(f"field {name}: a null default needs nullable versions")
    if isinstance(default, str) and type is UUID:
        default = uuid.UUID(default)
    return Field(
        name=name,
        type=type,
        versions=versions,
        nullable=Versions.parse(null),
        tag=tag,
        tagged=tagged_versions,
        default=default,
    )


# --- value classes ---------------------------------------------------------------------------


class Struct:
    """Base of every generated value class: slots, keyword construction, equality, repr."""

    __slots__ = ()
    __fields__: ClassVar[tuple[Field, ...]] = ()
    #: per-version compiled codecs, filled by protocol.codegen on first use
    __codecs__: ClassVar[dict[tuple[str, int], Any]]

    if TYPE_CHECKING:
        # Generated classes accept their fields as keywords and expose them as attributes.
        def __init__(self, *args: Any, **kwargs: Any) -> None: ...
        def __getattr__(self, name: str) -> Any: ...
        def __setattr__(self, name: str, value: Any) -> None: ...

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Struct) or other.__fields__ is not self.__fields__:
            return NotImplemented
        return all(getattr(self, fl.name) == getattr(other, fl.name) for fl in self.__fields__)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        parts = []
        for fl in self.__fields__:
            value = getattr(self, fl.name)
            if isinstance(value, memoryview):
                parts.append(f"{fl.name}=<{len(value)} bytes>")
            else:
                parts.append(f"{fl.name}={value!r}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def to_dict(self) -> dict[str, Any]:
        """Plain values, recursively (for logging, tests and JSON)."""
        return {fl.name: _plain(getattr(self, fl.name)) for fl in self.__fields__}

    def replace(self, **changes: Any) -> Any:
        """A copy with some fields changed (also works on frozen defaults)."""
        values = {fl.name: getattr(self, fl.name) for fl in self.__fields__}
        values.update(changes)
        return self.__struct_class__(**values)

    @property
    def __struct_class__(self) -> type[Struct]:
        cls = type(self)
        return cls.__base__ if cls.__dict__.get("__frozen_class__") else cls  # type: ignore[return-value]


def _all_primitive(cls: type[Struct]) -> bool:
    return all(isinstance(fl.type, Primitive) for fl in cls.__fields__)


def _refuse_mutation(self: Struct, name: str, value: Any) -> None:
    raise LocalProtocolError(
        f"{type(self).__name__} here is a shared default and cannot be changed; "
        f"assign a new {type(self).__name__}(...) instead"
    )


def frozen_default(cls: type[Struct]) -> Struct:
    """The one shared, immutable all-defaults instance of a struct made only of primitives.

    Absent tagged structs (a Fetch partition's ``diverging_epoch``, say) take this value, so
    decoders do not allocate them and encoders recognise them by identity.
    """
    inst: Struct | None = cls.__dict__.get("__frozen_default__")
    if inst is None:
        frozen_cls = type(
            cls.__name__,
            (cls,),
            {
                "__slots__": (),
                "__setattr__": _refuse_mutation,
                "__frozen_class__": True,
                "__module__": cls.__module__,
            },
        )
        inst = object.__new__(frozen_cls)
        for fl in cls.__fields__:
            object.__setattr__(inst, fl.name, fl.make_default())
        type.__setattr__(cls, "__frozen_default__", inst)
    return inst


def _plain(value: Any) -> Any:
    if isinstance(value, Struct):
        return value.to_dict()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, memoryview):
        return bytes(value)
    return value


def _check_fields(name: str, fields: Sequence[Field]) -> None:
    seen: set[str] = set()
    tags: dict[int, str] = {}
    for fl in fields:
        if fl.name in seen:
            raise LocalProtocolError(f"{name}: duplicate field {fl.name}")
        seen.add(fl.name)
        if fl.tag is not None:
            if fl.tag in tags:
                raise LocalProtocolError(
                    f"{name}: tag {fl.tag} used by {tags[fl.tag]} and {fl.name}"
                )
            tags[fl.tag] = fl.name
        if fl.name.startswith("_") or not fl.name.isidentifier():
            raise LocalProtocolError(f"{name}: bad field name {fl.name!r}")


def _make_init(fields: Sequence[Field]) -> Callable[..., None]:
    """``__init__(self, a=default, ...)``: positional or keyword, fresh mutable defaults."""
    ns: dict[str, Any] = {"MISSING": MISSING}
    params = []
    body = []
    for i, fl in enumerate(fields):
        if fl.default_is_mutable:
            ns[f"_mk{i}"] = fl.make_default
            params.append(f"{fl.name}=MISSING")
            body.append(f"    self.{fl.name} = _mk{i}() if {fl.name} is MISSING else {fl.name}")
        else:
            ns[f"_d{i}"] = fl.make_default()
            params.append(f"{fl.name}=_d{i}")
            body.append(f"    self.{fl.name} = {fl.name}")
    if params:
        src = f"def __init__(self, {', '.join(params)}):\n" + "\n".join(body)
    else:
        src = "def __init__(self):\n    pass"
    exec(compile(src, "<schema-init>", "exec"), ns)
    init: Callable[..., None] = ns["__init__"]
    return init


def _caller_module(depth: int = 2) -> str:
    """The module that called our caller (so generated classes belong to the schema module)."""
    try:
        return str(sys._getframe(depth).f_globals.get("__name__", __name__))
    except (AttributeError, ValueError):  # pragma: no cover - non-CPython
        return __name__


def struct(name: str, fields: Iterable[Field]) -> type[Struct]:
    """A value class for a (nested) struct with the given schema rows."""
    rows = tuple(fields)
    _check_fields(name, rows)
    namespace: dict[str, Any] = {
        "__module__": _caller_module(),
        "__slots__": tuple(fl.name for fl in rows),
        "__fields__": rows,
        "__init__": _make_init(rows),
        "__qualname__": name,
    }
    cls: type[Struct] = type(name, (Struct,), namespace)
    cls.__codecs__ = {}
    _expose_nested(cls, cls, set())
    return cls


class Message(Struct):
    """Base of top-level requests and responses."""

    __slots__ = ()
    api_key: ClassVar[int]
    kind: ClassVar[str]  # "request" | "response" | "data"
    valid_versions: ClassVar[Versions]
    flexible_versions: ClassVar[Versions]


def message(
    name: str,
    *,
    api_key: int,
    kind: str,
    valid: str,
    flexible: str,
    fields: Iterable[Field],
) -> type[Message]:
    """A top-level request or response (``kind``), valid in ``valid`` versions, using compact
    encodings and tagged fields in ``flexible`` versions."""
    if kind not in ("request", "response", "data"):
        raise LocalProtocolError(f"{name}: kind must be request, response or data")
    rows = tuple(fields)
    _check_fields(name, rows)
    namespace: dict[str, Any] = {
        "__module__": _caller_module(),
        "__slots__": tuple(fl.name for fl in rows),
        "__fields__": rows,
        "__init__": _make_init(rows),
        "__qualname__": name,
        "api_key": api_key,
        "kind": kind,
        "valid_versions": Versions.parse(valid),
        "flexible_versions": Versions.parse(flexible),
    }
    cls: type[Message] = type(name, (Message,), namespace)
    cls.__codecs__ = {}
    _expose_nested(cls, cls, set())
    return cls


def _expose_nested(root: type[Struct], cls: type[Struct], seen: set[type[Struct]]) -> None:
    """Make every nested struct class reachable from its root.

    For example ``ProduceRequest.TopicProduceData``."""
    for fl in cls.__fields__:
        t = fl.type.element if isinstance(fl.type, ArrayOf) else fl.type
        if isinstance(t, type) and issubclass(t, Struct) and t not in seen:
            seen.add(t)
            if not hasattr(root, t.__name__):
                setattr(root, t.__name__, t)
            _expose_nested(root, t, seen)
