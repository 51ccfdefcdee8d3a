"""The controller, as Kafka's ZooKeeper mode has it (``KafkaController``): one broker, elected
through ``/controller``, writes partition states.

Election (Kafka's ``registerControllerAndIncrementControllerEpoch``): read (or create)
``/controller_epoch``, then one multi-op creating the ephemeral ``/controller`` and setting the
epoch + 1 at the version read; losers get NODEEXISTS/BADVERSION and watch ``/controller``. Every
controller write is a multi-op that begins with a version check of ``/controller_epoch``
(:meth:`ZkController.multi`), so a controller that was replaced cannot write.

Duties, run on the store's worker thread after the cache was refreshed:

* :meth:`ZkController.reconcile`: leaders and ISRs for new partitions (first live replica,
  every live replica), another leader from the ISR when a leader is gone
  (:mod:`coordination.metadata.election`; unclean election only when enabled), gone replicas out
  of the ISR; each change written with the leader epoch bumped;
* topic deletions queued under ``/admin/delete_topics``; topic ids for topics written without one;
* purging config change notifications older than 15 minutes;
* ISR change notifications (``/isr_change_notification``, written by leaders that changed their
  ISR with :meth:`~coordination.zk.store.ZkMetadataStore.alter_partition`): the partitions named
  are re-read and the notifications deleted (Kafka's ``IsrChangeNotificationHandler``);
* log dir failures (KIP-112; Kafka's ``LogDirEventNotificationHandler``): a broker that took a
  log dir offline writes ``/brokers/offline_replicas/<id>`` (the replicas it holds there) and a
  ``/log_dir_event_notification`` naming itself; the controller re-reads the offline replicas
  and deletes the notifications. A replica in an offline log dir counts as dead for its
  partition (Kafka's ``isReplicaOnline``): :meth:`ZkController.reconcile` moves the leadership
  to another in-sync replica (bumping the leader epoch) and takes it out of the ISR, as for a
  broker that died; the broker's other partitions are untouched. A broker that restarts has no
  such record (it went with its session) and rejoins the ISRs by catching up;
* controlled shutdown, preferred and unclean elections, automatic leader rebalancing
  (:mod:`coordination.zk.elections`), and partition reassignments
  (:mod:`coordination.zk.reassignments`), which write through
  :meth:`ZkController.update_partition_states`.

Brokers in controlled shutdown (:attr:`ZkController.shutting_down`, Kafka's
``shuttingDownBrokerIds``) are registered but may not lead nor be given new partitions; a broker
leaves the set when its registration goes (or is replaced by a new one).

Thread-safety: owned by the store's worker thread; :attr:`is_controller` may be read anywhere
(and is cleared by the session listener when the session is lost).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kazoo.exceptions import (
    BadVersionError,
    KazooException,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
)

from coordination.metadata.election import initial_leader_and_isr, leader_and_isr_after_change
from coordination.metadata.view import random_kafka_uuid
from coordination.zk import data as zd
from coordination.zk.cache import Post, ZkClusterCache
from coordination.zk.client import Op, Stat, ZkClient, first_failure

log = logging.getLogger(__name__)

#: Kafka's ZkNodeChangeNotificationListener: notifications older than this are purged.
CONFIG_CHANGE_EXPIRATION_MS = 15 * 60 * 1000
#: The dynamic broker config entity of every broker (Kafka's ``<default>``).
DEFAULT_BROKER_ENTITY = "<default>"


class ZkController:
    def __init__(
        self,
        zk: ZkClient,
        cache: ZkClusterCache,
        *,
        broker_id: int,
        unclean_leader_election_enable: bool,
        post: Post,
        schedule_retry: Callable[[float], None],
    ) -> None:
        self.zk = zk
        self.cache = cache
        self.broker_id = broker_id
        self.unclean_leader_election_enable = unclean_leader_election_enable
        self.post = post
        self.schedule_retry = schedule_retry
        self.controller_id = -1
        self.is_controller = False
        self.epoch = -1
        self._epoch_zk_version = -1
        self._conflicts = 0
        self._last_config_purge = 0.0
        #: brokers in controlled shutdown: broker id -> the broker epoch that asked
        self.shutting_down: dict[int, int] = {}
        #: called (on the worker) when this broker becomes the controller: the elections' and
        #: reassignments' own failover work
        self.on_failover: list[Callable[[], None]] = []

    # -- watches (kazoo's threads: only post) --------------------------------------------------

    def _watch_controller(self, event: Any) -> None:
        if event.type != "NONE":
            self.post(("controller",))

    def _watch_delete_topics(self, event: Any) -> None:
        if event.type != "NONE":
            self.post(("delete_topics",))

    def _watch_isr_changes(self, event: Any) -> None:
        if event.type != "NONE":
            self.post(("isr_changes",))

    def _watch_log_dir_events(self, event: Any) -> None:
        if event.type != "NONE":
            self.post(("log_dir_events",))

    # -- election ------------------------------------------------------------------------------

    def load(self) -> None:
        """Reads ``/controller`` (watching it) and runs an election when it is absent."""
        for _ in range(5):
            got = self.zk.get(zd.CONTROLLER_PATH, self._watch_controller)
            if got is None:
                if self.zk.exists(zd.CONTROLLER_PATH, self._watch_controller) is not None:
                    continue
                if self._elect():
                    return
                continue
            data, stat = got
            try:
                controller_id = zd.decode_controller(data)
            except zd.ZkDataError as e:
                log.warning("unreadable %s: %s", zd.CONTROLLER_PATH, e)
                controller_id = -1
            ours = controller_id == self.broker_id and stat.ephemeral_owner == self.zk.session_id
            if self.is_controller and not ours:
                log.info("broker %d is no longer the controller", self.broker_id)
                self.is_controller = False
            self.controller_id = controller_id
            if ours and not self.is_controller:
                # Our own node from this session (an election whose answer we lost).
                epoch = self.zk.get(zd.CONTROLLER_EPOCH_PATH)
                if epoch is not None:
                    self._become(zd.decode_controller_epoch(epoch[0]), epoch[1].version)
            return
        raise KazooException("the controller znode keeps changing")

    def _elect(self) -> bool:
        """True when the election is settled (won, or lost to a broker that holds
        ``/controller``)."""
        got = self.zk.get(zd.CONTROLLER_EPOCH_PATH)
        if got is None:
            try:
                self.zk.create(
                    zd.CONTROLLER_EPOCH_PATH,
                    zd.encode_controller_epoch(zd.INITIAL_CONTROLLER_EPOCH),
                )
                epoch, epoch_version = zd.INITIAL_CONTROLLER_EPOCH, 0
            except NodeExistsError:
                return False
        else:
            epoch, epoch_version = zd.decode_controller_epoch(got[0]), got[1].version
        new_epoch = epoch + 1
        results = self.zk.multi(
            [
                Op.create(
                    zd.CONTROLLER_PATH,
                    zd.encode_controller(self.broker_id, int(time.time() * 1000)),
                    ephemeral=True,
                ),
                Op.set(
                    zd.CONTROLLER_EPOCH_PATH, zd.encode_controller_epoch(new_epoch), epoch_version
                ),
            ]
        )
        failure = first_failure(results)
        if failure is None:
            stat = results[1]
            assert isinstance(stat, Stat)
            self.zk.exists(zd.CONTROLLER_PATH, self._watch_controller)
            self.controller_id = self.broker_id
            self._become(new_epoch, stat.version)
            return True
        if not isinstance(failure[1], NodeExistsError | BadVersionError):
            raise failure[1]
        # Lost (or our answer was lost): see who holds /controller, and watch it.
        holder = self.zk.get(zd.CONTROLLER_PATH, self._watch_controller)
        if holder is None:
            return False
        try:
            self.controller_id = zd.decode_controller(holder[0])
        except zd.ZkDataError:
            self.controller_id = -1
        if self.controller_id == self.broker_id and holder[1].ephemeral_owner == self.zk.session_id:
            current = self.zk.get(zd.CONTROLLER_EPOCH_PATH)
            if current is not None and zd.decode_controller_epoch(current[0]) == new_epoch:
                self._become(new_epoch, current[1].version)
        return True

    def _become(self, epoch: int, epoch_zk_version: int) -> None:
        self.is_controller = True
        self.epoch = epoch
        self._epoch_zk_version = epoch_zk_version
        log.info("broker %d is the controller (controller epoch %d)", self.broker_id, epoch)
        if self.zk.exists(zd.FEATURE_PATH) is None:
            try:
                self.zk.create(zd.FEATURE_PATH, zd.encode_feature_znode())
            except NodeExistsError:
                pass
        self.shutting_down.clear()
        self.assign_missing_topic_ids()
        self.complete_topic_deletions()
        self.process_isr_changes()
        self.process_log_dir_events()
        self.reconcile()
        for hook in self.on_failover:
            if not self.is_controller:
                return
            hook()

    def multi(self, ops: Sequence[Op]) -> list[Any] | None:
        """``ops`` behind a check of ``/controller_epoch``'s version: None (and resignation)
        when another controller was elected since; else the results of ``ops``."""
        results = self.zk.multi([Op.check(zd.CONTROLLER_EPOCH_PATH, self._epoch_zk_version), *ops])
        failure = first_failure(results)
        if failure is not None and failure[0] == 0:
            log.warning(
                "controller epoch %d of broker %d is stale: resigning",
                self.epoch,
                self.broker_id,
            )
            self.is_controller = False
            self.post(("controller",))
            return None
        return results[1:]

    # -- duties --------------------------------------------------------------------------------

    def assign_missing_topic_ids(self) -> None:
        for name, topic in list(self.cache.topics.items()):
            if topic.assignment.topic_id is not None:
                continue
            data = zd.encode_topic_assignment(
                random_kafka_uuid(),
                topic.assignment.partitions,
                adding_replicas=topic.assignment.adding_replicas,
                removing_replicas=topic.assignment.removing_replicas,
            )
            if self.multi([Op.set(zd.topic_path(name), data, topic.zk_version)]) is None:
                return
            self.cache.load_topic(name)

    # -- who may lead ---------------------------------------------------------------------------

    def live_brokers(self) -> set[int]:
        """Registered brokers (those in controlled shutdown included)."""
        return set(self.cache.brokers)

    def ineligible_brokers(self) -> set[int]:
        """Registered brokers that may not lead: those in controlled shutdown (with the broker
        epoch that asked; a broker that registered again is eligible)."""
        epochs = self.cache.broker_epochs
        for broker_id, epoch in list(self.shutting_down.items()):
            if epochs.get(broker_id) != epoch:
                del self.shutting_down[broker_id]
        return set(self.shutting_down)

    def offline_replicas(self) -> dict[tuple[str, int], frozenset[int]]:
        """partition -> the registered brokers whose replica of it is in an offline log dir."""
        out: dict[tuple[str, int], set[int]] = {}
        for broker_id, partitions in self.cache.offline_replicas_by_broker().items():
            for tp in partitions:
                out.setdefault(tp, set()).add(broker_id)
        return {tp: frozenset(brokers) for tp, brokers in out.items()}

    def live_replicas_of(
        self,
        topic: str,
        partition: int,
        live: set[int],
        offline: Mapping[tuple[str, int], frozenset[int]],
    ) -> set[int]:
        """The brokers whose replica of the partition is online (Kafka's ``isReplicaOnline``):
        ``live`` less those that hold it in an offline log dir."""
        gone = offline.get((topic, partition))
        return live - gone if gone else live

    def unclean(self, topic: str) -> bool:
        """The topic's ``unclean.leader.election.enable``: its override, else the dynamic
        broker config (this broker's, then the cluster default), else the static config."""
        value = self.cache.configs.get(topic, {}).get("unclean.leader.election.enable")
        if value is None:
            for entity in (str(self.broker_id), DEFAULT_BROKER_ENTITY):
                value = self.cache.broker_configs.get(entity, {}).get(
                    "unclean.leader.election.enable"
                )
                if value is not None:
                    break
        if value is None:
            return self.unclean_leader_election_enable
        return value.strip().lower() == "true"

    def reconcile(self) -> None:
        """Writes the partition states the live brokers call for: new partitions get a leader,
        partitions whose leader is gone get another, gone replicas leave the ISR."""
        if not self.is_controller:
            return
        cache = self.cache
        live = self.live_brokers()
        ineligible = self.ineligible_brokers()
        offline = self.offline_replicas()
        for name in sorted(cache.topics):
            topic = cache.topics.get(name)
            if topic is None:
                continue
            creates: list[tuple[int, int, tuple[int, ...]]] = []
            updates: list[tuple[int, int, tuple[int, ...], zd.LeaderIsrAndControllerEpoch]] = []
            for p, replicas in sorted(topic.assignment.partitions.items()):
                current = cache.states.get((name, p))
                online = self.live_replicas_of(name, p, live, offline)
                if current is None:
                    initial = initial_leader_and_isr(replicas, online, ineligible)
                    if initial is not None:
                        creates.append((p, *initial))
                else:
                    change = leader_and_isr_after_change(
                        current.leader,
                        current.isr,
                        replicas,
                        online,
                        unclean=self.unclean(name),
                        ineligible=ineligible,
                    )
                    if change is not None:
                        updates.append((p, *change, current))
            if (creates or updates) and not self._write_states(name, creates, updates):
                return

    def _write_states(
        self,
        topic: str,
        creates: list[tuple[int, int, tuple[int, ...]]],
        updates: list[tuple[int, int, tuple[int, ...], zd.LeaderIsrAndControllerEpoch]],
    ) -> bool:
        epoch = self.epoch
        ops: list[Op] = []
        if creates:
            existing = self.zk.children(zd.topic_partitions_path(topic))
            if existing is None:
                ops.append(Op.create(zd.topic_partitions_path(topic)))
                existing = []
            for p, leader, isr in creates:
                if str(p) not in existing:
                    ops.append(Op.create(zd.partition_path(topic, p)))
                ops.append(
                    Op.create(
                        zd.partition_state_path(topic, p),
                        zd.encode_partition_state(leader, 0, isr, epoch),
                    )
                )
        for p, leader, isr, current in updates:
            ops.append(
                Op.set(
                    zd.partition_state_path(topic, p),
                    zd.encode_partition_state(leader, current.leader_epoch + 1, isr, epoch),
                    current.zk_version,
                )
            )
        results = self.multi(ops)
        if results is None:
            return False
        failure = first_failure(results)
        if failure is not None:
            self._conflicts += 1
            log.info(
                "partition states of %s changed under the controller (%r): re-reading",
                topic,
                failure[1],
            )
            self.cache.load_topic(topic, full=True)
            if self._conflicts > 5:
                self.schedule_retry(0.5)
            else:
                self.post(("reconcile",))
            return True
        self._conflicts = 0
        states = self.cache.states
        for p, leader, isr in creates:
            states[(topic, p)] = zd.LeaderIsrAndControllerEpoch(leader, 0, isr, epoch, 0)
            log.info("%s-%d: leader %d, isr %s (new partition)", topic, p, leader, list(isr))
        stats = [r for r in results if isinstance(r, Stat)]
        for (p, leader, isr, current), stat in zip(updates, stats, strict=True):
            states[(topic, p)] = zd.LeaderIsrAndControllerEpoch(
                leader, current.leader_epoch + 1, isr, epoch, stat.version
            )
            log.info(
                "%s-%d: leader %d -> %d, isr %s -> %s, leader epoch %d",
                topic,
                p,
                current.leader,
                leader,
                list(current.isr),
                list(isr),
                current.leader_epoch + 1,
            )
        return True

    def update_partition_states(
        self,
        topic: str,
        changes: Mapping[int, tuple[int, tuple[int, ...]]],
        *,
        extra_ops: Sequence[Op] = (),
        why: str,
    ) -> bool | None:
        """Writes new (leader, isr) for partitions of ``topic`` that have a state, each with its
        leader epoch bumped (Kafka's ``newLeaderAndIsr``), in one multi-op with ``extra_ops``
        (e.g. the topic znode) and the controller epoch check. True: written, and the cached
        states follow (the caller re-reads what ``extra_ops`` wrote); False: something changed
        under the controller (the topic is re-read); None: not the controller any more."""
        current_states = {p: self.cache.states.get((topic, p)) for p in changes}
        ops = list(extra_ops)
        written: list[tuple[int, int, tuple[int, ...], zd.LeaderIsrAndControllerEpoch]] = []
        for p, (leader, isr) in sorted(changes.items()):
            current = current_states[p]
            if current is None:
                continue
            ops.append(
                Op.set(
                    zd.partition_state_path(topic, p),
                    zd.encode_partition_state(leader, current.leader_epoch + 1, isr, self.epoch),
                    current.zk_version,
                )
            )
            written.append((p, leader, isr, current))
        if not ops:
            return True
        results = self.multi(ops)
        if results is None:
            return None
        failure = first_failure(results)
        if failure is not None:
            log.info(
                "partition states of %s changed under the controller (%r): re-reading",
                topic,
                failure[1],
            )
            self.cache.load_topic(topic, full=True)
            return False
        stats = [r for r in results[len(extra_ops) :] if isinstance(r, Stat)]
        for (p, leader, isr, current), stat in zip(written, stats, strict=True):
            self.cache.states[(topic, p)] = zd.LeaderIsrAndControllerEpoch(
                leader, current.leader_epoch + 1, isr, self.epoch, stat.version
            )
            log.info(
                "%s-%d: leader %d -> %d, isr %s -> %s, leader epoch %d (%s)",
                topic,
                p,
                current.leader,
                leader,
                list(current.isr),
                list(isr),
                current.leader_epoch + 1,
                why,
            )
        return True

    def _subtree(self, path: str) -> list[str]:
        """Every node under ``path`` and ``path`` itself, children before parents."""
        children = self.zk.children(path)
        if children is None:
            return []
        out: list[str] = []
        for child in sorted(children):
            out.extend(self._subtree(f"{path}/{child}"))
        out.append(path)
        return out

    def complete_topic_deletions(self) -> None:
        names = self.zk.children(zd.DELETE_TOPICS_PATH, self._watch_delete_topics) or []
        if not self.is_controller:
            return
        for name in names:
            ops = [Op.delete(p) for p in self._subtree(zd.topic_path(name))]
            config = zd.config_entity_path(zd.CONFIG_TYPE_TOPICS, name)
            if self.zk.exists(config) is not None:
                ops.append(Op.delete(config))
            ops.append(Op.delete(zd.delete_topic_path(name)))
            results = self.multi(ops)
            if results is None:
                return
            failure = first_failure(results)
            if failure is not None:
                if isinstance(failure[1], NoNodeError | NotEmptyError | NodeExistsError):
                    log.info("deletion of topic %s raced with a change: retrying", name)
                    self.schedule_retry(0.2)
                    continue
                raise failure[1]
            log.info("deleted topic %s", name)
            self.cache.forget_topic(name)

    def process_isr_changes(self) -> None:
        """Re-reads the partitions named by ISR change notifications, then deletes them."""
        children = self.zk.children(zd.ISR_CHANGE_NOTIFICATION_PATH, self._watch_isr_changes)
        if not children or not self.is_controller:
            return
        for child in sorted(children):
            if not child.startswith(zd.ISR_CHANGE_PREFIX):
                continue
            path = f"{zd.ISR_CHANGE_NOTIFICATION_PATH}/{child}"
            got = self.zk.get(path)
            if got is not None:
                try:
                    for topic, partition in zd.decode_isr_change_notification(got[0]):
                        self.cache.load_state(topic, partition)
                except zd.ZkDataError as e:
                    log.warning("ignoring ISR change notification %s: %s", child, e)
            try:
                self.zk.delete(path)
            except NoNodeError:
                pass

    def process_log_dir_events(self) -> None:
        """Kafka's ``LogDirEventNotificationHandler``: the brokers named by log dir event
        notifications had a log dir fail; their offline replicas are re-read (the reconcile
        that follows elects around them), then the notifications are deleted."""
        children = self.zk.children(zd.LOG_DIR_EVENT_NOTIFICATION_PATH, self._watch_log_dir_events)
        if not children or not self.is_controller:
            return
        events = sorted(c for c in children if c.startswith(zd.LOG_DIR_EVENT_PREFIX))
        if not events:
            return
        brokers = set()
        for child in events:
            got = self.zk.get(f"{zd.LOG_DIR_EVENT_NOTIFICATION_PATH}/{child}")
            if got is None:
                continue
            try:
                brokers.add(zd.decode_log_dir_event(got[0]))
            except zd.ZkDataError as e:
                log.warning("ignoring log dir event notification %s: %s", child, e)
        if brokers:
            log.info("log dir failure on broker(s) %s", sorted(brokers))
        self.cache.load_offline_replicas()
        for child in events:
            try:
                self.zk.delete(f"{zd.LOG_DIR_EVENT_NOTIFICATION_PATH}/{child}")
            except NoNodeError:
                pass

    def purge_config_changes(self, changes: list[tuple[int, str]]) -> None:
        if not self.is_controller:
            return
        now = time.monotonic()
        if now - self._last_config_purge < 60:
            return
        self._last_config_purge = now
        horizon_ms = int(time.time() * 1000) - CONFIG_CHANGE_EXPIRATION_MS
        for _, child in changes:
            path = f"{zd.CONFIG_CHANGES_PATH}/{child}"
            stat = self.zk.exists(path)
            if stat is not None and stat.ctime_ms < horizon_ms:
                try:
                    self.zk.delete(path)
                except NoNodeError:
                    pass
