"""DescribeClientQuotas (key 48): the quotas of the user/client-id entities matching filter
components (KIP-546). Match types: 0 exact name, 1 the default entity, 2 any named entity;
``strict`` leaves out entities with entity types the filter does not name. v1 is flexible."""

from protocol.api_keys import ApiKey
from protocol.schema import BOOL, FLOAT64, INT8, INT16, INT32, STRING, array, f, message, struct

#: ComponentData.match_type
MATCH_EXACT = 0
MATCH_DEFAULT = 1
MATCH_SPECIFIED = 2

QuotaFilterComponent = struct(
    "QuotaFilterComponent",
    [
        f("entity_type", STRING),
        f("match_type", INT8),
        f("match", STRING, null="0+"),
    ],
)

DescribeClientQuotasRequest = message(
    "DescribeClientQuotasRequest",
    api_key=ApiKey.DESCRIBE_CLIENT_QUOTAS,
    kind="request",
    valid="0-1",
    flexible="1+",
    fields=[
        f("components", array(QuotaFilterComponent)),
        f("strict", BOOL),
    ],
)

DescribedQuotaEntity = struct(
    "DescribedQuotaEntity",
    [
        f("entity_type", STRING),
        f("entity_name", STRING, null="0+"),
    ],
)

DescribedQuotaValue = struct(
    "DescribedQuotaValue",
    [
        f("key", STRING),
        f("value", FLOAT64),
    ],
)

DescribedQuotaEntry = struct(
    "DescribedQuotaEntry",
    [
        f("entity", array(DescribedQuotaEntity)),
        f("values", array(DescribedQuotaValue)),
    ],
)

DescribeClientQuotasResponse = message(
    "DescribeClientQuotasResponse",
    api_key=ApiKey.DESCRIBE_CLIENT_QUOTAS,
    kind="response",
    valid="0-1",
    flexible="1+",
    fields=[
        f("throttle_time_ms", INT32),
        f("error_code", INT16),
        f("error_message", STRING, null="0+"),
        f("entries", array(DescribedQuotaEntry), null="0+"),
    ],
)
