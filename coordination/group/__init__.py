"""Consumer groups and their committed offsets (Kafka's group coordinator): the service that
routes requests (:mod:`~coordination.group.coordinator`), one shard per ``__consumer_offsets``
partition (:mod:`~coordination.group.shard`) holding the classic group machine
(:mod:`~coordination.group.classic`) and the offsets manager (:mod:`~coordination.group.offsets`),
the group nouns (:mod:`~coordination.group.metadata`), Kafka's record schemas
(:mod:`~coordination.group.records`) and the consumer protocol
(:mod:`~coordination.group.consumer_protocol`). KIP-848 consumer groups will be a second group
type in the same shards."""
