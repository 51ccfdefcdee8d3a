"""A generic runtime for coordinators that keep their state in an internal topic (Kafka's
``coordinator-common`` ``CoordinatorRuntime``): :mod:`coordination.runtime.runtime`. The group
coordinator (``__consumer_offsets``) uses it; the transaction coordinator
(``__transaction_state``) will."""
