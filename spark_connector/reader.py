"""Reading one offset range of one partition into pyarrow RecordBatches (runs in executors).

The loop keeps one Fetch in flight ahead of decoding: as soon as a response's batch headers say
where the next fetch starts, that request goes out, and the records of the current response are
decoded while the broker works on the next one.

Offsets that the plan expects but the log no longer has (deleted by retention or DeleteRecords,
or a log truncated below them) are data loss: with ``failOnDataLoss`` (the default) the read
fails with :class:`DataLossError`, otherwise it logs a warning and reads what is there. Errors
a new leader may cure (NOT_LEADER_OR_FOLLOWER, a dropped connection, ...) are retried with fresh
metadata until ``kafkaConsumer.pollTimeoutMs``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa

from protocol.error_codes import ErrorCode
from spark_connector.arrow_records import (
    TransactionFilter,
    decode_batches,
    scan_batches,
    to_record_batch,
)
from spark_connector.client import (
    READ_COMMITTED,
    BrokerUnavailable,
    ClientConfig,
    FetchedPartition,
    KafkaClient,
    KafkaClientError,
    KafkaErrorResponse,
    PendingFetch,
    _Retry,
    is_retriable,
    shared_client,
)
from spark_connector.offsets import OffsetRange
from spark_connector.options import FetchSettings

log = logging.getLogger(__name__)

#: How long a partition whose log ends below the planned range gets to catch up (a new leader's
#: high watermark may lag for a moment after a failover) before that counts as data loss.
LOG_END_GRACE_S = 5.0

DATA_LOSS_ADVICE = (
    "Some data may have been lost because it is not available in Kafka any more: it was aged "
    "out by retention, deleted, or the topic was deleted or recreated before all of it was "
    "processed. If you want the query to go on in such cases, set the source option "
    "'failOnDataLoss' to 'false'."
)


class DataLossError(KafkaClientError):
    """Offsets a query needs are gone, and ``failOnDataLoss`` is true."""


def report_data_loss(message: str, fail_on_data_loss: bool) -> None:
    if fail_on_data_loss:
        raise DataLossError(f"{message}. {DATA_LOSS_ADVICE}")
    log.warning("%s. Going on because failOnDataLoss is false.", message)


@dataclass(frozen=True)
class ReadSettings:
    """What an executor needs to read a range; small and picklable."""

    client: ClientConfig
    fetch: FetchSettings
    include_headers: bool
    fail_on_data_loss: bool


def read_range(settings: ReadSettings, r: OffsetRange) -> Iterator[pa.RecordBatch]:
    """The records of ``r``, as RecordBatches of the source's Arrow schema (empty ones left
    out)."""
    return _RangeReader(settings, r, shared_client(settings.client)).run()


class _RangeReader:
    def __init__(self, settings: ReadSettings, r: OffsetRange, client: KafkaClient) -> None:
        self.settings = settings
        self.fetch = settings.fetch
        self.range = r
        self.client = client
        self.topic = r.topic
        self.partition = r.partition
        self.max_bytes = settings.fetch.max_partition_fetch_bytes
        self.read_committed = settings.fetch.isolation_level == READ_COMMITTED
        self.transactions = TransactionFilter() if self.read_committed else None
        self.stalled_since: float | None = None
        self.backoff = client.backoff()

    @property
    def tp_name(self) -> str:
        return f"{self.topic}-{self.partition}"

    def run(self) -> Iterator[pa.RecordBatch]:
        position = self.range.from_offset
        until = self.range.until_offset
        pending: PendingFetch | None = None
        try:
            while position < until:
                if pending is None:
                    pending = self._send(position)
                try:
                    fetched = self.client.receive_fetch(pending)
                except BrokerUnavailable as e:
                    pending = None
                    self._stall(f"fetching {self.tp_name} at {position}: {e}")
                    continue
                pending = None
                code = fetched.error
                if code == ErrorCode.OFFSET_OUT_OF_RANGE:
                    position = self._out_of_range(position, until)
                    continue
                if code != ErrorCode.NONE:
                    if not is_retriable(code):
                        raise KafkaErrorResponse(code, f"Fetch {self.tp_name} at {position}")
                    self._stall(f"Fetch {self.tp_name}: {ErrorCode.of(code).name}")
                    continue
                if self.transactions is not None:
                    self.transactions.add(fetched.aborted)
                scan = scan_batches(
                    fetched.records,
                    position,
                    until,
                    check_crcs=self.fetch.check_crcs,
                    transactions=self.transactions,
                )
                if scan.next_offset > position:
                    next_position = scan.next_offset
                    if next_position < until:
                        pending = self._send(next_position)  # overlaps the decoding below
                    if scan.batches:
                        columns = decode_batches(
                            fetched.records,
                            scan.batches,
                            position,
                            until,
                            include_headers=self.settings.include_headers,
                        )
                        if columns.count:
                            yield to_record_batch(columns, self.topic, self.partition)
                    position = next_position
                    self.stalled_since = None
                    self.backoff.reset()
                    continue
                position = self._no_progress(position, until, fetched, scan.truncated)
        finally:
            if pending is not None:
                self.client.forget_pending(pending)

    def _send(self, position: int) -> PendingFetch:
        def attempt() -> PendingFetch:
            return self.client.send_fetch(
                self.topic,
                self.partition,
                position,
                max_bytes=self.max_bytes,
                max_wait_ms=self.fetch.fetch_max_wait_ms,
                isolation_level=self.fetch.isolation_level,
            )

        return self.client.retrying(
            f"Fetch {self.tp_name}", attempt, deadline_s=self.fetch.poll_timeout_ms / 1000
        )

    def _stall(self, why: str) -> None:
        """Waits a little before retrying; gives up after ``pollTimeoutMs`` without progress."""
        now = time.monotonic()
        if self.stalled_since is None:
            self.stalled_since = now
        elif now - self.stalled_since > self.fetch.poll_timeout_ms / 1000:
            raise KafkaClientError(
                f"no progress reading {self.tp_name} for {self.fetch.poll_timeout_ms} ms "
                f"(kafkaConsumer.pollTimeoutMs): {why}"
            )
        log.debug("%s; retrying", why)
        self.backoff.sleep()
        try:
            self.client.refresh_metadata([self.topic])
        except KafkaClientError as e:
            log.debug("metadata refresh failed: %s", e)

    def _log_bounds(self) -> tuple[int, int]:
        tp = (self.topic, self.partition)

        def attempt() -> tuple[int, int]:
            earliest = self.client.earliest_offsets([tp])[tp]
            latest = self.client.latest_offsets([tp], isolation_level=self.fetch.isolation_level)[
                tp
            ]
            return earliest, latest

        return self.client.retrying(f"ListOffsets {self.tp_name}", attempt)

    def _out_of_range(self, position: int, until: int) -> int:
        earliest, latest = self._log_bounds()
        if position < earliest:
            lost_until = min(earliest, until)
            report_data_loss(
                f"Cannot fetch offsets [{position}, {lost_until}) of {self.tp_name}: the log "
                f"now starts at {earliest}",
                self.settings.fail_on_data_loss,
            )
            return lost_until
        if position >= latest:
            return self._log_ends_early(position, until, latest)
        self._stall(
            f"{self.tp_name}: offset {position} out of range, log is [{earliest}, {latest})"
        )
        return position

    def _no_progress(
        self, position: int, until: int, fetched: FetchedPartition, truncated: bool
    ) -> int:
        if truncated and len(fetched.records) >= self.max_bytes // 2:
            # A batch bigger than what we asked for (an old broker that cuts batches).
            self.max_bytes = min(self.max_bytes * 2, self.client.config.max_frame_bytes // 2)
            return position
        lso = fetched.last_stable_offset
        log_end = lso if self.read_committed and lso >= 0 else fetched.high_watermark
        if log_end <= position:
            return self._log_ends_early(position, until, log_end)
        # Records should be there and the broker sent none: wait and try again.
        self._stall(f"empty Fetch for {self.tp_name} at {position} below {log_end}")
        return position

    def _log_ends_early(self, position: int, until: int, log_end: int) -> int:
        """The log ends at ``log_end`` <= position < until: wait for a lagging high watermark a
        moment, then count the rest of the range as lost."""
        now = time.monotonic()
        if self.stalled_since is None:
            self.stalled_since = now
        if now - self.stalled_since < LOG_END_GRACE_S:
            self.backoff.sleep()
            try:
                self.client.refresh_metadata([self.topic])
            except (KafkaClientError, _Retry) as e:
                log.debug("metadata refresh failed: %s", e)
            return position
        report_data_loss(
            f"Cannot fetch offsets [{position}, {until}) of {self.tp_name}: the log ends at "
            f"{log_end}",
            self.settings.fail_on_data_loss,
        )
        return until
