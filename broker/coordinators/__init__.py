"""The broker's glue for the coordinators of :mod:`coordination` (which own no loop, thread or
partition): timers on the main event loop (:mod:`~broker.coordinators.scheduler`), their log on
this broker's partitions (:mod:`~broker.coordinators.partition_log`), following the leadership
of an internal topic's partitions and loading them
(:mod:`~broker.coordinators.internal_topic`), and the group service FindCoordinator and the
group handlers use (:mod:`~broker.coordinators.groups`). The transaction coordinator will reuse
the same pieces for ``__transaction_state``."""
