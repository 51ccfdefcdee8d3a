"""Compression codecs of record batches (magic 2) and legacy message sets (magic 0 and 1).

The codec id lives in bits 0-2 of a batch's or message's attributes: 0 none, 1 gzip, 2 snappy,
3 lz4, 4 zstd (magic 2 only). What each producer writes, and what we accept:

* gzip: a gzip stream (RFC 1952), possibly several members back to back.
* snappy: the Java client writes snappy-java's framed stream (a 16-byte header that starts with
  ``\\x82SNAPPY\\x00``, then blocks of int32 big-endian length + raw snappy); librdkafka writes
  one raw snappy block. Readers tell them apart by the header, as Kafka's and every client's do.
  We write the framed stream with 32 KiB blocks, like the Java client.
* lz4: one LZ4 frame with independent blocks (Kafka's reader refuses linked blocks) and no
  content size. Kafka 0.8-0.9 computed the frame descriptor's header checksum over the magic
  number too; magic-0 message sets carry that broken checksum, and readers of magic 0 expect it.
  We accept either checksum on read, and write the broken one only for magic 0.
* zstd: one zstd frame (or several); only in magic 2 batches.

Every decompression is bounded: past ``max_bytes`` of output it raises
:class:`DecompressionLimitExceeded` without having produced much more than that, so a
compression bomb cannot exhaust memory. Bad input raises :class:`CorruptRecord`; an unknown codec
:class:`UnsupportedCompression`. Nothing else escapes.
"""

from __future__ import annotations

import struct
import zlib
from enum import IntEnum
from typing import Final

import lz4.frame
import snappy
import zstandard

from protocol.errors import CorruptRecord, DecompressionLimitExceeded, UnsupportedCompression

Buffer = bytes | bytearray | memoryview


class CompressionType(IntEnum):
    """Codec ids (bits 0-2 of the attributes) and Kafka's ``compression.type`` names."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def config_name(self) -> str:
        return self.name.lower()

    @classmethod
    def from_name(cls, name: str) -> CompressionType:
        """``none``/``gzip``/``snappy``/``lz4``/``zstd`` (Kafka's config values)."""
        try:
            return cls[name.upper()]
        except KeyError:
            raise UnsupportedCompression(f"unknown compression type {name!r}") from None


NONE: Final = 0
GZIP: Final = 1
SNAPPY: Final = 2
LZ4: Final = 3
ZSTD: Final = 4

#: Default bound on decompressed output for one batch or wrapper message.
DEFAULT_MAX_DECOMPRESSED_BYTES: Final = 64 * 1024 * 1024

#: Kafka's default levels: gzip as java.util.zip (6); lz4's fast compressor; zstd 3.
DEFAULT_GZIP_LEVEL: Final = 6
DEFAULT_LZ4_LEVEL: Final = 0
DEFAULT_ZSTD_LEVEL: Final = 3

XERIAL_MAGIC: Final = b"\x82SNAPPY\x00"
#: snappy-java's stream header: magic, then int32 version 1 and int32 minimum compatible version 1.
XERIAL_HEADER: Final = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
XERIAL_BLOCK_SIZE: Final = 32 * 1024

LZ4_FRAME_MAGIC: Final = b"\x04\x22\x4d\x18"  # 0x184D2204 little-endian

_INT32 = struct.Struct(">i")


def check_codec(codec: int, magic: int = 2) -> None:
    """Raises UnsupportedCompression unless ``codec`` exists for this message format."""
    if not 0 <= codec <= ZSTD or (codec == ZSTD and magic < 2):
        raise UnsupportedCompression(f"compression codec {codec} is not valid for magic {magic}")


def compress(codec: int, data: Buffer, *, magic: int = 2, level: int | None = None) -> bytes:
    """``data`` compressed the way Kafka's clients write ``codec`` for this magic."""
    check_codec(codec, magic)
    if codec == GZIP:
        return gzip_compress(data, level=DEFAULT_GZIP_LEVEL if level is None else level)
    if codec == SNAPPY:
        return snappy_compress_xerial(data)
    if codec == LZ4:
        return lz4_compress(
            data, level=DEFAULT_LZ4_LEVEL if level is None else level, broken_checksum=magic == 0
        )
    if codec == ZSTD:
        return zstd_compress(data, level=DEFAULT_ZSTD_LEVEL if level is None else level)
    return bytes(data)


def decompress(
    codec: int,
    data: Buffer,
    *,
    magic: int = 2,
    max_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> bytes:
    """``data`` decompressed with ``codec``; at most ``max_bytes`` of output.

    Raises UnsupportedCompression, DecompressionLimitExceeded or CorruptRecord.
    """
    check_codec(codec, magic)
    if codec == GZIP:
        return gzip_decompress(data, max_bytes=max_bytes)
    if codec == SNAPPY:
        return snappy_decompress(data, max_bytes=max_bytes)
    if codec == LZ4:
        return lz4_decompress(data, max_bytes=max_bytes)
    if codec == ZSTD:
        return zstd_decompress(data, max_bytes=max_bytes)
    if len(data) > max_bytes:
        raise DecompressionLimitExceeded(f"{len(data)} bytes exceed the limit of {max_bytes}")
    return bytes(data)


def _exceeded(max_bytes: int) -> DecompressionLimitExceeded:
    return DecompressionLimitExceeded(f"decompressed data exceeds the limit of {max_bytes} bytes")


# --- gzip ------------------------------------------------------------------------------------


def gzip_compress(data: Buffer, *, level: int = DEFAULT_GZIP_LEVEL) -> bytes:
    compressor = zlib.compressobj(level, zlib.DEFLATED, 31)
    return compressor.compress(data) + compressor.flush()


def gzip_decompress(data: Buffer, *, max_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> bytes:
    """One or more gzip members back to back (java.util.zip reads them all)."""
    chunks = []
    total = 0
    rest: Buffer = data
    try:
        while True:
            inflater = zlib.decompressobj(31)
            out = inflater.decompress(rest, max_bytes - total + 1)
            total += len(out)
            if total > max_bytes:
                raise _exceeded(max_bytes)
            if not inflater.eof:
                raise CorruptRecord("gzip stream is truncated")
            chunks.append(out)
            rest = inflater.unused_data
            if not rest:
                break
    except zlib.error as e:
        raise CorruptRecord(f"invalid gzip data: {e}") from None
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


# --- snappy ----------------------------------------------------------------------------------


def snappy_compress(data: Buffer) -> bytes:
    """One raw snappy block (what librdkafka writes)."""
    out: bytes = snappy.compress(bytes(data) if not isinstance(data, bytes) else data)
    return out


def snappy_compress_xerial(data: Buffer, *, block_size: int = XERIAL_BLOCK_SIZE) -> bytes:
    """snappy-java's framed stream (what the Java client writes): header, then length-prefixed
    raw snappy blocks of ``block_size`` input bytes each."""
    view = memoryview(data)
    parts = [XERIAL_HEADER]
    for start in range(0, len(view), block_size):
        block = snappy.compress(view[start : start + block_size].tobytes())
        parts.append(_INT32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _snappy_raw_length(data: Buffer, pos: int, end: int) -> int:
    """The uncompressed length a raw snappy block starts with (an unsigned varint, 32 bits)."""
    result = 0
    for shift in range(0, 35, 7):
        if pos >= end:
            raise CorruptRecord("snappy block is truncated")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result
    raise CorruptRecord("snappy block length is not a valid varint")


def _snappy_block(data: Buffer, budget: int, max_bytes: int) -> bytes:
    if _snappy_raw_length(data, 0, len(data)) > budget:
        raise _exceeded(max_bytes)
    try:
        out: bytes = snappy.uncompress(data)
    except snappy.UncompressError as e:
        raise CorruptRecord(f"invalid snappy data: {e.__cause__ or e}") from None
    return out


def snappy_decompress(data: Buffer, *, max_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> bytes:
    """A raw snappy block, or snappy-java's framed stream (detected by its magic header)."""
    view = memoryview(data)
    if len(view) < 16 or view[:8].tobytes() != XERIAL_MAGIC:
        return _snappy_block(view, max_bytes, max_bytes)
    # The version fields are not checked, as in the Java and Python clients (some producers are
    # known to write them little-endian).
    chunks = []
    total = 0
    pos = 16
    end = len(view)
    while pos < end:
        if (
            end - pos >= 16 and view[pos : pos + 8].tobytes() == XERIAL_MAGIC
        ):  # concatenated streams
            pos += 16
            continue
        if end - pos < 4:
            raise CorruptRecord("snappy-java block length is truncated")
        (size,) = _INT32.unpack_from(view, pos)
        pos += 4
        if size < 0 or pos + size > end:
            raise CorruptRecord(f"snappy-java block of {size} bytes, {end - pos} remain")
        block = _snappy_block(view[pos : pos + size], max_bytes - total, max_bytes)
        pos += size
        total += len(block)
        chunks.append(block)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


# --- lz4 -------------------------------------------------------------------------------------

_P1 = 2654435761
_P2 = 2246822519
_P3 = 3266489917
_P4 = 668265263
_P5 = 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: Buffer, seed: int = 0) -> int:
    """XXH32 (used by LZ4 frame checksums); pure Python, meant for short inputs."""
    buf = bytes(data)
    n = len(buf)
    i = 0
    if n >= 16:
        v1 = (seed + _P1 + _P2) & _M32
        v2 = (seed + _P2) & _M32
        v3 = seed & _M32
        v4 = (seed - _P1) & _M32
        while i <= n - 16:
            a, b, c, d = struct.unpack_from("<IIII", buf, i)
            v1 = (_rotl((v1 + a * _P2) & _M32, 13) * _P1) & _M32
            v2 = (_rotl((v2 + b * _P2) & _M32, 13) * _P1) & _M32
            v3 = (_rotl((v3 + c * _P2) & _M32, 13) * _P1) & _M32
            v4 = (_rotl((v4 + d * _P2) & _M32, 13) * _P1) & _M32
            i += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while i + 4 <= n:
        (word,) = struct.unpack_from("<I", buf, i)
        h = (_rotl((h + word * _P3) & _M32, 17) * _P4) & _M32
        i += 4
    while i < n:
        h = (_rotl((h + buf[i] * _P5) & _M32, 11) * _P1) & _M32
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


def _lz4_descriptor_end(frame: Buffer) -> int:
    """Position of the header checksum byte of the LZ4 frame at the start of ``frame``."""
    if len(frame) < 7 or bytes(frame[:4]) != LZ4_FRAME_MAGIC:
        raise CorruptRecord("not an LZ4 frame")
    flg = frame[4]
    end = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    if len(frame) <= end:
        raise CorruptRecord("LZ4 frame descriptor is truncated")
    return end


def lz4_header_checksums(frame: Buffer) -> tuple[int, int]:
    """(correct, broken) header checksum bytes for the frame at the start of ``frame``: the
    correct one hashes the descriptor after the magic; Kafka 0.8-0.9 hashed the magic too."""
    end = _lz4_descriptor_end(frame)
    view = memoryview(frame)
    return (xxh32(view[4:end]) >> 8) & 0xFF, (xxh32(view[0:end]) >> 8) & 0xFF


def lz4_compress(
    data: Buffer, *, level: int = DEFAULT_LZ4_LEVEL, broken_checksum: bool = False
) -> bytes:
    """One LZ4 frame as Kafka writes it: 64 KiB independent blocks, no content size or checksum.
    ``broken_checksum`` writes the header checksum Kafka 0.8-0.9 expect (magic 0)."""
    frame: bytes = lz4.frame.compress(
        data,
        compression_level=level,
        block_size=lz4.frame.BLOCKSIZE_MAX64KB,
        block_linked=False,
        content_checksum=False,
        store_size=False,
    )
    if not broken_checksum:
        return frame
    out = bytearray(frame)
    end = _lz4_descriptor_end(out)
    out[end] = lz4_header_checksums(out)[1]
    return bytes(out)


#: LZ4 cannot expand data more than about 255 times (one length byte per 255 bytes of match).
_LZ4_MAX_RATIO = 256
_LZ4_FIRST_GUESS = 8


def _lz4_frame_start(
    frame: memoryview, end: int, step: int
) -> tuple[memoryview, lz4.frame.LZ4FrameDecompressor, bytes]:
    """The first output (at most ``step`` bytes) of the frame at the start of ``frame``, with
    its decompressor, and the frame read: ``frame`` itself, or a copy whose header checksum
    (at ``end``) was corrected when liblz4 refused Kafka 0.8-0.9's. RuntimeError from liblz4."""
    decompressor = lz4.frame.LZ4FrameDecompressor()
    try:
        return frame, decompressor, decompressor.decompress(frame, max_length=step)
    except RuntimeError as e:
        if "headerChecksum" not in str(e):
            raise
    correct, broken = lz4_header_checksums(frame)
    if frame[end] != broken:
        raise CorruptRecord("LZ4 frame header checksum mismatch")
    fixed = bytearray(frame)
    fixed[end] = correct
    decompressor = lz4.frame.LZ4FrameDecompressor()
    return memoryview(fixed), decompressor, decompressor.decompress(fixed, max_length=step)


def lz4_decompress(data: Buffer, *, max_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> bytes:
    """LZ4 frames (usually one), with either the correct or Kafka 0.8-0.9's header checksum.

    liblz4 checks the header checksum itself; only a frame it refuses for that is hashed here
    (in Python, slowly), to accept Kafka 0.8-0.9's checksum of the magic and descriptor."""
    chunks: list[bytes] = []
    total = 0
    rest = memoryview(data)
    while True:
        end = _lz4_descriptor_end(rest)
        if rest[4] & 0x08:
            content_size = int.from_bytes(rest[6:14], "little")
            if content_size > max_bytes - total:
                raise _exceeded(max_bytes)
        # The output buffer is allocated up front: guess a typical ratio, then grow, never past
        # the budget (nor past what the frame could expand to).
        step = min(
            max_bytes - total + 1,
            len(rest) * _LZ4_MAX_RATIO,
            max(len(rest) * _LZ4_FIRST_GUESS, 1 << 16),
        )
        try:
            rest, decompressor, out = _lz4_frame_start(rest, end, step)
            while True:
                total += len(out)
                if total > max_bytes:
                    raise _exceeded(max_bytes)
                chunks.append(out)
                if decompressor.eof:
                    break
                if decompressor.needs_input:
                    raise CorruptRecord("LZ4 frame is truncated")
                step = min(max_bytes - total + 1, step * 2)
                out = decompressor.decompress(b"", max_length=step)
        except RuntimeError as e:  # lz4.frame reports every decoding failure this way
            raise CorruptRecord(f"invalid LZ4 data: {e}") from None
        unused = decompressor.unused_data
        if not unused:
            break
        rest = memoryview(unused)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


# --- zstd ------------------------------------------------------------------------------------

_ZSTD_DECOMPRESSOR = zstandard.ZstdDecompressor()
_ZSTD_COMPRESSORS: dict[int, zstandard.ZstdCompressor] = {}
#: An RLE block of 4 bytes can stand for a whole 128 KiB block.
_ZSTD_MAX_RATIO = 32768
_ZSTD_MIN_STEP = 256


def zstd_compress(data: Buffer, *, level: int = DEFAULT_ZSTD_LEVEL) -> bytes:
    compressor = _ZSTD_COMPRESSORS.get(level)
    if compressor is None:
        compressor = _ZSTD_COMPRESSORS.setdefault(level, zstandard.ZstdCompressor(level=level))
    out: bytes = compressor.compress(data)
    return out


def zstd_decompress(data: Buffer, *, max_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> bytes:
    """zstd frames back to back.

    A single frame whose header states its content size within the budget is decompressed in
    one call into a buffer of exactly that size (more output fails). Otherwise (no content size,
    as the Java client writes, or several frames) input is fed in steps small enough that no
    step can produce much more than the remaining budget, so a bomb is stopped early."""
    chunks: list[bytes] = []
    total = 0
    rest = memoryview(data)
    try:
        content_size = zstandard.frame_content_size(rest)
        if content_size > max_bytes:
            raise _exceeded(max_bytes)
        if content_size > 0:
            try:
                out: bytes = _ZSTD_DECOMPRESSOR.decompress(
                    rest, max_output_size=content_size, allow_extra_data=False
                )
                return out
            except zstandard.ZstdError:
                pass  # more frames follow, or the frame is corrupt: the steps below tell which
        while True:
            content_size = zstandard.frame_content_size(rest)
            if content_size > max_bytes - total:
                raise _exceeded(max_bytes)
            decompressor = _ZSTD_DECOMPRESSOR.decompressobj()
            pos = 0
            while not decompressor.eof:
                if pos >= len(rest):
                    raise CorruptRecord("zstd frame is truncated")
                step = max(_ZSTD_MIN_STEP, (max_bytes - total) // _ZSTD_MAX_RATIO)
                out = decompressor.decompress(rest[pos : pos + step])
                pos += step
                total += len(out)
                if total > max_bytes:
                    raise _exceeded(max_bytes)
                if out:
                    chunks.append(out)
            unused = decompressor.unused_data + bytes(rest[pos:])
            if not unused:
                break
            rest = memoryview(unused)
    except zstandard.ZstdError as e:
        raise CorruptRecord(f"invalid zstd data: {e}") from None
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)
