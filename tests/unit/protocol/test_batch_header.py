import struct

import pytest
from crc32c import crc32c

from protocol.errors import CorruptRecord, InvalidRecord
from protocol.records import batch as rb


def make_batch(records: bytes = b"\x00" * 10, count: int = 1, producer_id: int = -1) -> bytearray:
    """A syntactically valid v2 batch with opaque record bytes (enough for header tests)."""
    body = (
        struct.pack(
            ">hiqqqhii",
            0,
            count - 1,
            1000,
            1000,
            producer_id,
            -1,
            -1 if producer_id < 0 else 0,
            count,
        )
        + records
    )
    crc = crc32c(body)
    head = struct.pack(">qiibI", 0, len(body) + 9, -1, 2, crc)
    return bytearray(head + body)


def test_header_fields_and_crc():
    buf = make_batch(count=3)
    ((pos, header),) = list(rb.iter_batches(buf))
    assert pos == 0 and header.size == len(buf) and header.record_count == 3
    assert header.last_offset_delta == 2 and header.next_offset == 3
    assert rb.validate_batches(buf) == [header]


def test_rewrites_outside_the_crc_keep_it_valid():
    buf = make_batch() + make_batch()
    rb.set_base_offset(buf, 0, 100)
    size = rb.batch_size_at(buf, 0)
    rb.set_base_offset(buf, size, 101)
    rb.set_partition_leader_epoch(buf, 0, 7)
    headers = rb.validate_batches(buf)
    assert [h.base_offset for h in headers] == [100, 101]
    assert headers[0].partition_leader_epoch == 7


def test_log_append_time_rewrite_recomputes_crc():
    buf = make_batch()
    header = rb.read_header(buf)
    rb.set_max_timestamp_and_type(buf, 0, header, 123456, log_append=True)
    (new,) = rb.validate_batches(buf)
    assert new.max_timestamp == 123456 and new.timestamp_type == 1


@pytest.mark.parametrize("cut", [1, 10, 60, 61, 70])
def test_cut_batches_are_corrupt(cut):
    buf = make_batch()
    with pytest.raises(CorruptRecord):
        rb.validate_batches(buf[: len(buf) - cut] if cut < len(buf) else buf[:1])


def test_flipped_byte_fails_crc():
    buf = make_batch()
    buf[-1] ^= 0xFF
    with pytest.raises(CorruptRecord):
        rb.validate_batches(buf)


def test_count_mismatch_is_invalid():
    buf = make_batch(count=2)
    struct.pack_into(">i", buf, rb.LAST_OFFSET_DELTA_AT, 5)
    struct.pack_into(">I", buf, rb.CRC_AT, rb.crc_of(buf, 0, len(buf)))
    with pytest.raises(InvalidRecord):
        rb.validate_batches(buf)
