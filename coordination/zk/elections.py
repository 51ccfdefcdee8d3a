"""The controller's elections beyond failover (Kafka's ``KafkaController``): controlled shutdown,
elections asked for by admin clients (ElectLeaders, KIP-460, and the legacy
``/admin/preferred_replica_election`` znode), and automatic preferred-leader rebalancing.

* **Controlled shutdown** (``doControlledShutdown``): the broker joins
  :attr:`~coordination.zk.controller.ZkController.shutting_down`; every replicated partition it
  leads gets the first replica in assignment order that is alive, in the ISR and not shutting
  down (the shutting-down brokers leave its ISR); every partition it follows in drops it from the
  ISR. Each change bumps the leader epoch. The answer is the replicated partitions it still
  leads (no other in-sync replica); the broker asks again until none remain.
* **Admin elections**: PREFERRED moves leadership to the first assigned replica when it is alive
  and in the ISR; UNCLEAN elects a replica for a partition without a live leader, an in-sync one
  first, else any live one. Per partition: ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE,
  ELIGIBLE_LEADERS_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION (topic being
  deleted).
* **Automatic rebalancing** (``auto.leader.rebalance.enable``): every
  ``leader.imbalance.check.interval.seconds`` (first 5 s after becoming controller), for each
  broker the share of the partitions it is the preferred replica of that it does not lead; above
  ``leader.imbalance.per.broker.percentage`` the preferred replica is elected where it can be.

Thread-safety: the store's worker thread only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from typing import Any

from coordination.errors import KafkaApiError, NotController
from coordination.metadata.election import (
    ElectionType,
    admin_election,
    controlled_shutdown_leader,
    election_failure_message,
    preferred_replica_leader,
)
from coordination.metadata.store import ElectionResult, TopicPartition
from coordination.zk import data as zd
from coordination.zk.cache import Event
from coordination.zk.client import Op
from coordination.zk.controller import ZkController
from protocol.error_codes import ErrorCode

log = logging.getLogger(__name__)

#: Kafka schedules the first automatic rebalance check this long after a controller failover.
FIRST_REBALANCE_CHECK_DELAY_S = 5.0
#: How many times a change that raced with another writer is recomputed and written again.
WRITE_ATTEMPTS = 5

AUTO_REBALANCE: Event = ("auto_rebalance",)
PREFERRED_REPLICA_ELECTION: Event = ("preferred_replica_election",)


class ZkElections:
    def __init__(
        self,
        controller: ZkController,
        *,
        auto_leader_rebalance_enable: bool,
        leader_imbalance_check_interval_s: float,
        leader_imbalance_per_broker_percentage: int,
        schedule: Callable[[float, Event], None],
    ) -> None:
        self.controller = controller
        self.cache = controller.cache
        self.zk = controller.zk
        self.auto_leader_rebalance_enable = auto_leader_rebalance_enable
        self.leader_imbalance_check_interval_s = leader_imbalance_check_interval_s
        self.leader_imbalance_per_broker_percentage = leader_imbalance_per_broker_percentage
        self.schedule = schedule
        controller.on_failover.append(self.on_failover)

    def on_failover(self) -> None:
        if self.auto_leader_rebalance_enable:
            self.schedule(FIRST_REBALANCE_CHECK_DELAY_S, AUTO_REBALANCE)
        self.process_preferred_replica_election_znode()

    def _watch_preferred(self, event: Any) -> None:
        if event.type != "NONE":
            self.controller.post(PREFERRED_REPLICA_ELECTION)

    def _require_controller(self) -> None:
        if not self.controller.is_controller:
            raise NotController(
                f"Broker {self.controller.broker_id} is not the controller "
                f"(the controller is {self.controller.controller_id})"
            )

    # -- controlled shutdown ---------------------------------------------------------------------

    def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> list[TopicPartition]:
        self._require_controller()
        cache, controller = self.cache, self.controller
        known_epoch = cache.broker_epochs.get(broker_id)
        if broker_epoch != -1 and known_epoch is not None and broker_epoch < known_epoch:
            raise KafkaApiError(
                f"Received controlled shutdown request from an old broker epoch {broker_epoch} "
                f"for broker {broker_id}. Current broker epoch is {known_epoch}.",
                ErrorCode.STALE_BROKER_EPOCH,
            )
        if known_epoch is None:
            raise KafkaApiError(
                f"Broker id {broker_id} does not exist.", ErrorCode.BROKER_NOT_AVAILABLE
            )
        log.info("controlled shutdown of broker %d", broker_id)
        controller.shutting_down[broker_id] = known_epoch
        for topic in sorted(cache.topics):
            self._move_off(topic, broker_id)
        return self._leads(broker_id)

    def _move_off(self, topic: str, broker_id: int) -> None:
        """Leadership of ``topic``'s replicated partitions moves off ``broker_id`` where another
        in-sync replica can take it; ``broker_id`` leaves the ISRs (retried when the states
        changed under the controller)."""
        for _ in range(WRITE_ATTEMPTS):
            cached = self.cache.topics.get(topic)
            if cached is None:
                return
            live = self.controller.live_brokers()
            shutting_down = self.controller.ineligible_brokers()
            offline = self.controller.offline_replicas()
            changes: dict[int, tuple[int, tuple[int, ...]]] = {}
            for p, replicas in cached.assignment.partitions.items():
                state = self.cache.states.get((topic, p))
                if len(replicas) <= 1 or broker_id not in replicas or state is None:
                    continue
                if state.leader == broker_id:
                    online = self.controller.live_replicas_of(topic, p, live, offline)
                    leader = controlled_shutdown_leader(replicas, state.isr, online, shutting_down)
                    if leader is not None:
                        isr = tuple(r for r in state.isr if r not in shutting_down)
                        changes[p] = (leader, isr)
                elif broker_id in state.isr and len(state.isr) > 1:
                    changes[p] = (state.leader, tuple(r for r in state.isr if r != broker_id))
            if not changes:
                return
            written = self.controller.update_partition_states(
                topic, changes, why=f"controlled shutdown of broker {broker_id}"
            )
            if written is None:
                self._require_controller()
            if written:
                return

    def _leads(self, broker_id: int) -> list[TopicPartition]:
        """The replicated partitions ``broker_id`` leads (Kafka's ``partitionLeadersOnBroker``)."""
        out = []
        for topic, cached in self.cache.topics.items():
            for p, replicas in cached.assignment.partitions.items():
                state = self.cache.states.get((topic, p))
                if state is not None and state.leader == broker_id and len(replicas) > 1:
                    out.append((topic, p))
        return sorted(out)

    # -- elections -------------------------------------------------------------------------------

    def elect(
        self,
        election_type: ElectionType,
        partitions: Collection[TopicPartition] | None,
        *,
        why: str = "requested by an admin client",
    ) -> dict[TopicPartition, ElectionResult]:
        """ElectLeaders (KIP-460) for ``partitions`` (None: every partition)."""
        self._require_controller()
        cache = self.cache
        if partitions is None:
            partitions = [
                (t, p) for t, cached in cache.topics.items() for p in cached.assignment.partitions
            ]
        deleting = set(self.zk.children(zd.DELETE_TOPICS_PATH) or [])
        results: dict[TopicPartition, ElectionResult] = {}
        by_topic: dict[str, list[int]] = {}
        for topic, p in partitions:
            cached = cache.topics.get(topic)
            if cached is None or p not in cached.assignment.partitions:
                results[(topic, p)] = ElectionResult(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."
                )
            elif topic in deleting:
                results[(topic, p)] = ElectionResult(
                    ErrorCode.INVALID_TOPIC_EXCEPTION, "The topic is being deleted"
                )
            else:
                by_topic.setdefault(topic, []).append(p)
        for topic, indexes in sorted(by_topic.items()):
            results.update(self._elect_in_topic(election_type, topic, indexes, why))
        return results

    def _elect_in_topic(
        self, election_type: ElectionType, topic: str, indexes: list[int], why: str
    ) -> dict[TopicPartition, ElectionResult]:
        results: dict[TopicPartition, ElectionResult] = {}
        for _ in range(WRITE_ATTEMPTS):
            cached = self.cache.topics.get(topic)
            if cached is None:
                break
            live = self.controller.live_brokers()
            ineligible = self.controller.ineligible_brokers()
            offline = self.controller.offline_replicas()
            changes: dict[int, tuple[int, tuple[int, ...]]] = {}
            for p in indexes:
                replicas = cached.assignment.partitions.get(p, ())
                state = self.cache.states.get((topic, p))
                if state is None:
                    outcome_error = (
                        ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
                        if election_type == ElectionType.PREFERRED
                        else ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
                    )
                    results[(topic, p)] = ElectionResult(
                        outcome_error, election_failure_message(topic, p, election_type)
                    )
                    continue
                online = self.controller.live_replicas_of(topic, p, live, offline)
                outcome = admin_election(
                    election_type, state.leader, state.isr, replicas, online, ineligible=ineligible
                )
                if outcome.change is not None:
                    changes[p] = outcome.change
                    results[(topic, p)] = ElectionResult(ErrorCode.NONE, None, outcome.change[0])
                elif outcome.error == ErrorCode.ELECTION_NOT_NEEDED:
                    results[(topic, p)] = ElectionResult(outcome.error)
                else:
                    results[(topic, p)] = ElectionResult(
                        outcome.error, election_failure_message(topic, p, election_type)
                    )
            if not changes:
                return results
            written = self.controller.update_partition_states(
                topic, changes, why=f"{election_type.name.lower()} election {why}"
            )
            if written is None:
                self._require_controller()
            if written:
                return results
        for p in indexes:
            if results.get((topic, p), ElectionResult(ErrorCode.NONE)).error == ErrorCode.NONE:
                results[(topic, p)] = ElectionResult(
                    ErrorCode.REQUEST_TIMED_OUT,
                    f"The state of {topic}-{p} kept changing during the election",
                )
        return results

    # -- automatic preferred-leader rebalancing ----------------------------------------------------

    def check_auto_rebalance(self) -> None:
        """Kafka's ``checkAndTriggerAutoLeaderRebalance``; then the next check is scheduled."""
        if not self.controller.is_controller or not self.auto_leader_rebalance_enable:
            return
        try:
            self._rebalance()
        finally:
            self.schedule(self.leader_imbalance_check_interval_s, AUTO_REBALANCE)

    def _rebalance(self) -> None:
        cache = self.cache
        deleting = set(self.zk.children(zd.DELETE_TOPICS_PATH) or [])
        live = self.controller.live_brokers()
        ineligible = self.controller.ineligible_brokers()
        offline = self.controller.offline_replicas()
        by_preferred: dict[int, list[TopicPartition]] = {}
        for topic, cached in cache.topics.items():
            if topic in deleting:
                continue
            for p, replicas in cached.assignment.partitions.items():
                if replicas:
                    by_preferred.setdefault(replicas[0], []).append((topic, p))
        threshold = self.leader_imbalance_per_broker_percentage / 100
        candidates: list[TopicPartition] = []
        for broker, owned in sorted(by_preferred.items()):
            not_led = []
            for topic, p in owned:
                state = cache.states.get((topic, p))
                if state is not None and state.leader != broker:
                    not_led.append((topic, p))
            if not owned or len(not_led) / len(owned) <= threshold:
                continue
            for topic, p in not_led:
                state = cache.states.get((topic, p))
                replicas = cache.topics[topic].assignment.partitions[p]
                online = self.controller.live_replicas_of(topic, p, live, offline)
                if state is not None and preferred_replica_leader(
                    replicas, state.isr, online, ineligible
                ):
                    candidates.append((topic, p))
        if candidates:
            log.info(
                "automatic leader rebalance: electing the preferred leaders of %d partition(s)",
                len(candidates),
            )
            self.elect(ElectionType.PREFERRED, candidates, why="by the automatic rebalance")

    # -- /admin/preferred_replica_election (legacy) ------------------------------------------------

    def process_preferred_replica_election_znode(self) -> None:
        """Elects the preferred leaders the znode names, then deletes it (Kafka's
        ``PreferredReplicaElectionHandler``); its exists-watch is re-armed."""
        path = zd.PREFERRED_REPLICA_ELECTION_PATH
        got = self.zk.get(path, self._watch_preferred)
        if got is None:
            self.zk.exists(path, self._watch_preferred)
            return
        if not self.controller.is_controller:
            return
        try:
            partitions = zd.decode_preferred_replica_election(got[0])
        except zd.ZkDataError as e:
            log.warning("ignoring %s: %s", path, e)
            partitions = []
        if partitions:
            results = self.elect(ElectionType.PREFERRED, partitions, why=f"named in {path}")
            for (topic, p), result in sorted(results.items()):
                if result.error not in (ErrorCode.NONE, ErrorCode.ELECTION_NOT_NEEDED):
                    log.warning(
                        "preferred replica election of %s-%d failed: %s",
                        topic,
                        p,
                        result.message or result.error.name,
                    )
        if self.controller.multi([Op.delete(path)]) is None:
            return  # not the controller any more (a missing node is fine: someone deleted it)
        self.zk.exists(path, self._watch_preferred)
