"""AlterClientQuotas (key 49): set or remove quota keys of user/client-id entities (KIP-546);
a null entity name is the default entity. v1 is flexible."""

from protocol.api_keys import ApiKey
from protocol.schema import BOOL, FLOAT64, INT16, INT32, STRING, array, f, message, struct

QuotaEntityComponent = struct(
    "QuotaEntityComponent",
    [
        f("entity_type", STRING),
        f("entity_name", STRING, null="0+"),
    ],
)

QuotaAlterationOp = struct(
    "QuotaAlterationOp",
    [
        f("key", STRING),
        f("value", FLOAT64),
        f("remove", BOOL),
    ],
)

QuotaAlteration = struct(
    "QuotaAlteration",
    [
        f("entity", array(QuotaEntityComponent)),
        f("ops", array(QuotaAlterationOp)),
    ],
)

AlterClientQuotasRequest = message(
    "AlterClientQuotasRequest",
    api_key=ApiKey.ALTER_CLIENT_QUOTAS,
    kind="request",
    valid="0-1",
    flexible="1+",
    fields=[
        f("entries", array(QuotaAlteration)),
        f("validate_only", BOOL),
    ],
)

QuotaAlterationResult = struct(
    "QuotaAlterationResult",
    [
        f("error_code", INT16),
        f("error_message", STRING, null="0+"),
        f("entity", array(QuotaEntityComponent)),
    ],
)

AlterClientQuotasResponse = message(
    "AlterClientQuotasResponse",
    api_key=ApiKey.ALTER_CLIENT_QUOTAS,
    kind="response",
    valid="0-1",
    flexible="1+",
    fields=[
        f("throttle_time_ms", INT32),
        f("entries", array(QuotaAlterationResult)),
    ],
)
