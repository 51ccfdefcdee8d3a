"""storage/ may not import protocol.error_codes, so its exceptions carry plain ints: check here
that each one is the Kafka error code its docstring names."""

import importlib
import pkgutil
import re

import pytest

import storage
from protocol.error_codes import ErrorCode
from storage import errors, producer_state, records

EXPECTED = {
    errors.StorageError: ErrorCode.UNKNOWN_SERVER_ERROR,
    errors.OffsetOutOfRange: ErrorCode.OFFSET_OUT_OF_RANGE,
    errors.RecordTooLarge: ErrorCode.MESSAGE_TOO_LARGE,
    errors.RecordBatchTooLarge: ErrorCode.RECORD_LIST_TOO_LARGE,
    errors.KafkaStorageError: ErrorCode.KAFKA_STORAGE_ERROR,
    errors.InconsistentTopicId: ErrorCode.INCONSISTENT_TOPIC_ID,
    records.CorruptLogData: ErrorCode.CORRUPT_MESSAGE,
    producer_state.OutOfOrderSequence: ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
    producer_state.InvalidProducerEpoch: ErrorCode.INVALID_PRODUCER_EPOCH,
    producer_state.TransactionCoordinatorFenced: ErrorCode.TRANSACTION_COORDINATOR_FENCED,
    producer_state.InvalidTxnMarker: ErrorCode.CORRUPT_MESSAGE,
    producer_state.InvalidTxnState: ErrorCode.INVALID_TXN_STATE,
}


def _storage_errors() -> set[type[errors.StorageError]]:
    for module in pkgutil.iter_modules(storage.__path__):
        importlib.import_module(f"storage.{module.name}")
    found: set[type[errors.StorageError]] = set()
    todo = [errors.StorageError]
    while todo:
        cls = todo.pop()
        found.add(cls)
        todo.extend(cls.__subclasses__())
    return found


@pytest.mark.parametrize("cls", list(EXPECTED), ids=lambda c: c.__name__)
def test_error_code_is_the_kafka_code(cls):
    assert cls.error_code == EXPECTED[cls]
    assert ErrorCode.of(cls.error_code) is EXPECTED[cls]


def test_every_storage_error_with_its_own_code_is_checked():
    own_code = {c for c in _storage_errors() if "error_code" in vars(c)}
    assert own_code == set(EXPECTED)


def test_docstrings_name_the_code():
    for cls, code in EXPECTED.items():
        if cls is errors.StorageError:
            continue
        named = re.findall(r"\(([A-Z_]+)\)", cls.__doc__ or "")
        assert named == [code.name], cls
