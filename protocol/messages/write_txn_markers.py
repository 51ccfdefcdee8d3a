"""WriteTxnMarkers (key 27): the transaction coordinator asks partition leaders to write commit or
abort control batches (broker to broker).

v1 is flexible (Kafka 4 dropped v0, which had the same fields); v2 adds each marker's
``transaction_version`` (KIP-1228).
"""

from protocol.api_keys import ApiKey
from protocol.schema import BOOL, INT8, INT16, INT32, INT64, STRING, array, f, message, struct

WritableTxnMarkerTopic = struct(
    "WritableTxnMarkerTopic",
    [
        f("name", STRING),
        f("partition_indexes", array(INT32)),
    ],
)

WritableTxnMarker = struct(
    "WritableTxnMarker",
    [
        f("producer_id", INT64),
        f("producer_epoch", INT16),
        f("transaction_result", BOOL),
        f("topics", array(WritableTxnMarkerTopic)),
        f("coordinator_epoch", INT32),
        f("transaction_version", INT8, "2+", default=0),
    ],
)

WriteTxnMarkersRequest = message(
    "WriteTxnMarkersRequest",
    api_key=ApiKey.WRITE_TXN_MARKERS,
    kind="request",
    valid="0-2",
    flexible="1+",
    fields=[
        f("markers", array(WritableTxnMarker)),
    ],
)

WritableTxnMarkerPartitionResult = struct(
    "WritableTxnMarkerPartitionResult",
    [
        f("partition_index", INT32),
        f("error_code", INT16),
    ],
)

WritableTxnMarkerTopicResult = struct(
    "WritableTxnMarkerTopicResult",
    [
        f("name", STRING),
        f("partitions", array(WritableTxnMarkerPartitionResult)),
    ],
)

WritableTxnMarkerResult = struct(
    "WritableTxnMarkerResult",
    [
        f("producer_id", INT64),
        f("topics", array(WritableTxnMarkerTopicResult)),
    ],
)

WriteTxnMarkersResponse = message(
    "WriteTxnMarkersResponse",
    api_key=ApiKey.WRITE_TXN_MARKERS,
    kind="response",
    valid="0-2",
    flexible="1+",
    fields=[
        f("markers", array(WritableTxnMarkerResult)),
    ],
)
