import io

from protocol.records import control, legacy
from protocol.records.record import SimpleRecord
from storage.config import LogConfig
from storage.dump import dump_files
from storage.loader import load_log
from tests.unit.storage.util import FakeClock, make_batch


def build(tmp_path):
    directory = tmp_path / "t-0"
    log = load_log(
        directory, LogConfig(index_interval_bytes=50), clock=FakeClock(), had_clean_shutdown=True
    )
    log.append(make_batch(2, keys=[b"a", None], values=[b"hello", None]), leader_epoch=4)
    log.append(
        make_batch(
            2, compression=1, value_size=100, producer_id=9, producer_epoch=1, base_sequence=5
        )
    )
    marker = control.build_control_batch(
        control.ControlRecordType.COMMIT,
        producer_id=9,
        producer_epoch=1,
        coordinator_epoch=3,
        timestamp=2000,
    )
    log.append(bytearray(marker))
    log.close()
    return directory


def run(paths, **kw):
    out, err = io.StringIO(), io.StringIO()
    status = dump_files(paths, out=out, err=err, **kw)
    return status, out.getvalue(), err.getvalue()


def test_batches_like_kafka_dump_log(tmp_path):
    directory = build(tmp_path)
    log_file = directory / "00000000000000000000.log"
    status, out, err = run([log_file])
    lines = out.splitlines()
    assert status == 0 and not err
    assert lines[0] == f"Dumping {log_file}"
    assert lines[1] == "Log starting offset: 0"
    assert lines[2].startswith(
        "baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1 "
        "producerEpoch: -1 partitionLeaderEpoch: 4 isTransactional: false isControl: false "
        "deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1001 size: "
    )
    assert lines[2].endswith("magic: 2 compresscodec: none crc: " + lines[2].split("crc: ")[1])
    assert lines[2].endswith("isvalid: true")
    assert "baseSequence: 5 lastSequence: 6 producerId: 9 producerEpoch: 1" in lines[3]
    assert "compresscodec: gzip" in lines[3]
    assert "isTransactional: true isControl: true" in lines[4]
    assert len(lines) == 5


def test_records_and_payloads(tmp_path):
    directory = build(tmp_path)
    _, out, _ = run([directory / "00000000000000000000.log"], records=True, print_data=True)
    records = [line for line in out.splitlines() if line.startswith("|")]
    assert records[0] == (
        "| offset: 0 CreateTime: 1000 keySize: 1 valueSize: 5 sequence: -1 headerKeys: [] "
        "key: a payload: hello"
    )
    assert records[1] == (
        "| offset: 1 CreateTime: 1001 keySize: -1 valueSize: -1 sequence: -1 headerKeys: []"
    )
    assert "sequence: 6" in records[3]
    assert records[4].endswith("endTxnMarker: COMMIT coordinatorEpoch: 3")


def test_indexes_and_trailing_garbage(tmp_path):
    directory = build(tmp_path)
    log_file = directory / "00000000000000000000.log"
    with open(log_file, "ab") as f:
        f.write(b"\x00" * 7)
    status, out, err = run(
        [
            directory / "00000000000000000000.index",
            directory / "00000000000000000000.timeindex",
            log_file,
            directory / "leader-epoch-checkpoint",
        ]
    )
    assert status == 0
    assert "offset: 3 position: " in out  # the gzip batch's last offset
    assert "timestamp: 2000 offset: 4" in out
    assert "Found 7 invalid bytes at the end of 00000000000000000000.log" in out
    assert "Ignoring unknown file" in err and not err.count("Mismatches")


def test_legacy_messages(tmp_path):
    # a v1 entry, a v0 entry, a gzip v1 wrapper, then a v1 entry with a bad CRC
    entries = [
        legacy.encode_message(0, b"k", b"v1", magic=1, timestamp=1500),
        legacy.encode_message(1, None, b"v0", magic=0),
        legacy.build_message_set(
            [SimpleRecord(b"x", key=b"a", timestamp=1700)], magic=1, compression=1, base_offset=2
        ),
    ]
    bad = bytearray(legacy.encode_message(3, b"k", b"v", magic=1, timestamp=1800))
    bad[-1] ^= 0xFF
    log_file = tmp_path / "00000000000000000000.log"
    log_file.write_bytes(b"".join(entries) + bytes(bad))
    status, out, err = run([log_file])
    lines = out.splitlines()
    assert status == 0 and not err
    assert lines[2] == (
        f"offset: 0 position: 0 CreateTime: 1500 size: {len(entries[0])} magic: 1 "
        f"compresscodec: none crc: {int.from_bytes(entries[0][12:16], 'big')} isvalid: true"
    )
    assert lines[3].startswith(f"offset: 1 position: {len(entries[0])} NoTimestampType: -1 ")
    assert "magic: 0 compresscodec: none" in lines[3] and lines[3].endswith("isvalid: true")
    assert "magic: 1 compresscodec: gzip" in lines[4] and lines[4].endswith("isvalid: true")
    assert lines[5].startswith("offset: 3 ") and lines[5].endswith("isvalid: false")
    assert len(lines) == 6
