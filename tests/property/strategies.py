"""Hypothesis strategies derived from our schemas: a value for any (message, version)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from hypothesis import strategies as st

from protocol.schema import (
    BOOL,
    BYTES,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    RECORDS,
    STRING,
    UINT16,
    UINT32,
    UUID,
    ArrayOf,
    FieldType,
    Struct,
)

_PRIMITIVES: dict[Any, st.SearchStrategy[Any]] = {
    BOOL: st.booleans(),
    INT8: st.integers(-(2**7), 2**7 - 1),
    INT16: st.integers(-(2**15), 2**15 - 1),
    INT32: st.integers(-(2**31), 2**31 - 1),
    INT64: st.integers(-(2**63), 2**63 - 1),
    UINT16: st.integers(0, 2**16 - 1),
    UINT32: st.integers(0, 2**32 - 1),
    FLOAT64: st.floats(allow_nan=False),
    UUID: st.one_of(st.just(uuid.UUID(int=0)), st.uuids()),
    STRING: st.text(max_size=12),
    BYTES: st.binary(max_size=12),
    RECORDS: st.binary(max_size=40),
}


#: Optional constraints: (struct class, field name) -> strategy for that field's primitive values
#: (its elements, for an array of primitives). Oracles that cannot hold every value of a type use
#: them (see tests/property/oracles.py).
Overrides = Mapping[tuple[type[Struct], str], st.SearchStrategy[Any]]


def value_of(
    t: FieldType,
    version: int,
    nullable: bool,
    depth: int = 0,
    overrides: Overrides | None = None,
    leaf: st.SearchStrategy[Any] | None = None,
) -> st.SearchStrategy[Any]:
    if isinstance(t, ArrayOf):
        inner = st.lists(
            value_of(t.element, version, False, depth + 1, overrides, leaf),
            max_size=3 if depth < 2 else 1,
        )
    elif isinstance(t, type) and issubclass(t, Struct):
        inner = struct_of(t, version, depth + 1, overrides)
    else:
        inner = _PRIMITIVES[t] if leaf is None else leaf
    if nullable:
        return st.one_of(st.none(), inner)
    return inner


def struct_of(
    cls: type[Struct], version: int, depth: int = 0, overrides: Overrides | None = None
) -> st.SearchStrategy[Any]:
    """Values of ``cls`` as they exist at ``version``: absent fields keep their defaults."""
    fields: dict[str, st.SearchStrategy[Any]] = {}
    for fl in cls.__fields__:
        if version in fl.versions:
            leaf = overrides.get((cls, fl.name)) if overrides else None
            fields[fl.name] = value_of(
                fl.type, version, fl.is_nullable(version), depth, overrides, leaf
            )
        else:
            fields[fl.name] = st.builds(fl.make_default)
    return st.builds(cls, **fields)
