import struct

import pytest

from protocol.errors import FrameTooLarge
from protocol.frames import DIRECT_FRAME_INITIAL, DIRECT_FRAME_MIN, FrameDecoder


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def test_many_small_frames_in_one_feed():
    dec = FrameDecoder(max_frame_bytes=1000)
    dec.feed(b"".join(frame(bytes([i]) * i) for i in range(50)))
    assert [bytes(f) for f in dec] == [bytes([i]) * i for i in range(50)]


def test_frame_split_anywhere():
    payloads = [b"a" * 10, b"b" * (DIRECT_FRAME_MIN * 3), b"", b"c" * 100]
    stream = b"".join(frame(p) for p in payloads)
    for cut in (1, 3, 4, 5, 17, 4096, DIRECT_FRAME_MIN + 7):
        dec = FrameDecoder(max_frame_bytes=1 << 20)
        got = []
        for i in range(0, len(stream), cut):
            dec.feed(stream[i : i + cut])
            got.extend(bytes(f) for f in dec)
        assert got == payloads


def test_large_frame_is_received_in_place_through_get_buffer():
    payload = bytes(range(256)) * 1000
    stream = frame(payload)
    dec = FrameDecoder(max_frame_bytes=1 << 20)
    pos = 0
    while pos < len(stream):
        buf = dec.get_buffer()
        n = min(len(buf), len(stream) - pos, 7000)
        buf[:n] = stream[pos : pos + n]
        del buf
        dec.buffer_updated(n)
        pos += n
    frames = list(dec)
    assert len(frames) == 1 and frames[0] == payload


def test_frames_own_their_memory():
    dec = FrameDecoder(max_frame_bytes=1000)
    dec.feed(frame(b"first"))
    first = dec.next_frame()
    dec.feed(frame(b"second") * 100)
    assert first is not None and bytes(first) == b"first"
    first[0] = ord("F")  # frames are writable (offsets are rewritten in place)
    assert bytes(first) == b"First"


@pytest.mark.parametrize("size", [1001, -1, 2**31 - 1])
def test_oversize_or_negative_frames_are_refused(size):
    dec = FrameDecoder(max_frame_bytes=1000)
    with pytest.raises(FrameTooLarge):
        dec.feed(struct.pack(">i", size) + b"x")


def test_a_size_prefix_alone_pins_no_frame_of_memory():
    decoder = FrameDecoder(200 * 1024 * 1024)
    decoder.feed(struct.pack(">i", 100 * 1024 * 1024) + b"x")
    assert decoder.buffered_bytes == 1
    assert decoder.held_bytes <= DIRECT_FRAME_INITIAL
    assert decoder.next_frame() is None


def test_a_large_frame_grows_as_it_arrives_and_comes_out_whole():
    size = 5 * DIRECT_FRAME_INITIAL + 123
    body = bytes(i % 251 for i in range(size))
    decoder = FrameDecoder(size)
    data = struct.pack(">i", size) + body
    held = []
    for i in range(0, len(data), 70_000):
        decoder.feed(data[i : i + 70_000])
        held.append(decoder.held_bytes)
    # the buffer never got far ahead of what had arrived
    for n, h in zip(range(70_000, len(data) + 70_000, 70_000), held, strict=False):
        assert h <= max(DIRECT_FRAME_INITIAL, 2 * n)
    frame = decoder.next_frame()
    assert frame is not None and bytes(frame) == body
    assert decoder.held_bytes == 0


def test_held_bytes_counts_complete_frames_until_taken():
    decoder = FrameDecoder(1024)
    decoder.feed(struct.pack(">i", 3) + b"abc" + struct.pack(">i", 2) + b"de")
    assert decoder.held_bytes == 5
    assert bytes(decoder.next_frame()) == b"abc"
    assert decoder.held_bytes == 2
