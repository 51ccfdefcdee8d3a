"""Dynamic broker configs (Kafka's ``DynamicBrokerConfig``): broker settings changed at runtime
through IncrementalAlterConfigs / AlterConfigs on a BROKER resource, without a restart.

Where they live: in the metadata store, as Kafka keeps them: the cluster-wide default under
the entity ``<default>`` and each broker's own under its id (ZooKeeper: ``/config/brokers/
<default>`` and ``/config/brokers/<id>``, announced by ``/config/changes`` notifications; the
embedded store: its JSON file). Every broker follows them through its metadata view, so a
change made on any broker reaches all, and survives restarts.

Precedence, for each key (and its synonyms, such as ``log.retention.ms`` / ``.minutes`` /
``.hours``): this broker's dynamic config, then the cluster-wide default, then
server.properties (``--override``), then Kafka's default; DescribeConfigs reports each level
as ``DYNAMIC_BROKER_CONFIG``, ``DYNAMIC_DEFAULT_BROKER_CONFIG``, ``STATIC_BROKER_CONFIG`` and
``DEFAULT_CONFIG``.

Applying: :meth:`DynamicBrokerConfig.apply` recomputes the shared :class:`BrokerConfig`'s
values and calls each registered reconfigurable whose keys changed (the log defaults and the
topic rules built from them, connection limits, the cleaner's backoff). Keys in
:data:`~broker.config.APPLIED_AT_RESTART` are stored and reported but take effect at the next
start; the log says so.

Thread-safety: :meth:`apply` runs on whichever thread published the metadata change (the
admin request's, or ZooKeeper's worker) under one lock.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from broker.config import APPLIED_AT_RESTART, BrokerConfig
from coordination.metadata.store import MetadataStore
from coordination.metadata.view import DEFAULT_BROKER_ENTITY, ClusterView

log = logging.getLogger(__name__)

#: ``reconfigure(config, changed keys)``
Reconfigure = Callable[[BrokerConfig, set[str]], None]


class DynamicBrokerConfig:
    """Follows the dynamic broker configs of the metadata view and applies them."""

    def __init__(self, config: BrokerConfig, broker_id: int) -> None:
        self.config = config
        self.broker_id = broker_id
        self.entity = str(broker_id)
        self._lock = threading.Lock()
        self._reconfigurables: list[tuple[frozenset[str] | None, Reconfigure]] = []
        self._applied: tuple[Mapping[str, str], Mapping[str, str]] = ({}, {})

    def add_reconfigurable(self, keys: Iterable[str] | None, reconfigure: Reconfigure) -> None:
        """``reconfigure`` is called after any of ``keys`` (None: any key) changed."""
        self._reconfigurables.append((frozenset(keys) if keys is not None else None, reconfigure))

    def levels(self, view: ClusterView) -> tuple[Mapping[str, str], Mapping[str, str]]:
        """(cluster-wide default, this broker's) dynamic configs in ``view``."""
        return (
            view.broker_configs.get(DEFAULT_BROKER_ENTITY, {}),
            view.broker_configs.get(self.entity, {}),
        )

    def apply(self, view: ClusterView) -> set[str]:
        """Applies the view's dynamic configs if they changed; returns the changed keys."""
        with self._lock:
            default, own = self.levels(view)
            if (dict(default), dict(own)) == tuple(dict(m) for m in self._applied):
                return set()
            changed = self.config.apply_dynamic(default, own)
            self._applied = (dict(default), dict(own))
            if not changed:
                return changed
            log.info(
                "dynamic broker configs applied: %s",
                ", ".join(f"{k}={self.config.values.get(k)}" for k in sorted(changed)),
            )
            later = sorted(changed & APPLIED_AT_RESTART)
            if later:
                log.warning("%s changed dynamically; they take effect at the next start", later)
            for keys, reconfigure in self._reconfigurables:
                if keys is None or keys & changed:
                    try:
                        reconfigure(self.config, changed)
                    except Exception:
                        log.exception("applying dynamic configs %s failed", sorted(changed))
            return changed

    def follow(self, metadata: MetadataStore) -> None:
        """Applies the store's current dynamic configs, then every change."""

        def changed(_old: ClusterView, new: ClusterView) -> None:
            self.apply(new)

        metadata.add_listener(changed)
        self.apply(metadata.view)


def values_in_force(
    config: BrokerConfig, view: ClusterView, broker_id: int, entity: str
) -> dict[str, Any]:
    """The broker's values a change to ``entity``'s dynamic configs is checked against (Kafka
    validates the broker's configuration as the change would leave it). A change to the
    cluster-wide default (``<default>``) leaves in force this broker's own dynamic values,
    which take precedence over it: their keys are left out, so that only the keys the default
    would really change here are checked (a thread pool resized by at most a factor of two)."""
    in_force = dict(config.values)
    if entity == DEFAULT_BROKER_ENTITY:
        for key in view.broker_configs.get(str(broker_id), {}):
            in_force.pop(key, None)
    return in_force
