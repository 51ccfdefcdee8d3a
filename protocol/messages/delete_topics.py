"""DeleteTopics (key 20): delete topics by name (or, from v6, by id).

v0-3 share one shape (v1 adds the throttle time to the response, v3 may answer
TOPIC_DELETION_DISABLED); v4 is flexible; v5 adds a per-topic error message and may answer
THROTTLING_QUOTA_EXCEEDED; v6 replaces ``topic_names`` with ``topics`` (name or id; the name may be
null) and returns topic ids. Kafka 4 dropped v0.
"""

from protocol.api_keys import ApiKey
from protocol.schema import INT16, INT32, STRING, UUID, array, f, message, struct

DeleteTopicState = struct(
    "DeleteTopicState",
    [
        f("name", STRING, "6+", null="6+", default=None),
        f("topic_id", UUID, "6+"),
    ],
)

DeleteTopicsRequest = message(
    "DeleteTopicsRequest",
    api_key=ApiKey.DELETE_TOPICS,
    kind="request",
    valid="0-6",
    flexible="4+",
    fields=[
        f("topics", array(DeleteTopicState), "6+"),
        f("topic_names", array(STRING), "0-5"),
        f("timeout_ms", INT32),
    ],
)

DeletableTopicResult = struct(
    "DeletableTopicResult",
    [
        f("name", STRING, null="6+"),
        f("topic_id", UUID, "6+"),
        f("error_code", INT16),
        f("error_message", STRING, "5+", null="5+", default=None),
    ],
)

DeleteTopicsResponse = message(
    "DeleteTopicsResponse",
    api_key=ApiKey.DELETE_TOPICS,
    kind="response",
    valid="0-6",
    flexible="4+",
    fields=[
        f("throttle_time_ms", INT32, "1+"),
        f("responses", array(DeletableTopicResult)),
    ],
)
