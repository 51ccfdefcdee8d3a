"""KIP-890 part 1 verification broker to broker (Kafka's ``AddPartitionsToTxnManager``).

A partition leader about to append a transactional producer's first batch of a transaction
(the producer has no transaction open there) asks the producer's transaction coordinator
whether the partition was added to the transaction, so that a batch the coordinator does not
know about never starts a transaction no marker will ever end (a hanging transaction). When
this broker coordinates the transactional id the produce handler asks its own coordinator;
otherwise :class:`TransactionVerifier` sends AddPartitionsToTxn v4+ with ``verify_only`` to the
broker leading the id's ``__transaction_state`` partition, over the inter-broker listener (its
TLS and SASL, as the marker channel).

As in Kafka, the requests to one coordinator are batched: at most one request is in flight per
broker, and the verifications that arrive meanwhile go together in the next one (one entry per
transactional id: a second verification of the same id answers the first NETWORK_EXCEPTION
when its epoch is the same, INVALID_PRODUCER_EPOCH when it is older, and is itself answered
INVALID_PRODUCER_EPOCH when it is the older one). Each verification is answered exactly once,
with the errors of the partitions that failed (an empty map: verified): the coordinator's
answers (PRODUCER_FENCED as INVALID_PRODUCER_EPOCH, which producers expect here; a refused
CLUSTER_ACTION as INVALID_TXN_STATE), NETWORK_EXCEPTION when the coordinator cannot be reached
or answers late, COORDINATOR_NOT_AVAILABLE when the id's partition has no live leader. A
coordinator that speaks no version 4 or later skips verification (an empty map), as Kafka does.
The produce handler turns the retriable errors into NOT_ENOUGH_REPLICAS for the producer.

With transaction version 2 (KIP-890 part 2) the leader asks the coordinator to add the
partitions instead (``add``: ``verify_only`` false, which the coordinator takes for version 2),
as Kafka's ``addOrVerifyTransaction`` does for Produce v12+; a coordinator that cannot add
them leaves them out of the transaction (INVALID_TXN_STATE).

Thread-safety: :meth:`TransactionVerifier.verify` may be called from any thread; its callback
runs on the main loop. Everything else runs on the main loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from broker.interbroker import AsyncInterBrokerLinks
from broker.security.inter_broker import InterBrokerSecurity
from coordination.metadata.store import MetadataStore
from coordination.metadata.view import TRANSACTION_STATE_TOPIC
from protocol.api_keys import ApiKey
from protocol.client import UnsupportedApi
from protocol.error_codes import ErrorCode
from protocol.errors import ProtocolError
from protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopic,
    AddPartitionsToTxnTransaction,
)

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
#: the partitions that failed verification, with their errors (empty: verified)
VerifyCallback = Callable[[dict[TopicPartition, ErrorCode]], None]

#: the versions of AddPartitionsToTxn with the brokers' batched form (KIP-890)
VERIFY_VERSIONS = (4, 5)


@dataclass(slots=True)
class _Verification:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: list[TopicPartition]
    callback: VerifyCallback
    #: add the partitions to the transaction (transaction version 2), not only verify them
    add: bool = False

    def fail(self, error: ErrorCode) -> None:
        self.callback(dict.fromkeys(self.partitions, error))


class TransactionVerifier:
    """See the module docstring."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        *,
        broker_id: int,
        metadata: MetadataStore,
        partition_for: Callable[[str], int],
        listener: str | None,
        security: InterBrokerSecurity | None = None,
        request_timeout_s: float = 30.0,
    ) -> None:
        self.loop = loop
        self.broker_id = broker_id
        self.metadata = metadata
        self.partition_for = partition_for
        self.listener = listener
        self.security = security
        self.request_timeout_s = request_timeout_s
        self._pending: dict[int, dict[str, _Verification]] = {}
        self._in_flight: set[int] = set()
        self._links = AsyncInterBrokerLinks(
            lambda: metadata.view,
            listener=listener,
            client_id=f"broker-{broker_id}-txn-verification",
            apis={ApiKey.ADD_PARTITIONS_TO_TXN: VERIFY_VERSIONS},
            security=security,
            timeout_s=request_timeout_s,
        )
        self._tasks: set[asyncio.Task[None]] = set()
        self._stopped = False
        #: verifications sent and answered (metrics, tests)
        self.sent = 0
        self.failed = 0

    def verify(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Sequence[TopicPartition],
        callback: VerifyCallback,
        *,
        add: bool = False,
    ) -> None:
        """Asks the id's coordinator whether ``partitions`` are in the producer's transaction
        (``add``: to add them); ``callback`` gets the partitions that are not (or could not be
        verified or added), once."""
        verification = _Verification(
            transactional_id, producer_id, producer_epoch, list(partitions), callback, add
        )
        try:
            self.loop.call_soon_threadsafe(self._add, verification)
        except RuntimeError:  # the main loop is closed: the broker is stopping
            verification.fail(ErrorCode.COORDINATOR_NOT_AVAILABLE)

    def shutdown(self) -> None:
        """Answers what waits (COORDINATOR_NOT_AVAILABLE) and closes the links. On the main
        loop or after it stopped."""
        self._stopped = True
        pending, self._pending = self._pending, {}
        for batch in pending.values():
            for verification in batch.values():
                verification.fail(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        self._links.close()

    # -- on the main loop ------------------------------------------------------------------------

    def _coordinator(self, transactional_id: str) -> int | None:
        view = self.metadata.view
        state = view.partition(TRANSACTION_STATE_TOPIC, self.partition_for(transactional_id))
        if state is None or state.leader < 0 or state.leader not in view.brokers:
            return None
        return state.leader

    def _add(self, verification: _Verification) -> None:
        if self._stopped:
            verification.fail(ErrorCode.COORDINATOR_NOT_AVAILABLE)
            return
        node = self._coordinator(verification.transactional_id)
        if node is None:
            verification.fail(ErrorCode.COORDINATOR_NOT_AVAILABLE)
            return
        batch = self._pending.setdefault(node, {})
        existing = batch.get(verification.transactional_id)
        if existing is not None:
            if existing.producer_epoch <= verification.producer_epoch:
                # the newer request replaces the one waiting (a retry, or a newer producer)
                del batch[verification.transactional_id]
                existing.fail(
                    ErrorCode.INVALID_PRODUCER_EPOCH
                    if existing.producer_epoch < verification.producer_epoch
                    else ErrorCode.NETWORK_EXCEPTION
                )
            else:
                verification.fail(ErrorCode.INVALID_PRODUCER_EPOCH)
                return
        batch[verification.transactional_id] = verification
        self._maybe_send(node)

    def _maybe_send(self, node: int) -> None:
        if self._stopped or node in self._in_flight or not self._pending.get(node):
            return
        batch = self._pending.pop(node)
        self._in_flight.add(node)
        task = self.loop.create_task(self._send(node, batch))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(self, node: int, batch: dict[str, _Verification]) -> None:
        try:
            results = await self._exchange(node, batch)
        except Exception:  # a bug: every verification is still answered
            log.exception("verifying transactions with broker %d failed", node)
            results = {
                t: dict.fromkeys(v.partitions, ErrorCode.UNKNOWN_SERVER_ERROR)
                for t, v in batch.items()
            }
        finally:
            self._in_flight.discard(node)
        self.sent += len(batch)
        for txn_id, verification in batch.items():
            errors = results.get(txn_id)
            if errors is None:
                errors = dict.fromkeys(verification.partitions, ErrorCode.NETWORK_EXCEPTION)
            if errors:
                self.failed += 1
            try:
                verification.callback(errors)
            except Exception:  # a callback's bug must not stop the others
                log.exception("a verification callback of %s failed", txn_id)
        self._maybe_send(node)

    async def _exchange(
        self, node: int, batch: dict[str, _Verification]
    ) -> dict[str, dict[TopicPartition, ErrorCode]]:
        """One AddPartitionsToTxn (verify_only) for ``batch``: the failed partitions of each
        transactional id."""

        def everyone(error: ErrorCode) -> dict[str, dict[TopicPartition, ErrorCode]]:
            return {t: dict.fromkeys(v.partitions, error) for t, v in batch.items()}

        link = self._links.get(node)
        if link is None:
            return everyone(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        transactions = []
        for v in batch.values():
            by_topic: dict[str, list[int]] = {}
            for topic, partition in v.partitions:
                by_topic.setdefault(topic, []).append(partition)
            transactions.append(
                AddPartitionsToTxnTransaction(
                    transactional_id=v.transactional_id,
                    producer_id=v.producer_id,
                    producer_epoch=v.producer_epoch,
                    verify_only=not v.add,
                    topics=[
                        AddPartitionsToTxnTopic(name=t, partitions=ps) for t, ps in by_topic.items()
                    ],
                )
            )
        try:
            answer = await link.request(AddPartitionsToTxnRequest(transactions=transactions))
        except UnsupportedApi as e:
            log.warning(
                "broker %d cannot verify transactions (%s): appending without verification",
                node,
                e,
            )
            return {
                t: dict.fromkeys(v.partitions, ErrorCode.INVALID_TXN_STATE) if v.add else {}
                for t, v in batch.items()
            }
        except (TimeoutError, OSError, ProtocolError, ConnectionError) as e:
            log.warning("verifying transactions with broker %d failed: %s", node, e)
            return everyone(ErrorCode.NETWORK_EXCEPTION)
        top = ErrorCode.of(answer.error_code)
        if top != ErrorCode.NONE:
            log.error("AddPartitionsToTxn to broker %d answered %s", node, top.name)
            # producers must not see CLUSTER_AUTHORIZATION_FAILED: the partition is unverified
            return everyone(
                ErrorCode.INVALID_TXN_STATE
                if top == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                else top
            )
        out: dict[str, dict[TopicPartition, ErrorCode]] = {}
        for result in answer.results_by_transaction:
            failed: dict[TopicPartition, ErrorCode] = {}
            for topic in result.topic_results:
                for p in topic.results_by_partition:
                    code = ErrorCode.of(p.partition_error_code)
                    if code == ErrorCode.NONE:
                        continue
                    # producers expect INVALID_PRODUCER_EPOCH here
                    failed[(topic.name, p.partition_index)] = (
                        ErrorCode.INVALID_PRODUCER_EPOCH
                        if code == ErrorCode.PRODUCER_FENCED
                        else code
                    )
            out[result.transactional_id] = failed
        return out
