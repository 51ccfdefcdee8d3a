"""AlterUserScramCredentials: delete or set SCRAM credentials (KIP-554; ALTER on the cluster).

The client sends a salt and the salted password; the broker derives Kafka's stored and server
keys and stores ``salt=...,stored_key=...,server_key=...,iterations=...`` under the mechanism's
name in the user's entity config (ZooKeeper's ``/config/users/<user>`` with a change
notification, so every broker of the cluster accepts the new credential at once). Kafka's
checks: an empty user name or too few/many iterations is UNACCEPTABLE_CREDENTIAL, an unknown
mechanism UNSUPPORTED_SASL_MECHANISM, one user altered twice for one mechanism
DUPLICATE_RESOURCE, deleting a credential that does not exist RESOURCE_NOT_FOUND.
"""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.registry import error_response, handler
from broker.security.scram import (
    MAX_ITERATIONS,
    MECHANISM_BY_TYPE,
    MECHANISMS,
    credential_from_salted_password,
    credential_to_string,
)
from coordination.metadata.security import SecurityStoreError, entity_path
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    AlterUserScramCredentialsResult,
)


@handler(
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
    "0",
    acl=(AclOperation.ALTER, ResourceType.CLUSTER),
    blocking=True,
)
def handle_alter_user_scram_credentials(
    ctx: RequestContext, request: AlterUserScramCredentialsRequest
) -> AlterUserScramCredentialsResponse:
    security = ctx.services.security
    assert security is not None
    errors: dict[str, tuple[ErrorCode, str]] = {}
    order: list[str] = []

    def fail(user: str, code: ErrorCode, message: str) -> None:
        errors.setdefault(user, (code, message))

    pairs: list[tuple[str, int]] = []
    for d in request.deletions:
        order.append(d.name)
        if not d.name:
            fail(d.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
        elif d.mechanism not in MECHANISM_BY_TYPE:
            fail(d.name, ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
        pairs.append((d.name, d.mechanism))
    for u in request.upsertions:
        order.append(u.name)
        if not u.name:
            fail(u.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
        elif u.mechanism not in MECHANISM_BY_TYPE:
            fail(u.name, ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
        elif u.iterations < MECHANISMS[MECHANISM_BY_TYPE[u.mechanism]][1]:
            fail(u.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
        elif u.iterations > MAX_ITERATIONS:
            fail(u.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
        pairs.append((u.name, u.mechanism))
    for pair in set(pairs):
        if pairs.count(pair) > 1 and pair[0] not in errors:
            fail(pair[0], ErrorCode.DUPLICATE_RESOURCE,
                 "A user credential cannot be altered twice in the same request")  # fmt: skip

    users = [u for u in dict.fromkeys(order) if u not in errors]
    store = security.store
    for user in users:
        current = store.read_entity_configs(entity_path(user=user))
        for d in request.deletions:
            if d.name == user and MECHANISM_BY_TYPE[d.mechanism] not in current:
                fail(user, ErrorCode.RESOURCE_NOT_FOUND,
                     "Attempt to delete a user credential that does not exist")  # fmt: skip
    for user in users:
        if user in errors:
            continue
        deletions = [MECHANISM_BY_TYPE[d.mechanism] for d in request.deletions if d.name == user]
        upserts = {
            MECHANISM_BY_TYPE[u.mechanism]: credential_to_string(
                credential_from_salted_password(
                    MECHANISM_BY_TYPE[u.mechanism],
                    bytes(u.salt),
                    bytes(u.salted_password),
                    u.iterations,
                )
            )
            for u in request.upsertions
            if u.name == user
        }

        def change(configs: dict[str, str], deletions: list[str] = deletions,
                   upserts: dict[str, str] = upserts) -> dict[str, str]:  # fmt: skip
            for mechanism in deletions:
                configs.pop(mechanism, None)
            configs.update(upserts)
            return configs

        try:
            store.alter_entity_configs(entity_path(user=user), change)
        except SecurityStoreError as e:
            fail(user, ErrorCode.UNKNOWN_SERVER_ERROR, str(e))
    results = [
        AlterUserScramCredentialsResult(
            user=user,
            error_code=errors[user][0] if user in errors else ErrorCode.NONE,
            error_message=errors[user][1] if user in errors else None,
        )
        for user in dict.fromkeys(order)
    ]
    return AlterUserScramCredentialsResponse(throttle_time_ms=0, results=results)


@error_response(ApiKey.ALTER_USER_SCRAM_CREDENTIALS)
def alter_user_scram_credentials_error(
    request: AlterUserScramCredentialsRequest, code: ErrorCode, message: str | None
) -> AlterUserScramCredentialsResponse:
    users = dict.fromkeys(
        [d.name for d in request.deletions] + [u.name for u in request.upsertions]
    )
    return AlterUserScramCredentialsResponse(
        results=[
            AlterUserScramCredentialsResult(user=u, error_code=code, error_message=message)
            for u in users
        ]
    )
