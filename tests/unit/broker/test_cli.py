import pytest

from broker.cli import main
from storage.config import LogConfig
from storage.loader import load_log
from tests.unit.storage.util import FakeClock, make_batch


@pytest.fixture
def log_file(tmp_path):
    directory = tmp_path / "t-0"
    log = load_log(directory, LogConfig(), clock=FakeClock(), had_clean_shutdown=True)
    log.append(make_batch(2, keys=[b"a", b"b"], values=[b"hello", b"world"]))
    log.close()
    return directory / "00000000000000000000.log"


def test_dump_log_records(log_file, capsys):
    assert main(["dump-log", str(log_file), "--records"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        f"Dumping {log_file}\nLog starting offset: 0\nbaseOffset: 0 lastOffset: 1 "
    )
    assert "| offset: 0 CreateTime: " in out and "| offset: 1 CreateTime: " in out
    assert "payload" not in out


def test_dump_log_batches_only_and_print_data(log_file, capsys):
    assert main(["dump-log", str(log_file)]) == 0
    assert "| offset:" not in capsys.readouterr().out
    assert main(["dump-log", str(log_file), "--print-data-log"]) == 0
    assert "key: a payload: hello" in capsys.readouterr().out


def test_dump_log_kafka_options(log_file, tmp_path, capsys):
    assert main(["dump-log", "--files", str(log_file), "--deep-iteration"]) == 0
    assert "| offset: 0" in capsys.readouterr().out
    assert main(["dump-log", str(tmp_path / "missing.log")]) == 1
    with pytest.raises(SystemExit) as exc:
        main(["dump-log"])
    assert exc.value.code == 2
    assert "no files given" in capsys.readouterr().err
