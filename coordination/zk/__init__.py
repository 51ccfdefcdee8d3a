"""Cluster mode: Kafka's ZooKeeper layout and the store on top of it. The store
(:mod:`~coordination.zk.store`) composes the kazoo client wrapper (:mod:`~coordination.zk.client`),
the znodes and their JSON (:mod:`~coordination.zk.data`), the broker's registration
(:mod:`~coordination.zk.registration`), the cache of the cluster state
(:mod:`~coordination.zk.cache`), the controller (:mod:`~coordination.zk.controller`), admin
writes (:mod:`~coordination.zk.admin`) and producer id blocks
(:mod:`~coordination.zk.producer_ids`). Only this package imports kazoo."""
