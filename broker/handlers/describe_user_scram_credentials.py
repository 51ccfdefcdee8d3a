"""DescribeUserScramCredentials: which SCRAM mechanisms each user has, with iterations
(KIP-554; DESCRIBE on the cluster). Users named explicitly but without credentials are answered
RESOURCE_NOT_FOUND, named twice DUPLICATE_RESOURCE, as Kafka does; no credential is ever
returned."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from broker.dispatch import RequestContext
from broker.registry import error_response, handler
from broker.security.scram import MECHANISM_TYPES, credential_from_string
from coordination.metadata.security import USERS, entity_path, parse_entity_path
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.describe_user_scram_credentials import (
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
    DescribeUserScramCredentialsResult,
    ScramCredentialInfo,
)


def _result(user: str, configs: Mapping[str, str]) -> DescribeUserScramCredentialsResult | None:
    infos = []
    for mechanism, code in MECHANISM_TYPES.items():
        text = configs.get(mechanism)
        if text is None:
            continue
        try:
            iterations = credential_from_string(text).iterations
        except ValueError:
            return DescribeUserScramCredentialsResult(
                user=user,
                error_code=ErrorCode.UNKNOWN_SERVER_ERROR,
                error_message="Error processing describe user SCRAM credential configs request",
                credential_infos=[],
            )
        infos.append(ScramCredentialInfo(mechanism=code, iterations=iterations))
    if not infos:
        return None
    return DescribeUserScramCredentialsResult(
        user=user, error_code=ErrorCode.NONE, credential_infos=infos
    )


@handler(
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
    "0",
    acl=(AclOperation.DESCRIBE, ResourceType.CLUSTER),
    blocking=True,
)
def handle_describe_user_scram_credentials(
    ctx: RequestContext, request: DescribeUserScramCredentialsRequest
) -> DescribeUserScramCredentialsResponse:
    security = ctx.services.security
    assert security is not None
    store = security.store
    names = [u.name for u in request.users or []]
    results = []
    if not names:
        for path, configs in sorted(store.entity_configs.items()):
            parsed = parse_entity_path(path)
            if not path.startswith(USERS + "/") or parsed is None or parsed[0] is None:
                continue
            if parsed[1] is not None or parsed[3]:
                continue
            found = _result(parsed[0], configs)
            if found is not None:
                results.append(found)
        return DescribeUserScramCredentialsResponse(error_code=ErrorCode.NONE, results=results)
    counts = Counter(names)
    seen: set[str] = set()
    for name in names:
        if name in seen:
            continue
        seen.add(name)
        if not name:
            results.append(DescribeUserScramCredentialsResult(
                user=name, error_code=ErrorCode.RESOURCE_NOT_FOUND,
                error_message="Username must not be empty", credential_infos=[]))  # fmt: skip
            continue
        if counts[name] > 1:
            results.append(DescribeUserScramCredentialsResult(
                user=name, error_code=ErrorCode.DUPLICATE_RESOURCE,
                error_message="Cannot describe SCRAM credentials for the same user twice in a "
                f"single request: {name}", credential_infos=[]))  # fmt: skip
            continue
        found = _result(name, store.read_entity_configs(entity_path(user=name)))
        if found is None:
            found = DescribeUserScramCredentialsResult(
                user=name,
                error_code=ErrorCode.RESOURCE_NOT_FOUND,
                error_message=f"Attempt to describe a user credential that does not exist: {name}",
                credential_infos=[],
            )
        results.append(found)
    return DescribeUserScramCredentialsResponse(error_code=ErrorCode.NONE, results=results)


@error_response(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS)
def describe_user_scram_credentials_error(
    request: DescribeUserScramCredentialsRequest, code: ErrorCode, message: str | None
) -> DescribeUserScramCredentialsResponse:
    return DescribeUserScramCredentialsResponse(error_code=code, error_message=message, results=[])
