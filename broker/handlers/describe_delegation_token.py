"""DescribeDelegationToken (KIP-48, KIP-373), as Kafka's KafkaApis answers it:
DELEGATION_TOKEN_REQUEST_NOT_ALLOWED (PLAINTEXT, one-way TLS, a token-authenticated session),
DELEGATION_TOKEN_AUTH_DISABLED, an empty owner list answers no token; otherwise the tokens of
the owners named (null: every token) that the requester owns, requested or renews, or may
describe: DESCRIBE on the ``DelegationToken`` resource of the token's id, or DESCRIBE_TOKENS on
the ``User`` resource of its owner (``<type>:<name>``). Each token comes with its HMAC."""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.handlers._tokens import token_manager, token_requests_allowed
from broker.net.session import KafkaPrincipal
from broker.registry import error_response, handler
from broker.security.principal import parse_principal
from coordination.metadata.security import TokenInformation
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.describe_delegation_token import (
    DescribedDelegationToken,
    DescribedDelegationTokenRenewer,
    DescribeDelegationTokenRequest,
    DescribeDelegationTokenResponse,
)


@handler(
    ApiKey.DESCRIBE_DELEGATION_TOKEN,
    "0-3",
    acl=(AclOperation.DESCRIBE, ResourceType.DELEGATION_TOKEN),
)
def handle_describe_delegation_token(
    ctx: RequestContext, request: DescribeDelegationTokenRequest
) -> DescribeDelegationTokenResponse:
    if not token_requests_allowed(ctx):
        return DescribeDelegationTokenResponse(
            error_code=ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, tokens=[]
        )
    tokens = token_manager(ctx)
    if tokens is None:
        return DescribeDelegationTokenResponse(
            error_code=ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, tokens=[]
        )
    if request.owners is not None and not request.owners:
        return DescribeDelegationTokenResponse(error_code=ErrorCode.NONE, tokens=[])
    owners = (
        None
        if request.owners is None
        else [KafkaPrincipal(o.principal_type, o.principal_name) for o in request.owners]
    )

    def may_describe(token: TokenInformation) -> bool:
        return ctx.authorize(
            AclOperation.DESCRIBE, ResourceType.DELEGATION_TOKEN, token.token_id, log_denied=False
        ) or ctx.authorize(
            AclOperation.DESCRIBE_TOKENS, ResourceType.USER, token.owner, log_denied=False
        )

    found = tokens.describe(ctx.session.principal, owners, may_describe)
    return DescribeDelegationTokenResponse(
        error_code=ErrorCode.NONE,
        tokens=[_described(token, mac) for token, mac in found],
    )


def _described(token: TokenInformation, mac: bytes) -> DescribedDelegationToken:
    owner = parse_principal(token.owner)
    requester = parse_principal(token.requester)
    return DescribedDelegationToken(
        principal_type=owner.principal_type,
        principal_name=owner.name,
        token_requester_principal_type=requester.principal_type,
        token_requester_principal_name=requester.name,
        issue_timestamp=token.issue_timestamp,
        expiry_timestamp=token.expiry_timestamp,
        max_timestamp=token.max_timestamp,
        token_id=token.token_id,
        hmac=mac,
        renewers=[
            DescribedDelegationTokenRenewer(principal_type=p.principal_type, principal_name=p.name)
            for p in map(parse_principal, token.renewers)
        ],
    )


@error_response(ApiKey.DESCRIBE_DELEGATION_TOKEN)
def describe_delegation_token_error(
    request: DescribeDelegationTokenRequest, code: ErrorCode, message: str | None
) -> DescribeDelegationTokenResponse:
    return DescribeDelegationTokenResponse(error_code=code, tokens=[])
