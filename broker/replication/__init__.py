"""The partitions this broker hosts: their rules (:mod:`~broker.replication.partition`), the
manager that finds them and fans requests out to them
(:mod:`~broker.replication.replica_manager`), and the delayed operations that wait on them
(:mod:`~broker.replication.delayed_fetch`).

Kafka's ``kafka.cluster.Partition`` and ``kafka.server.ReplicaManager`` are the models. The
replica fetchers (followers fetching from leaders) and ISR management will live here too.
"""
