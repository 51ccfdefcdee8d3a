"""__transaction_state values as Kafka writes and reads them (its TransactionLog): the
partitions list is null only in state Empty; every other state carries a list, empty or not,
because Kafka's loader reads the partitions of every state but Empty. The coordinator's
field-by-field encoder gives the schema's bytes."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from coordination.txn.metadata import TxnState
from coordination.txn.records import (
    TransactionLogValue,
    TxnLogValue,
    parse_txn_value,
    txn_value,
    txn_value_by_schema,
)
from protocol.codegen import decode_version_prefixed


def _value(state: TxnState, partitions: frozenset[tuple[str, int]]) -> TxnLogValue:
    return TxnLogValue(
        producer_id=7,
        previous_producer_id=-1,
        next_producer_id=-1,
        producer_epoch=1,
        timeout_ms=60000,
        state=int(state),
        partitions=partitions,
        last_update_ms=1,
        start_ms=1,
    )


def _partitions(data: bytes) -> Any:
    """The encoded transaction_partitions field (None when written as null)."""
    _, value = decode_version_prefixed(TransactionLogValue, data)
    return value.transaction_partitions


def test_empty_state_writes_null_partitions() -> None:
    data = txn_value(_value(TxnState.EMPTY, frozenset()))
    assert _partitions(data) is None
    assert parse_txn_value(data).partitions == frozenset()


def test_complete_states_write_an_empty_list() -> None:
    for state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
        data = txn_value(_value(state, frozenset()))
        assert _partitions(data) == [], state
        assert parse_txn_value(data).partitions == frozenset()


def test_ongoing_state_writes_its_partitions() -> None:
    data = txn_value(_value(TxnState.ONGOING, frozenset({("t", 0), ("t", 1)})))
    assert len(_partitions(data)) == 1  # one topic
    assert parse_txn_value(data).partitions == frozenset({("t", 0), ("t", 1)})


_INT64 = st.integers(-(2**63), 2**63 - 1)


@given(
    producer_id=_INT64,
    previous_producer_id=st.one_of(st.just(-1), _INT64),
    next_producer_id=st.one_of(st.just(-1), _INT64),
    producer_epoch=st.integers(-(2**15), 2**15 - 1),
    timeout_ms=st.integers(-(2**31), 2**31 - 1),
    state=st.integers(0, 7),
    partitions=st.frozensets(
        st.tuples(st.one_of(st.just("t"), st.text(min_size=1)), st.integers(0, 2**31 - 1)),
        max_size=20,
    ),
    last_update_ms=_INT64,
    start_ms=_INT64,
    client_transaction_version=st.one_of(st.just(0), st.integers(-(2**15), 2**15 - 1)),
)
def test_field_by_field_encoder_gives_the_schemas_bytes(**fields: Any) -> None:
    value = TxnLogValue(**fields)
    data = txn_value(value)
    assert data == txn_value_by_schema(value)
    if value.partitions or value.state != 0:
        assert parse_txn_value(data) == value
