"""AlterUserScramCredentials (key 51): delete or set users' SCRAM credentials (KIP-554). The
client sends the salt and the salted password (never the password); the broker derives the
stored and server keys. Always flexible."""

from protocol.api_keys import ApiKey
from protocol.schema import BYTES, INT8, INT16, INT32, STRING, array, f, message, struct

ScramCredentialDeletion = struct(
    "ScramCredentialDeletion",
    [
        f("name", STRING),
        f("mechanism", INT8),
    ],
)

ScramCredentialUpsertion = struct(
    "ScramCredentialUpsertion",
    [
        f("name", STRING),
        f("mechanism", INT8),
        f("iterations", INT32),
        f("salt", BYTES),
        f("salted_password", BYTES),
    ],
)

AlterUserScramCredentialsRequest = message(
    "AlterUserScramCredentialsRequest",
    api_key=ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
    kind="request",
    valid="0",
    flexible="0+",
    fields=[
        f("deletions", array(ScramCredentialDeletion)),
        f("upsertions", array(ScramCredentialUpsertion)),
    ],
)

AlterUserScramCredentialsResult = struct(
    "AlterUserScramCredentialsResult",
    [
        f("user", STRING),
        f("error_code", INT16),
        f("error_message", STRING, null="0+"),
    ],
)

AlterUserScramCredentialsResponse = message(
    "AlterUserScramCredentialsResponse",
    api_key=ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
    kind="response",
    valid="0",
    flexible="0+",
    fields=[
        f("throttle_time_ms", INT32),
        f("results", array(AlterUserScramCredentialsResult)),
    ],
)
