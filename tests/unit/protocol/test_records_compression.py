"""Compression codecs: round trips, the formats real writers produce, limits and bad input."""

from __future__ import annotations

import gzip
import os
import struct
import tracemalloc

import lz4.frame
import pytest
import zstandard
from kafka import codec as kafka_codec

from protocol.errors import CorruptRecord, DecompressionLimitExceeded, UnsupportedCompression
from protocol.records import compression as c
from tests.support import jvm_codecs

CODECS = [c.NONE, c.GZIP, c.SNAPPY, c.LZ4, c.ZSTD]
PAYLOADS = {
    "empty": b"",
    "tiny": b"x",
    "text": b"the quick brown fox jumps over the lazy dog " * 3000,
    "random": os.urandom(200_000),
}


def codec_magic_pairs():
    for codec in CODECS:
        for magic in (0, 1, 2):
            if codec == c.ZSTD and magic < 2:
                continue
            yield codec, magic


@pytest.mark.parametrize(("codec", "magic"), list(codec_magic_pairs()))
@pytest.mark.parametrize("name", list(PAYLOADS))
def test_round_trip(codec, magic, name):
    data = PAYLOADS[name]
    packed = c.compress(codec, data, magic=magic)
    assert c.decompress(codec, packed, magic=magic) == data
    assert c.decompress(codec, memoryview(bytearray(packed)), magic=magic) == data


@pytest.mark.parametrize("level", [1, 9])
def test_levels(level):
    data = PAYLOADS["text"]
    for codec in (c.GZIP, c.LZ4, c.ZSTD):
        assert c.decompress(codec, c.compress(codec, data, level=level)) == data


def test_names():
    assert c.CompressionType.from_name("zstd") == c.ZSTD
    assert c.CompressionType.LZ4.config_name == "lz4"
    with pytest.raises(UnsupportedCompression):
        c.CompressionType.from_name("brotli")


@pytest.mark.parametrize("codec", [5, 6, 7, -1, 100])
def test_unknown_codec(codec):
    with pytest.raises(UnsupportedCompression):
        c.decompress(codec, b"abc")
    with pytest.raises(UnsupportedCompression):
        c.compress(codec, b"abc")


@pytest.mark.parametrize("magic", [0, 1])
def test_zstd_needs_magic_2(magic):
    with pytest.raises(UnsupportedCompression):
        c.decompress(c.ZSTD, zstandard.ZstdCompressor().compress(b"x"), magic=magic)
    with pytest.raises(UnsupportedCompression):
        c.compress(c.ZSTD, b"x", magic=magic)


# --- formats ---------------------------------------------------------------------------------


def test_xxh32_known_values_and_lz4_checksums():
    assert c.xxh32(b"") == 0x02CC5D05
    assert c.xxh32(b"abc") == 0x32D153FF
    assert c.xxh32(b"Nobody inspects the spammish repetition") == 0xE2293B2F
    for n in (1, 4, 15, 16, 17, 33, 1000):
        data = os.urandom(n)
        frame = lz4.frame.compress(data, content_checksum=True)
        assert int.from_bytes(frame[-4:], "little") == c.xxh32(data)


def test_lz4_frames_are_written_like_kafkas():
    frame = c.lz4_compress(PAYLOADS["text"])
    # FLG: version 01, independent blocks, no block/content checksum, no content size; BD: 64 KiB.
    assert frame[:6] == c.LZ4_FRAME_MAGIC + b"\x60\x40"
    correct, broken = c.lz4_header_checksums(frame)
    assert frame[6] == correct != broken


def test_lz4_broken_header_checksum_for_magic_0():
    data = PAYLOADS["text"]
    old = c.compress(c.LZ4, data, magic=0)
    correct, broken = c.lz4_header_checksums(old)
    assert old[6] == broken
    with pytest.raises(RuntimeError):  # a strict reader refuses it: the quirk is real
        lz4.frame.decompress(old)
    assert c.decompress(c.LZ4, old, magic=0) == data
    assert c.decompress(c.LZ4, old, magic=1) == data
    # what kafka-python's old-Kafka reader computes as the correct checksum matches ours
    assert c.compress(c.LZ4, data, magic=1)[6] == correct


def test_lz4_bad_header_checksum_is_corrupt():
    frame = bytearray(c.lz4_compress(b"abc" * 100))
    correct, broken = c.lz4_header_checksums(frame)
    frame[6] = next(x for x in range(256) if x not in (correct, broken))
    with pytest.raises(CorruptRecord):
        c.lz4_decompress(frame)


def test_lz4_reads_content_size_and_linked_blocks_and_checksums():
    data = PAYLOADS["text"]
    frame = lz4.frame.compress(data, store_size=True, content_checksum=True, block_linked=True)
    assert c.lz4_decompress(frame) == data
    with pytest.raises(DecompressionLimitExceeded):
        c.lz4_decompress(frame, max_bytes=len(data) - 1)


def test_lz4_concatenated_frames():
    assert c.lz4_decompress(c.lz4_compress(b"ab") + c.lz4_compress(b"cd")) == b"abcd"


def test_snappy_framed_and_raw():
    data = PAYLOADS["text"]
    framed = c.compress(c.SNAPPY, data)
    assert framed.startswith(c.XERIAL_HEADER)
    assert len(framed) > 16 + 4 * (len(data) // c.XERIAL_BLOCK_SIZE)
    assert c.snappy_decompress(framed) == data
    assert c.snappy_decompress(c.snappy_compress(data)) == data
    # two framed streams back to back, as snappy-java reads them
    assert c.snappy_decompress(c.snappy_compress_xerial(b"ab") + c.snappy_compress_xerial(b"cd"))
    assert c.snappy_decompress(framed + framed) == data + data


def test_snappy_with_kafka_python():
    data = PAYLOADS["text"]
    for theirs in (
        kafka_codec.snappy_encode(data),
        kafka_codec.snappy_encode(data, xerial_compatible=False),
    ):
        assert c.snappy_decompress(theirs) == data
    assert kafka_codec.snappy_decode(c.snappy_compress_xerial(data)) == data
    assert kafka_codec.snappy_decode(c.snappy_compress(data)) == data


def test_codecs_with_kafka_python():
    data = PAYLOADS["text"]
    assert c.gzip_decompress(kafka_codec.gzip_encode(data)) == data
    assert kafka_codec.gzip_decode(c.gzip_compress(data)) == data
    assert c.lz4_decompress(kafka_codec.lz4_encode(data)) == data
    assert kafka_codec.lz4_decode(c.lz4_compress(data)) == data
    assert c.zstd_decompress(kafka_codec.zstd_encode(data)) == data
    assert kafka_codec.zstd_decode(c.zstd_compress(data)) == data


def test_gzip_multiple_members():
    assert c.gzip_decompress(gzip.compress(b"ab") + gzip.compress(b"cd")) == b"abcd"


def test_zstd_without_content_size_and_several_frames():
    streaming = zstandard.ZstdCompressor(write_content_size=False)
    data = PAYLOADS["text"]
    assert c.zstd_decompress(streaming.compress(data)) == data
    assert c.zstd_decompress(streaming.compress(b"ab") + c.zstd_compress(b"cd")) == b"abcd"


def test_zstd_frames_with_content_sizes():
    # one call when a single frame states its size; the stepwise path for several frames
    data = PAYLOADS["text"]
    assert c.zstd_decompress(c.zstd_compress(data)) == data
    assert c.zstd_decompress(c.zstd_compress(b"ab") + c.zstd_compress(b"cd")) == b"abcd"
    assert c.zstd_decompress(c.zstd_compress(b"") + c.zstd_compress(b"cd")) == b"cd"
    # a header that understates or overstates the content size is corrupt
    frame = c.zstd_compress(bytes(range(256)) * 400)
    assert frame[4] == 0b10100000  # single segment, 4-byte content size at byte 5
    for claim in (1000, 200_000):
        lying = bytearray(frame)
        struct.pack_into("<I", lying, 5, claim)
        with pytest.raises(CorruptRecord):
            c.zstd_decompress(bytes(lying))


def test_jvm_codecs_both_ways(tmp_path):
    """snappy-java, zstd-jni and lz4-java: the libraries inside Kafka's Java client."""
    data = PAYLOADS["text"] + PAYLOADS["random"][:50_000]
    jobs = [("compress", name, data) for name in ("snappy", "zstd", "lz4")]
    jobs += [
        ("decompress", "snappy", c.compress(c.SNAPPY, data)),
        ("decompress", "snappy", c.snappy_compress(data)),
        ("decompress", "zstd", c.compress(c.ZSTD, data)),
        ("decompress", "lz4", c.compress(c.LZ4, data, magic=1)),
        ("decompress", "lz4", c.compress(c.LZ4, data, magic=0)),
    ]
    snappy_out, zstd_out, lz4_out, *decoded = jvm_codecs.run(jobs, tmp_path)
    assert isinstance(snappy_out, bytes) and snappy_out.startswith(c.XERIAL_MAGIC)
    assert c.decompress(c.SNAPPY, snappy_out) == data
    assert isinstance(zstd_out, bytes) and zstandard.frame_content_size(zstd_out) == -1
    assert c.decompress(c.ZSTD, zstd_out) == data
    assert c.decompress(c.LZ4, lz4_out) == data
    assert decoded[:4] == [data] * 4
    # lz4-java checks the header checksum properly, so it refuses the magic-0 quirk
    assert isinstance(decoded[4], str) and "descriptor" in decoded[4]


# --- limits and bad input --------------------------------------------------------------------


def bombs():
    zeros = b"\0" * (64 << 20)
    yield c.GZIP, c.gzip_compress(zeros, level=9)
    yield c.SNAPPY, c.snappy_compress_xerial(zeros)
    yield c.SNAPPY, c.snappy_compress(zeros)
    yield c.LZ4, c.lz4_compress(zeros)
    yield c.LZ4, lz4.frame.compress(zeros, store_size=False, block_linked=True)
    yield c.ZSTD, zstandard.ZstdCompressor(write_content_size=False, level=19).compress(zeros)
    yield c.ZSTD, c.zstd_compress(zeros)


@pytest.fixture(scope="module")
def bomb_list():
    return list(bombs())


def test_bombs_stop_at_the_limit(bomb_list):
    limit = 1 << 20
    for codec, packed in bomb_list:
        tracemalloc.start()
        try:
            with pytest.raises(DecompressionLimitExceeded):
                c.decompress(codec, packed, max_bytes=limit)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 16 * limit + 2 * len(packed), (codec, peak)


def test_limit_is_inclusive():
    data = b"z" * 1000
    for codec in CODECS:
        packed = c.compress(codec, data)
        assert c.decompress(codec, packed, max_bytes=1000) == data
        with pytest.raises(DecompressionLimitExceeded):
            c.decompress(codec, packed, max_bytes=999)


def test_lying_sizes_are_caught_before_allocating():
    zstd_frame = bytearray(c.zstd_compress(b"a" * 100))
    huge = zstandard.ZstdCompressor().compress(b"\0" * (8 << 20))
    with pytest.raises(DecompressionLimitExceeded):
        c.zstd_decompress(huge, max_bytes=1 << 20)
    assert c.zstd_decompress(bytes(zstd_frame)) == b"a" * 100
    # a raw snappy block whose length preamble claims 4 GiB
    with pytest.raises(DecompressionLimitExceeded):
        c.snappy_decompress(b"\xff\xff\xff\xff\x0f" + b"\0" * 10)


@pytest.mark.parametrize("codec", [c.GZIP, c.SNAPPY, c.LZ4, c.ZSTD])
def test_truncated_and_garbage_are_corrupt(codec):
    data = PAYLOADS["text"]
    packed = c.compress(codec, data)
    for cut in (1, 2, 5, len(packed) // 2, len(packed) - 1):
        with pytest.raises(CorruptRecord):
            c.decompress(codec, packed[: len(packed) - cut])
    for junk in (b"", b"\0", b"garbage data " * 10, os.urandom(100)):
        try:
            c.decompress(codec, junk)
        except (CorruptRecord, DecompressionLimitExceeded):  # a raw snappy length may be huge
            pass


@pytest.mark.parametrize("codec", [c.GZIP, c.SNAPPY, c.LZ4, c.ZSTD])
def test_flipped_bytes_raise_only_our_errors(codec):
    packed = c.compress(codec, PAYLOADS["text"][:5000])
    for i in range(len(packed)):
        mutated = bytearray(packed)
        mutated[i] ^= 0x5A
        try:
            c.decompress(codec, mutated, max_bytes=1 << 20)
        except (CorruptRecord, DecompressionLimitExceeded):
            pass
