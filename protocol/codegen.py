"""Compiles schemas into flat Python encoders and decoders, once per (message, version, direction).

The generated code is straight-line: consecutive fixed-width fields are read and written with one
``struct`` call, small varints are handled inline, nested structs and arrays are inlined into the
same function, and record blobs stay zero-copy (a ``memoryview`` slice on decode, a separate
buffer in the output list on encode). Tracebacks name the code
``<codegen:FetchResponse_v12_encode>`` and show its source lines.

:mod:`protocol.reference` interprets the same schemas slowly; the tests hold the two to the same
bytes.
"""

from __future__ import annotations

import linecache
import struct
from collections.abc import Callable
from typing import Any

from protocol.errors import LocalProtocolError, MalformedMessage
from protocol.primitives import read_uvarint, uuid_from_bytes, uuid_to_bytes, uvarint_bytes
from protocol.schema import (
    BYTES,
    MISSING,
    RECORDS,
    STRING,
    UUID,
    ArrayOf,
    Field,
    FieldType,
    Message,
    Primitive,
    Struct,
)

Decoder = Callable[[Any, int], tuple[Any, int]]
Encoder = Callable[[Any, list[Any]], None]

#: Record blobs at most this long are copied into the surrounding buffer instead of being
#: emitted as a separate piece: a separate piece costs more than copying a small one.
INLINE_RECORDS_MAX = 512

_BYTES_LIKE = (bytes, bytearray, memoryview)


def _mal(msg: str) -> MalformedMessage:
    return MalformedMessage(msg)


def _unpack_array(code: str, n: int, buf: Any, pos: int) -> list[Any]:
    return list(struct.unpack_from(f">{n}{code}", buf, pos))


def _pack_array(code: str, values: list[Any]) -> bytes:
    return struct.pack(f">{len(values)}{code}", *values)


_RUNTIME: dict[str, Any] = {
    "_mal": _mal,
    "_ruv": read_uvarint,
    "_uvb": uvarint_bytes,
    "_uuid": uuid_from_bytes,
    "_ub": uuid_to_bytes,
    "_unpack_array": _unpack_array,
    "_pack_array": _pack_array,
    "_h": struct.Struct(">h").unpack_from,
    "_i": struct.Struct(">i").unpack_from,
    "_b": struct.Struct(">b").unpack_from,
    "_ph": struct.Struct(">h").pack,
    "_pi": struct.Struct(">i").pack,
    "_BYTES_LIKE": _BYTES_LIKE,
    "_str": str,
    "_bytes": bytes,
    "_bytearray": bytearray,
    "_new": object.__new__,
    "_LocalProtocolError": LocalProtocolError,
    "_MalformedMessage": MalformedMessage,
    "_struct_error": struct.error,
}


def _is_fixed(t: FieldType) -> bool:
    return isinstance(t, Primitive) and t.fmt is not None


def _fmt(t: FieldType) -> str:
    assert isinstance(t, Primitive) and t.fmt is not None
    return t.fmt


def _struct_of(t: FieldType) -> type[Struct] | None:
    if isinstance(t, type) and issubclass(t, Struct):
        return t
    return None


class _Emitter:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.ns: dict[str, Any] = dict(_RUNTIME)
        self._n = 0
        self._consts: dict[int, str] = {}

    def emit(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def var(self, prefix: str = "v") -> str:
        self._n += 1
        return f"{prefix}{self._n}"

    def const(self, value: Any, prefix: str = "_c") -> str:
        key = id(value)
        name = self._consts.get(key)
        if name is None:
            name = f"{prefix}{len(self._consts)}"
            self._consts[key] = name
            self.ns[name] = value
        return name

    def build(self, name: str, filename: str) -> Callable[..., Any]:
        src = "\n".join(self.lines) + "\n"
        linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
        exec(compile(src, filename, "exec"), self.ns)
        fn: Callable[..., Any] = self.ns[name]
        fn.__source__ = src  # type: ignore[attr-defined]
        return fn


# --- decoding --------------------------------------------------------------------------------


class _DecodeGen:
    def __init__(self, em: _Emitter, version: int, flexible: bool) -> None:
        self.em = em
        self.version = version
        self.flexible = flexible

    def uvarint(self, ind: int, target: str) -> None:
        em = self.em
        em.emit(ind, f"{target} = buf[pos]")
        em.emit(ind, f"if {target} < 128:")
        em.emit(ind + 1, "pos += 1")
        em.emit(ind, "else:")
        em.emit(ind + 1, f"{target}, pos = _ruv(buf, pos)")

    def long_uvarint(self, ind: int, target: str) -> None:
        """An unsigned varint that is often 2-3 bytes (record blob lengths): inlined."""
        em = self.em
        b1, b2 = em.var("b"), em.var("b")
        em.emit(ind, f"{target} = buf[pos]")
        em.emit(ind, f"if {target} < 128:")
        em.emit(ind + 1, "pos += 1")
        em.emit(ind, "else:")
        em.emit(ind + 1, f"{b1} = buf[pos + 1]")
        em.emit(ind + 1, f"if {b1} < 128:")
        em.emit(ind + 2, f"{target} = ({target} & 127) | ({b1} << 7)")
        em.emit(ind + 2, "pos += 2")
        em.emit(ind + 1, "else:")
        em.emit(ind + 2, f"{b2} = buf[pos + 2]")
        em.emit(ind + 2, f"if {b2} < 128:")
        em.emit(ind + 3, f"{target} = ({target} & 127) | (({b1} & 127) << 7) | ({b2} << 14)")
        em.emit(ind + 3, "pos += 3")
        em.emit(ind + 2, "else:")
        em.emit(ind + 3, f"{target}, pos = _ruv(buf, pos)")

    def length(self, ind: int, target: str, int32: bool, long: bool = False) -> None:
        """A length or count: compact (uvarint - 1) in flexible versions, else int16/int32."""
        em = self.em
        if self.flexible:
            if long:
                self.long_uvarint(ind, target)
            else:
                self.uvarint(ind, target)
            em.emit(ind, f"{target} -= 1")
        elif int32:
            em.emit(ind, f"{target}, = _i(buf, pos)")
            em.emit(ind, "pos += 4")
        else:
            em.emit(ind, f"{target}, = _h(buf, pos)")
            em.emit(ind, "pos += 2")

    def null_check(self, ind: int, n: str, target: str, nullable: bool, what: str) -> None:
        """Opens ``if n < 0: ... else:``; the caller emits the non-null branch at ind + 1."""
        em = self.em
        em.emit(ind, f"if {n} < 0:")
        if nullable:
            em.emit(ind + 1, f"if {n} != -1:")
            em.emit(ind + 2, f"raise _mal('invalid {what} length ' + str({n}))")
            em.emit(ind + 1, f"{target} = None")
        else:
            em.emit(ind + 1, f"raise _mal('null or negative length for non-nullable {what}')")
        em.emit(ind, "else:")

    def default_expr(self, fl: Field) -> str:
        if fl.default_is_mutable:
            if isinstance(fl.type, ArrayOf):
                return "[]"
            return f"{self.em.const(fl.make_default, '_mk')}()"
        return self.em.const(fl.make_default(), "_d")

    def value(self, ind: int, t: FieldType, nullable: bool, target: str, what: str) -> None:
        em = self.em
        if _is_fixed(t):
            assert isinstance(t, Primitive) and t.fmt is not None
            s = struct.Struct(">" + t.fmt)
            em.emit(ind, f"{target}, = {em.const(s.unpack_from, '_u')}(buf, pos)")
            em.emit(ind, f"pos += {s.size}")
            if t is UUID:
                em.emit(ind, f"{target} = _uuid({target})")
            return
        if t is STRING or t is BYTES or t is RECORDS:
            n = em.var("n")
            self.length(ind, n, int32=t is not STRING, long=t is RECORDS)
            self.null_check(ind, n, target, nullable, t.name)
            e = em.var("e")
            em.emit(ind + 1, f"{e} = pos + {n}")
            em.emit(ind + 1, f"if {e} > blen:")
            em.emit(ind + 2, f"raise _mal('{what}: length ' + str({n}) + ' runs past the end')")
            if t is STRING:
                em.emit(ind + 1, f"{target} = _str(buf[pos:{e}], 'utf-8')")
            elif t is BYTES:
                em.emit(ind + 1, f"{target} = _bytes(buf[pos:{e}])")
            else:
                em.emit(ind + 1, f"{target} = buf[pos:{e}]")
            em.emit(ind + 1, f"pos = {e}")
            return
        if isinstance(t, ArrayOf):
            n = em.var("n")
            self.length(ind, n, int32=True)
            self.null_check(ind, n, target, nullable, "array")
            el = t.element
            if _is_fixed(el):
                assert isinstance(el, Primitive) and el.fmt is not None
                size = struct.calcsize(">" + el.fmt)
                em.emit(ind + 1, f"if {n} * {size} > blen - pos:")
                em.emit(
                    ind + 2, f"raise _mal('{what}: array of ' + str({n}) + ' runs past the end')"
                )
                if el is UUID:
                    em.emit(
                        ind + 1,
                        f"{target} = [_uuid(x) for x in _unpack_array('16s', {n}, buf, pos)]",
                    )
                else:
                    em.emit(ind + 1, f"{target} = _unpack_array('{el.fmt}', {n}, buf, pos)")
                em.emit(ind + 1, f"pos += {n} * {size}")
                return
            em.emit(ind + 1, f"if {n} > blen - pos:")
            em.emit(ind + 2, f"raise _mal('{what}: array of ' + str({n}) + ' runs past the end')")
            em.emit(ind + 1, f"{target} = []")
            app = em.var("app")
            em.emit(ind + 1, f"{app} = {target}.append")
            em.emit(ind + 1, f"for _ in range({n}):")
            x = em.var("x")
            self.value(ind + 2, el, False, x, what)
            em.emit(ind + 2, f"{app}({x})")
            return
        cls = _struct_of(t)
        if cls is None:
            raise LocalProtocolError(f"unknown field type {t!r}")
        if nullable:
            m = em.var("m")
            em.emit(ind, f"{m}, = _b(buf, pos)")
            em.emit(ind, "pos += 1")
            em.emit(ind, f"if {m} < 0:")
            em.emit(ind + 1, f"{target} = None")
            em.emit(ind, "else:")
            self.struct(ind + 1, cls, target)
        else:
            self.struct(ind, cls, target)

    def struct(self, ind: int, cls: type[Struct], target: str) -> None:
        em = self.em
        version = self.version
        args: list[str] = []
        tagged: list[tuple[Field, str]] = []
        pending: list[tuple[Field, str]] = []

        def flush() -> None:
            if not pending:
                return
            fmt = ">" + "".join(_fmt(fl.type) for fl, _ in pending)
            s = struct.Struct(fmt)
            names = ", ".join(v for _, v in pending)
            em.emit(ind, f"{names}, = {em.const(s.unpack_from, '_u')}(buf, pos)")
            em.emit(ind, f"pos += {s.size}")
            for fl, v in pending:
                if fl.type is UUID:
                    em.emit(ind, f"{v} = _uuid({v})")
            pending.clear()

        for fl in cls.__fields__:
            if version not in fl.versions:
                args.append(self.default_expr(fl))
                continue
            v = em.var("f")
            args.append(v)
            if fl.is_tagged(version, self.flexible):
                em.emit(ind, f"{v} = {self.default_expr(fl)}")
                tagged.append((fl, v))
            elif _is_fixed(fl.type):
                pending.append((fl, v))
            else:
                flush()
                self.value(ind, fl.type, fl.is_nullable(version), v, f"{cls.__name__}.{fl.name}")
        flush()
        if self.flexible:
            self.tagged_fields(ind, tagged)
        # Every slot gets a value, so __init__ (and its defaults logic) is not needed.
        em.emit(ind, f"{target} = _new({em.const(cls, '_S')})")
        for fl, arg in zip(cls.__fields__, args, strict=True):
            em.emit(ind, f"{target}.{fl.name} = {arg}")

    def tagged_fields(self, ind: int, tagged: list[tuple[Field, str]]) -> None:
        em = self.em
        nt = em.var("nt")
        em.emit(ind, f"{nt} = buf[pos]")
        em.emit(ind, "pos += 1")
        em.emit(ind, f"if {nt}:")
        ind += 1
        em.emit(ind, f"if {nt} >= 128:")
        em.emit(ind + 1, f"{nt}, pos = _ruv(buf, pos - 1)")
        em.emit(ind, f"for _ in range({nt}):")
        tag, size, end = em.var("tag"), em.var("sz"), em.var("te")
        self.uvarint(ind + 1, tag)
        self.uvarint(ind + 1, size)
        em.emit(ind + 1, f"{end} = pos + {size}")
        em.emit(ind + 1, f"if {end} > blen:")
        em.emit(ind + 2, "raise _mal('tagged field runs past the end')")
        kw = "if"
        for fl, v in sorted(tagged, key=lambda item: item[0].tag or 0):
            em.emit(ind + 1, f"{kw} {tag} == {fl.tag}:")
            self.value(ind + 2, fl.type, fl.is_nullable(self.version), v, fl.name)
            kw = "elif"
        em.emit(ind + 1, f"pos = {end}")


def compile_decoder(cls: type[Struct], version: int, flexible: bool) -> Decoder:
    name = f"{cls.__name__}_v{version}_decode"
    em = _Emitter()
    gen = _DecodeGen(em, version, flexible)
    em.emit(0, "def decode(buf, pos):")
    em.emit(1, "blen = len(buf)")
    em.emit(1, "try:")
    gen.struct(2, cls, "result")
    em.emit(
        1, "except (IndexError, _struct_error, UnicodeDecodeError, ValueError, OverflowError) as e:"
    )
    em.emit(2, f"raise _MalformedMessage('{cls.__name__} v{version}: ' + str(e)) from None")
    em.emit(1, "return result, pos")
    fn: Decoder = em.build("decode", f"<codegen:{name}>")
    return fn


# --- encoding --------------------------------------------------------------------------------


class _EncodeGen:
    def __init__(self, em: _Emitter, version: int, flexible: bool) -> None:
        self.em = em
        self.version = version
        self.flexible = flexible

    def uvarint(self, ind: int, buf: str, expr: str) -> None:
        em = self.em
        u = em.var("u")
        em.emit(ind, f"{u} = {expr}")
        em.emit(ind, f"if {u} < 128:")
        em.emit(ind + 1, f"{buf}.append({u})")
        em.emit(ind, f"elif {u} < 2097152:")
        em.emit(ind + 1, f"{buf} += _uvb({u}) if {u} < 16384 else _bytes(")
        em.emit(ind + 2, f"(({u} & 0x7F) | 0x80, (({u} >> 7) & 0x7F) | 0x80, {u} >> 14)")
        em.emit(ind + 1, ")")
        em.emit(ind, "else:")
        em.emit(ind + 1, f"{buf} += _uvb({u})")

    def length(self, ind: int, buf: str, n: str, int32: bool) -> None:
        if self.flexible:
            self.uvarint(ind, buf, f"{n} + 1")
        elif int32:
            self.em.emit(ind, f"{buf} += _pi({n})")
        else:
            self.em.emit(ind, f"{buf} += _ph({n})")

    def null(self, ind: int, buf: str, nullable: bool, int32: bool, what: str) -> None:
        em = self.em
        if not nullable:
            em.emit(ind, f"raise _LocalProtocolError('{what} is not nullable in this version')")
        elif self.flexible:
            em.emit(ind, f"{buf}.append(0)")
        elif int32:
            em.emit(ind, f"{buf} += b'\\xff\\xff\\xff\\xff'")
        else:
            em.emit(ind, f"{buf} += b'\\xff\\xff'")

    def value(
        self, ind: int, t: FieldType, nullable: bool, expr: str, buf: str, flush: bool, what: str
    ) -> None:
        em = self.em
        if _is_fixed(t):
            assert isinstance(t, Primitive) and t.fmt is not None
            pack = em.const(struct.Struct(">" + t.fmt).pack, "_p")
            arg = f"_ub({expr})" if t is UUID else expr
            em.emit(ind, f"{buf} += {pack}({arg})")
            return
        cls = _struct_of(t)
        if cls is not None and not nullable:
            if not expr.isidentifier():
                v = em.var("v")
                em.emit(ind, f"{v} = {expr}")
                expr = v
            self.struct(ind, cls, expr, buf, flush)
            return
        v = em.var("v")
        em.emit(ind, f"{v} = {expr}")
        if t is STRING or t is BYTES or t is RECORDS:
            int32 = t is not STRING
            em.emit(ind, f"if {v} is None:")
            self.null(ind + 1, buf, nullable, int32, what)
            em.emit(ind, "else:")
            if t is STRING:
                em.emit(ind + 1, f"{v} = {v}.encode()")
            n = em.var("n")
            em.emit(ind + 1, f"{n} = len({v})")
            self.length(ind + 1, buf, n, int32)
            if t is RECORDS and flush:
                em.emit(ind + 1, f"if {n} > {INLINE_RECORDS_MAX} or type({v}) not in _BYTES_LIKE:")
                em.emit(ind + 2, f"out += ({buf}, {v})")
                em.emit(ind + 2, f"{buf} = _bytearray()")
                em.emit(ind + 1, "else:")
                em.emit(ind + 2, f"{buf} += {v}")
            else:
                em.emit(ind + 1, f"{buf} += {v}")
            return
        if isinstance(t, ArrayOf):
            em.emit(ind, f"if {v} is None:")
            self.null(ind + 1, buf, nullable, True, what)
            em.emit(ind, "else:")
            self.length(ind + 1, buf, f"len({v})", True)
            el = t.element
            if _is_fixed(el):
                assert isinstance(el, Primitive) and el.fmt is not None
                if el is UUID:
                    em.emit(ind + 1, f"for x in {v}:")
                    em.emit(ind + 2, f"{buf} += _ub(x)")
                else:
                    em.emit(ind + 1, f"{buf} += _pack_array('{el.fmt}', {v})")
                return
            x = em.var("x")
            em.emit(ind + 1, f"for {x} in {v}:")
            self.value(ind + 2, el, False, x, buf, flush, what)
            return
        cls = _struct_of(t)
        if cls is None:
            raise LocalProtocolError(f"unknown field type {t!r}")
        if nullable:
            em.emit(ind, f"if {v} is None:")
            em.emit(ind + 1, f"{buf}.append(255)")
            em.emit(ind, "else:")
            em.emit(ind + 1, f"{buf}.append(1)")
            self.struct(ind + 1, cls, v, buf, flush)
        else:
            self.struct(ind, cls, v, buf, flush)

    def struct(self, ind: int, cls: type[Struct], src: str, buf: str, flush: bool) -> None:
        em = self.em
        version = self.version
        pending: list[tuple[Field, str]] = []

        def flush_fixed() -> None:
            if not pending:
                return
            fmt = ">" + "".join(_fmt(fl.type) for fl, _ in pending)
            pack = em.const(struct.Struct(fmt).pack, "_p")
            em.emit(ind, f"{buf} += {pack}({', '.join(e for _, e in pending)})")
            pending.clear()

        present = [
            fl
            for fl in cls.__fields__
            if version in fl.versions and not fl.is_tagged(version, self.flexible)
        ]
        tagged = [fl for fl in cls.__fields__ if fl.is_tagged(version, self.flexible)]

        def fixed_expr(fl: Field) -> str:
            expr = f"{src}.{fl.name}"
            return f"_ub({expr})" if fl.type is UUID else expr

        i = 0
        while i < len(present):
            fl = present[i]
            i += 1
            if _is_fixed(fl.type):
                pending.append((fl, fixed_expr(fl)))
                continue
            what = f"{cls.__name__}.{fl.name}"
            null_fmt = self.null_format(fl)
            if pending and null_fmt is not None and fl.is_nullable(version):
                # Speculate on null (common for aborted transactions, error messages...): pack the
                # fixed fields before it, its null marker and the fixed fields after it at once.
                after = []
                while i < len(present) and _is_fixed(present[i].type):
                    after.append(present[i])
                    i += 1
                fmt_code, marker = null_fmt
                fmt = ">" + "".join(_fmt(f.type) for f, _ in pending) + fmt_code
                fmt += "".join(_fmt(f.type) for f in after)
                values = [e for _, e in pending] + [marker] + [fixed_expr(f) for f in after]
                held = em.var("v")
                em.emit(ind, f"{held} = {src}.{fl.name}")
                em.emit(ind, f"if {held} is None:")
                pack = em.const(struct.Struct(fmt).pack, "_p")
                em.emit(ind + 1, f"{buf} += {pack}({', '.join(values)})")
                em.emit(ind, "else:")
                inner = ind + 1
                before_fmt = ">" + "".join(_fmt(f.type) for f, _ in pending)
                before = em.const(struct.Struct(before_fmt).pack, "_p")
                em.emit(inner, f"{buf} += {before}({', '.join(e for _, e in pending)})")
                pending.clear()
                self.value(inner, fl.type, True, held, buf, flush, what)
                if after:
                    after_pack = em.const(
                        struct.Struct(">" + "".join(_fmt(f.type) for f in after)).pack, "_p"
                    )
                    em.emit(
                        inner, f"{buf} += {after_pack}({', '.join(fixed_expr(f) for f in after)})"
                    )
                continue
            flush_fixed()
            self.value(ind, fl.type, fl.is_nullable(version), f"{src}.{fl.name}", buf, flush, what)
        flush_fixed()
        if self.flexible:
            self.tagged_fields(ind, src, buf, tagged)

    def null_format(self, fl: Field) -> tuple[str, str] | None:
        """The struct code and value of ``fl``'s null encoding, when it has a fixed one."""
        t = fl.type
        if _struct_of(t) is not None:
            return None
        if self.flexible:
            return "B", "0"
        if t is STRING:
            return "h", "-1"
        if t is BYTES or t is RECORDS or isinstance(t, ArrayOf):
            return "i", "-1"
        return None

    def differs_from_default(self, fl: Field, expr: str) -> str:
        """A cheap expression that is true when ``expr`` is not ``fl``'s default value."""
        default = fl.make_default()
        if default is None:
            return f"{expr} is not None"
        if isinstance(fl.type, ArrayOf):
            return f"({expr} is None or len({expr}) > 0)"
        cls = _struct_of(fl.type)
        if cls is not None and all(isinstance(x.type, Primitive) for x in cls.__fields__):
            parts = [f"{expr} is None"]
            for x in cls.__fields__:
                parts.append(f"{expr}.{x.name} != {self.em.const(getattr(default, x.name), '_d')}")
            shared = self.em.const(default, "_d")
            return f"({expr} is not {shared} and ({' or '.join(parts)}))"
        return f"{expr} != {self.em.const(default, '_d')}"

    def tagged_fields(self, ind: int, src: str, buf: str, tagged: list[Field]) -> None:
        em = self.em
        if not tagged:
            em.emit(ind, f"{buf}.append(0)")
            return
        tagged = sorted(tagged, key=lambda fl: fl.tag or 0)
        quick = []
        for fl in tagged:
            default = fl.make_default()
            if isinstance(fl.type, ArrayOf) and fl.default is MISSING:
                quick.append(f"not {src}.{fl.name}")
            elif default is None or not isinstance(fl.type, Primitive):
                quick.append(f"{src}.{fl.name} is {em.const(default, '_d')}")
            else:
                quick.append(f"{src}.{fl.name} == {em.const(default, '_d')}")
        em.emit(ind, f"if {' and '.join(quick)}:")
        em.emit(ind + 1, f"{buf}.append(0)")
        em.emit(ind, "else:")
        ind += 1
        count = em.var("nt")
        em.emit(ind, f"{count} = 0")
        temps = []
        for fl in tagged:
            tmp = em.var("t")
            temps.append(tmp)
            em.emit(ind, f"{tmp} = None")
            value = f"{src}.{fl.name}"
            if isinstance(fl.type, Primitive) and fl.make_default() is not None:
                cond = f"{value} != {em.const(fl.make_default(), '_d')}"
            else:
                held = em.var("w")
                em.emit(ind, f"{held} = {value}")
                value = held
                cond = self.differs_from_default(fl, held)
            em.emit(ind, f"if {cond}:")
            em.emit(ind + 1, f"{tmp} = _bytearray()")
            self.value(ind + 1, fl.type, fl.is_nullable(self.version), value, tmp, False, fl.name)
            em.emit(ind + 1, f"{count} += 1")
        self.uvarint(ind, buf, count)
        for fl, tmp in zip(tagged, temps, strict=True):
            em.emit(ind, f"if {tmp} is not None:")
            em.emit(ind + 1, f"{buf} += _uvb({fl.tag})")
            em.emit(ind + 1, f"{buf} += _uvb(len({tmp}))")
            em.emit(ind + 1, f"{buf} += {tmp}")


def compile_encoder(cls: type[Struct], version: int, flexible: bool) -> Encoder:
    """``encode(obj, out)`` appends the encoding of ``obj`` to the list ``out`` as one or more
    buffers (record blobs above :data:`INLINE_RECORDS_MAX` bytes, and objects that are not
    bytes-like, such as file regions, are appended as they are)."""
    name = f"{cls.__name__}_v{version}_encode"
    em = _Emitter()
    gen = _EncodeGen(em, version, flexible)
    em.emit(0, "def encode(o, out):")
    em.emit(1, "b = _bytearray()")
    em.emit(1, "try:")
    em.emit(2, "pass")
    gen.struct(2, cls, "o", "b", True)
    em.emit(1, "except (AttributeError, TypeError, ValueError, OverflowError, _struct_error) as e:")
    em.emit(
        2, f"raise _LocalProtocolError('cannot encode {cls.__name__} v{version}: ' + str(e)) from e"
    )
    em.emit(1, "if b:")
    em.emit(2, "out.append(b)")
    fn: Encoder = em.build("encode", f"<codegen:{name}>")
    return fn


# --- cached access ---------------------------------------------------------------------------


def decoder(cls: type[Struct], version: int, flexible: bool) -> Decoder:
    """The compiled decoder of ``cls`` at ``version``: ``decode(buf, pos) -> (value, pos)``."""
    key = ("d", version)
    fn: Decoder | None = cls.__codecs__.get(key)
    if fn is None:
        fn = compile_decoder(cls, version, flexible)
        cls.__codecs__[key] = fn
    return fn


def encoder(cls: type[Struct], version: int, flexible: bool) -> Encoder:
    """The compiled encoder of ``cls`` at ``version``: ``encode(value, out_list) -> None``."""
    key = ("e", version)
    fn: Encoder | None = cls.__codecs__.get(key)
    if fn is None:
        fn = compile_encoder(cls, version, flexible)
        cls.__codecs__[key] = fn
    return fn


# --- version-prefixed data -------------------------------------------------------------------

_VERSION_PREFIX = struct.Struct(">h")


def encode_version_prefixed(cls: type[Message], version: int, value: Any) -> bytes:
    """Kafka's MessageUtil.toVersionPrefixedBytes: an int16 version, then ``value`` encoded at
    that version (``__consumer_offsets`` records, the consumer protocol's metadata)."""
    parts: list[Any] = [_VERSION_PREFIX.pack(version)]
    encoder(cls, version, version in cls.flexible_versions)(value, parts)
    return b"".join(bytes(p) for p in parts)


def decode_version_prefixed(
    cls: type[Message], data: bytes | memoryview, *, newer_as_latest: bool = False
) -> tuple[int, Any]:
    """The reverse: (version, value). A version ``cls`` does not know is an error, except that
    ``newer_as_latest`` reads a newer one as the newest (for formats whose versions only add
    fields at the end). Raises MalformedMessage."""
    if len(data) < 2:
        raise MalformedMessage(f"{cls.__name__}: {len(data)} bytes are too few")
    (version,) = _VERSION_PREFIX.unpack_from(data, 0)
    if newer_as_latest and version > cls.valid_versions.hi:
        version = cls.valid_versions.hi
    if version not in cls.valid_versions:
        raise MalformedMessage(f"unknown {cls.__name__} version {version}")
    view = data if isinstance(data, memoryview) else memoryview(data)
    value, _ = decoder(cls, version, version in cls.flexible_versions)(view, 2)
    return version, value
