"""DescribeUserScramCredentials (key 50): which SCRAM mechanisms each user has credentials for,
and their iterations (KIP-554); a null or empty user list means every user. Always flexible."""

from protocol.api_keys import ApiKey
from protocol.schema import INT8, INT16, INT32, STRING, array, f, message, struct

ScramUserName = struct("ScramUserName", [f("name", STRING)])

DescribeUserScramCredentialsRequest = message(
    "DescribeUserScramCredentialsRequest",
    api_key=ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
    kind="request",
    valid="0",
    flexible="0+",
    fields=[
        f("users", array(ScramUserName), null="0+"),
    ],
)

ScramCredentialInfo = struct(
    "ScramCredentialInfo",
    [
        f("mechanism", INT8),
        f("iterations", INT32),
    ],
)

DescribeUserScramCredentialsResult = struct(
    "DescribeUserScramCredentialsResult",
    [
        f("user", STRING),
        f("error_code", INT16),
        f("error_message", STRING, null="0+"),
        f("credential_infos", array(ScramCredentialInfo)),
    ],
)

DescribeUserScramCredentialsResponse = message(
    "DescribeUserScramCredentialsResponse",
    api_key=ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
    kind="response",
    valid="0",
    flexible="0+",
    fields=[
        f("throttle_time_ms", INT32),
        f("error_code", INT16),
        f("error_message", STRING, null="0+"),
        f("results", array(DescribeUserScramCredentialsResult)),
    ],
)
