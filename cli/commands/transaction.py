"""``odradek transaction list|describe|describe-producers``: what ``kafka-transactions`` shows,
over ListTransactions (every broker), DescribeTransactions (the id's coordinator) and
DescribeProducers (each partition's leader), KIP-664."""

from __future__ import annotations

import click

from cli.client import AdminClient, SecurityAdmin, check
from cli.options import with_client
from cli.output import emit, format_option


@click.group()
def transaction() -> None:
    """Transactions and the producers writing a partition (as kafka-transactions)."""


@transaction.command("list")
@click.option("--state", "states", multiple=True, help="e.g. Ongoing, CompleteCommit")
@click.option("--producer-id", "producer_ids", multiple=True, type=int)
@click.option(
    "--transactional-id-pattern",
    "pattern",
    help="only the ids this regular expression matches whole (RE2 syntax, as Kafka's)",
)
@format_option()
@with_client
def list_(
    client: AdminClient,
    states: tuple[str, ...],
    producer_ids: tuple[int, ...],
    pattern: str | None,
    fmt: str,
) -> None:
    """Every transactional id of the cluster, its producer id and state."""
    rows = [
        {
            "transactional_id": t.transactional_id,
            "producer_id": t.producer_id,
            "state": t.transaction_state,
        }
        for t in SecurityAdmin(client).list_transactions(list(states), list(producer_ids), pattern)
    ]
    rows.sort(key=lambda r: r["transactional_id"])
    emit(
        rows,
        fmt,
        [
            ("TRANSACTIONAL-ID", "transactional_id"),
            ("PRODUCER-ID", "producer_id"),
            ("STATE", "state"),
        ],
        empty="no transactions",
    )


@transaction.command("describe")
@click.argument("transactional_id")
@format_option()
@with_client
def describe(client: AdminClient, transactional_id: str, fmt: str) -> None:
    """State, producer id and epoch, timeout, start time and partitions of a transaction."""
    s = SecurityAdmin(client).describe_transaction(transactional_id)
    emit(
        {
            "transactional_id": s.transactional_id,
            "state": s.transaction_state,
            "producer_id": s.producer_id,
            "producer_epoch": s.producer_epoch,
            "timeout_ms": s.transaction_timeout_ms,
            "start_time_ms": s.transaction_start_time_ms
            if s.transaction_start_time_ms >= 0
            else None,
            "partitions": sorted(f"{t.topic}-{p}" for t in s.topics for p in t.partitions),
        },
        fmt,
    )


@transaction.command("describe-producers")
@click.option("--topic", required=True)
@click.option("--partition", "partitions", multiple=True, type=int, help="default: every one")
@format_option()
@with_client
def describe_producers(
    client: AdminClient, topic: str, partitions: tuple[int, ...], fmt: str
) -> None:
    """The producers with state in a topic's partitions (epochs, sequences, open transaction)."""
    chosen = list(partitions) or sorted(client.topic(topic).partitions)
    answers = SecurityAdmin(client).describe_producers(topic, chosen)
    rows = []
    for p in sorted(answers):
        answer = answers[p]
        check(answer.error_code, f"DescribeProducers {topic}-{p}", answer.error_message)
        for s in answer.active_producers:
            rows.append(
                {
                    "topic": topic,
                    "partition": p,
                    "producer_id": s.producer_id,
                    "producer_epoch": s.producer_epoch,
                    "last_sequence": s.last_sequence,
                    "last_timestamp": s.last_timestamp,
                    "coordinator_epoch": s.coordinator_epoch,
                    "current_transaction_start_offset": s.current_txn_start_offset,
                }
            )
    emit(
        rows,
        fmt,
        [
            ("PARTITION", "partition"),
            ("PRODUCER-ID", "producer_id"),
            ("EPOCH", "producer_epoch"),
            ("LAST-SEQUENCE", "last_sequence"),
            ("LAST-TIMESTAMP", "last_timestamp"),
            ("COORDINATOR-EPOCH", "coordinator_epoch"),
            ("TXN-START-OFFSET", "current_transaction_start_offset"),
        ],
        empty="no active producers",
    )
