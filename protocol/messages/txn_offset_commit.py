"""TxnOffsetCommit (key 28): a transactional producer commits consumer offsets inside its
transaction; they become visible when the transaction commits.

v1 is v0; v2 adds each partition's committed leader epoch; v3 is flexible and adds the group
member's generation, member id and group instance id (fencing zombie producers, KIP-447);
v4 may answer TRANSACTION_ABORTABLE; v5 is v4 for transaction protocol v2 (KIP-890); v6 names
topics by id (KIP-848's topic ids, as OffsetCommit v10).
"""

from protocol.api_keys import ApiKey
from protocol.schema import INT16, INT32, INT64, STRING, UUID, array, f, message, struct

TxnOffsetCommitRequestPartition = struct(
    "TxnOffsetCommitRequestPartition",
    [
        f("partition_index", INT32),
        f("committed_offset", INT64),
        f("committed_leader_epoch", INT32, "2+", default=-1),
        f("committed_metadata", STRING, null="0+"),
    ],
)

TxnOffsetCommitRequestTopic = struct(
    "TxnOffsetCommitRequestTopic",
    [
        f("name", STRING, "0-5"),
        f("topic_id", UUID, "6+"),
        f("partitions", array(TxnOffsetCommitRequestPartition)),
    ],
)

TxnOffsetCommitRequest = message(
    "TxnOffsetCommitRequest",
    api_key=ApiKey.TXN_OFFSET_COMMIT,
    kind="request",
    valid="0-6",
    flexible="3+",
    fields=[
        f("transactional_id", STRING),
        f("group_id", STRING),
        f("producer_id", INT64),
        f("producer_epoch", INT16),
        f("generation_id", INT32, "3+", default=-1),
        f("member_id", STRING, "3+", default=""),
        f("group_instance_id", STRING, "3+", null="3+", default=None),
        f("topics", array(TxnOffsetCommitRequestTopic)),
    ],
)

TxnOffsetCommitResponsePartition = struct(
    "TxnOffsetCommitResponsePartition",
    [
        f("partition_index", INT32),
        f("error_code", INT16),
    ],
)

TxnOffsetCommitResponseTopic = struct(
    "TxnOffsetCommitResponseTopic",
    [
        f("name", STRING, "0-5"),
        f("topic_id", UUID, "6+"),
        f("partitions", array(TxnOffsetCommitResponsePartition)),
    ],
)

TxnOffsetCommitResponse = message(
    "TxnOffsetCommitResponse",
    api_key=ApiKey.TXN_OFFSET_COMMIT,
    kind="response",
    valid="0-6",
    flexible="3+",
    fields=[
        f("throttle_time_ms", INT32),
        f("topics", array(TxnOffsetCommitResponseTopic)),
    ],
)
