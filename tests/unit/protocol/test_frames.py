import struct

import pytest

from protocol.errors import FrameTooLarge
from protocol.frames import DIRECT_FRAME_MIN, FrameDecoder


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
