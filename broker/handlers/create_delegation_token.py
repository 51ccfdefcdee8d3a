"""CreateDelegationToken (KIP-48; v3 names another owner, KIP-373), as Kafka's KafkaApis and
its KRaft controller answer it, in this order:

* DELEGATION_TOKEN_REQUEST_NOT_ALLOWED on a PLAINTEXT listener, over one-way TLS and from a
  token-authenticated session;
* DELEGATION_TOKEN_AUTHORIZATION_FAILED when the owner is not the requester and the requester
  may not CREATE_TOKENS on the owner (``User`` resource ``<type>:<name>``);
* INVALID_PRINCIPAL_TYPE for a renewer that is not a ``User``;
* DELEGATION_TOKEN_AUTH_DISABLED without ``delegation.token.secret.key``.

The refusals name the owner and the requester, with -1 timestamps, an empty id and HMAC (the
broker's refusals) or zero timestamps (the controller's: disabled). A created token lives
until ``delegation.token.expiry.time.ms`` from now, at most ``max_lifetime_ms`` (or
``delegation.token.max.lifetime.ms``, whichever is smaller)."""

from __future__ import annotations

import logging

from broker.dispatch import RequestContext
from broker.handlers._tokens import ERROR_TIMESTAMP, token_manager, token_requests_allowed
from broker.net.session import KafkaPrincipal
from broker.registry import error_response, handler
from coordination.metadata.security import SecurityStoreError
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.create_delegation_token import (
    CreateDelegationTokenRequest,
    CreateDelegationTokenResponse,
)

log = logging.getLogger(__name__)


def _refusal(
    code: ErrorCode,
    owner: KafkaPrincipal,
    requester: KafkaPrincipal,
    timestamp: int = ERROR_TIMESTAMP,
) -> CreateDelegationTokenResponse:
    return CreateDelegationTokenResponse(
        error_code=code,
        principal_type=owner.principal_type,
        principal_name=owner.name,
        token_requester_principal_type=requester.principal_type,
        token_requester_principal_name=requester.name,
        issue_timestamp_ms=timestamp,
        expiry_timestamp_ms=timestamp,
        max_timestamp_ms=timestamp,
        token_id="",
        hmac=b"",
    )


@handler(
    ApiKey.CREATE_DELEGATION_TOKEN,
    "0-3",
    acl=(AclOperation.CREATE_TOKENS, ResourceType.USER),
    blocking=True,
)
def handle_create_delegation_token(
    ctx: RequestContext, request: CreateDelegationTokenRequest
) -> CreateDelegationTokenResponse:
    requester = ctx.session.principal
    owner = requester
    if ctx.api_version >= 3 and request.owner_principal_name:
        owner = KafkaPrincipal(request.owner_principal_type or "", request.owner_principal_name)
    if not token_requests_allowed(ctx):
        return _refusal(ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, owner, requester)
    if owner != requester and not ctx.authorize(
        AclOperation.CREATE_TOKENS, ResourceType.USER, str(owner)
    ):
        return _refusal(ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED, owner, requester)
    renewers = [KafkaPrincipal(r.principal_type, r.principal_name) for r in request.renewers]
    if any(r.principal_type != "User" for r in renewers):
        return _refusal(ErrorCode.INVALID_PRINCIPAL_TYPE, owner, requester)
    tokens = token_manager(ctx)
    if tokens is None:
        return _refusal(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, owner, requester, 0)
    try:
        token, mac = tokens.create(owner, requester, renewers, request.max_lifetime_ms)
    except SecurityStoreError as e:
        log.warning("could not create a delegation token for %s: %s", owner, e)
        return _refusal(ErrorCode.UNKNOWN_SERVER_ERROR, owner, requester)
    return CreateDelegationTokenResponse(
        error_code=ErrorCode.NONE,
        principal_type=owner.principal_type,
        principal_name=owner.name,
        token_requester_principal_type=requester.principal_type,
        token_requester_principal_name=requester.name,
        issue_timestamp_ms=token.issue_timestamp,
        expiry_timestamp_ms=token.expiry_timestamp,
        max_timestamp_ms=token.max_timestamp,
        token_id=token.token_id,
        hmac=mac,
    )


@error_response(ApiKey.CREATE_DELEGATION_TOKEN)
def create_delegation_token_error(
    request: CreateDelegationTokenRequest, code: ErrorCode, message: str | None
) -> CreateDelegationTokenResponse:
    nobody = KafkaPrincipal("", "")
    return _refusal(code, nobody, nobody)
