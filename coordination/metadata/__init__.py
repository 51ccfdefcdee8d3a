"""Cluster metadata: the immutable view (:mod:`~coordination.metadata.view`), the store
interface (:mod:`~coordination.metadata.store`), replica assignment
(:mod:`~coordination.metadata.assignment`), leader election rules
(:mod:`~coordination.metadata.election`) and the standalone store
(:mod:`~coordination.metadata.embedded`). The ZooKeeper store is :mod:`coordination.zk`."""
