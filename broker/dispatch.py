"""Request dispatch: frame -> header -> the gate -> handler -> response frame.

The rules (Kafka's, and what real clients rely on):

* An API key we do not handle, or a version outside the registered range, closes the connection
  (as Kafka does) — except ApiVersions, which is answered with UNSUPPORTED_VERSION and a v0 body
  listing ApiVersions' own range, so clients can retry with a version we know.
* A malformed request closes the connection, with the reason logged.
* **The gate**, before any handler runs: a session that has not authenticated yet (a SASL
  listener before the SASL exchange completes) may only use the APIs registered with
  ``before_authentication``, and after SaslHandshake only SaslAuthenticate (after a v0
  handshake, frames are raw SASL tokens); anything else closes the connection, as Kafka's
  ``SaslServerAuthenticator`` does. A SASL session past its lifetime (KIP-368) may only
  re-authenticate; any other request closes the connection. A handler's declared ACL
  requirement on the CLUSTER resource is checked here (CLUSTER_AUTHORIZATION_FAILED); per-topic
  and per-group requirements are checked by the handler for each resource it names, through
  :meth:`RequestContext.authorize`, and denials are logged and counted.
* **Quotas** (KIP-219): a handler's throttle (produce and fetch bytes, set on
  :attr:`RequestContext.throttle_ms`) and the request-time quota (measured here) set the
  response's ``throttle_time_ms``, and the connection is muted for that long.
* A handler raising :class:`~coordination.errors.KafkaApiError` gets the API's error response
  with that code; any other exception is logged with its traceback and answered with
  UNKNOWN_SERVER_ERROR (or the connection is closed when the API has no error response).
* A handler returning ``None`` sends nothing (Produce with acks=0).
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from collections.abc import Awaitable, Callable, Coroutine, Generator, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from broker.metrics import FETCH_CONSUMER, FETCH_FOLLOWER, RequestMetrics
from broker.net.connection import CloseConnection, Connection, Deferred, HandleResult, Response
from broker.net.session import SaslExchange, SaslState, Session
from broker.registry import Handler, HandlerRegistry
from broker.security.authorizer import SUPPORTED_OPERATIONS
from broker.security.quotas import QuotaManagers
from broker.security.sasl import SaslFailure, complete_authentication, fail_authentication
from broker.services import BrokerServices
from coordination.errors import KafkaApiError
from protocol.acl import CLUSTER_NAME, AclOperation, ResourceType, operations_bits
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.errors import RemoteProtocolError
from protocol.headers import (
    RequestHeader,
    decode_request_header,
    encode_response,
    frame_response,
)
from protocol.messages import SCHEMAS
from protocol.messages.api_versions import ApiVersion, ApiVersionsResponse

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(slots=True)
class Later:
    """What a synchronous handler returns when its answer is not known yet (a write waiting
    to be committed): the dispatcher awaits ``awaitable`` for the response. Handlers whose
    answer is usually immediate stay synchronous and return this only when they must wait.

    ``pipelined``: the connection may handle the client's next requests while this one waits
    (answers still leave in request order). Only for requests whose waiting changes nothing a
    later request could see (an acks=all produce waiting for the ISR: its records are appended
    already, in order); Kafka handles one request per connection at a time, and a client may
    rely on that for the others (an OffsetFetch behind an OffsetCommit)."""

    awaitable: Awaitable[Any]
    pipelined: bool = False


@dataclass(slots=True)
class EncodedBody:
    """A response body a handler encoded itself (a list of buffers; see protocol.fast_fetch)."""

    parts: list[Any]


class AuthorizationFailed(KafkaApiError):
    """A denied operation; its error is the resource type's (:data:`AUTHORIZATION_ERRORS`)."""


class ClusterAuthorizationFailed(AuthorizationFailed):
    error_code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED


#: the error of a denied operation on each resource type (Kafka's AclEntry.authorizationError)
AUTHORIZATION_ERRORS = {
    ResourceType.TOPIC: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    ResourceType.GROUP: ErrorCode.GROUP_AUTHORIZATION_FAILED,
    ResourceType.CLUSTER: ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    ResourceType.TRANSACTIONAL_ID: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ResourceType.DELEGATION_TOKEN: ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED,
}


@dataclass(slots=True)
class RequestContext:
    """Per-request state: who asked (the connection's session), what, and the broker's services
    the handler may use."""

    services: BrokerServices
    session: Session
    header: RequestHeader
    received_ns: int
    #: the connection (None in unit tests of handlers)
    conn: Connection | None = None
    #: the throttle a handler computed (produce/fetch byte quotas), ms
    throttle_ms: int = 0
    #: the time charged to the request-time quota (None: from receipt to the response); a
    #: request that waits (in the purgatory, on another component) is charged only the time
    #: it was being handled, as Kafka charges request handler threads' time (KIP-124)
    quota_ns: int | None = None

    @property
    def api_version(self) -> int:
        return self.header.api_version

    @property
    def listener(self) -> str:
        return self.session.listener

    @property
    def client_id(self) -> str:
        return self.header.client_id or ""

    @staticmethod
    def now_ms() -> int:
        return time.time_ns() // 1_000_000

    def authorize(
        self,
        operation: AclOperation,
        resource_type: ResourceType,
        resource_name: str,
        *,
        log_denied: bool = True,
    ) -> bool:
        """Whether this request's principal may do ``operation`` on the resource (always, with
        no authorizer configured). A denial of something the request asked for is logged and
        counted (``log_denied=False`` for filters: listing, authorized operations)."""
        authorizer = self.services.authorizer
        if authorizer is None:
            return True
        session = self.session
        allowed = authorizer.authorize(
            session.principal, session.client_host, operation, resource_type, resource_name
        )
        if not allowed and log_denied:
            security = self.services.security
            if security is not None:
                security.audit.denied(
                    session.principal,
                    session.client_host,
                    operation.name,
                    resource_type.name,
                    resource_name,
                    _api_name(self.header.api_key),
                )
        return allowed

    def require(
        self, operation: AclOperation, resource_type: ResourceType, resource_name: str
    ) -> None:
        """Raises the resource type's authorization error (the whole request is answered with
        it) unless the principal may do ``operation`` on the resource."""
        if not self.authorize(operation, resource_type, resource_name):
            raise AuthorizationFailed(
                f"{self.session.principal} may not {operation.name} "
                f"{resource_type.name} {resource_name}",
                AUTHORIZATION_ERRORS.get(resource_type, ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
            )

    def authorize_any(self, operation: AclOperation, resource_type: ResourceType) -> bool:
        """Whether the principal may do ``operation`` on some resource of the type."""
        authorizer = self.services.authorizer
        if authorizer is None:
            return True
        session = self.session
        return authorizer.authorize_any(
            session.principal, session.client_host, operation, resource_type
        )

    def authorized_operations(self, resource_type: ResourceType, resource_name: str) -> int:
        """The ``*_authorized_operations`` bit field of the resource for this principal."""
        authorizer = self.services.authorizer
        ops: Iterable[AclOperation]
        if authorizer is None:
            ops = SUPPORTED_OPERATIONS.get(resource_type, ())
        else:
            session = self.session
            ops = authorizer.authorized_operations(
                session.principal, session.client_host, resource_type, resource_name
            )
        return operations_bits(ops)

    async def run_blocking(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` off this request's processor loop (it waits on the metadata store:
        ZooKeeper round trips, a view to come back), on the broker's
        :class:`~broker.blocking.BlockingCalls` threads. A handler returns
        ``Later(ctx.run_blocking(...))``; the processor serves its other connections
        meanwhile."""
        blocking = self.services.blocking
        if blocking is None:
            return await asyncio.to_thread(fn, *args)
        return await blocking.call(fn, *args)

    def throttle(self, ms: int) -> None:
        """Adds a quota throttle to this request's response (the larger one wins)."""
        if ms > self.throttle_ms:
            self.throttle_ms = ms

    @property
    def quota_user(self) -> str:
        """The user name quotas are keyed by (``ANONYMOUS`` without authentication)."""
        return self.session.principal.name


def _api_name(key: int) -> str:
    return ApiKey(key).name if key in ApiKey._value2member_map_ else str(key)


def _replica_id(fetch: Any, version: int) -> int:
    """A Fetch request's follower id (-1 for a consumer)."""
    if version >= 15:
        state = fetch.replica_state
        return int(state.replica_id) if state is not None else -1
    return int(fetch.replica_id)


_SASL_APIS = frozenset({ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})


class _Timed:
    """Awaits a coroutine and adds up the time spent running it (its steps between
    suspensions), not the time it waited: what a request is charged under a
    ``request_percentage`` quota. A long-polling fetch waiting in the purgatory is handled
    twice briefly, not for its whole wait."""

    __slots__ = ("coro", "ns")

    def __init__(self, coro: Coroutine[Any, Any, Any]) -> None:
        self.coro = coro
        self.ns = 0

    def __await__(self) -> Generator[Any, Any, Any]:
        coro = self.coro
        value: Any = None
        error: BaseException | None = None
        while True:
            start = time.monotonic_ns()
            try:
                yielded = coro.send(value) if error is None else coro.throw(error)
            except StopIteration as stop:
                self.ns += time.monotonic_ns() - start
                return stop.value
            except BaseException:
                self.ns += time.monotonic_ns() - start
                raise
            self.ns += time.monotonic_ns() - start
            try:
                value = yield yielded
                error = None
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as e:  # noqa: BLE001 - thrown in (a cancellation): passed on
                value, error = None, e


class Dispatcher:
    """The broker's RequestChannel: turns frames into responses, in order, per connection."""

    def __init__(self, services: BrokerServices, registry: HandlerRegistry) -> None:
        self.services = services
        self.registry = registry
        self._authorizer = services.authorizer
        security = services.security
        self._quotas: QuotaManagers | None = security.quotas if security is not None else None
        self._api_versions_schema = SCHEMAS[ApiKey.API_VERSIONS]

    def handle(self, conn: Connection, frame: memoryview) -> HandleResult:
        received = time.monotonic_ns()
        session = conn.session
        exchange = session.authenticator
        if not session.authenticated and exchange is not None and exchange.raw_tokens:
            return self._raw_sasl_token(conn, exchange, frame)
        try:
            header, pos = decode_request_header(frame)
        except RemoteProtocolError as e:
            raise CloseConnection(f"malformed request header: {e}") from None
        handler = self.registry.get(header.api_key)
        if handler is None or header.api_version not in handler.versions:
            if header.api_key == ApiKey.API_VERSIONS:
                return self._unsupported_api_versions(header)
            name = (
                ApiKey(header.api_key).name
                if header.api_key in ApiKey._value2member_map_
                else header.api_key
            )
            raise CloseConnection(
                f"unsupported request {name} v{header.api_version} from client {header.client_id!r}"
            )
        if not session.authenticated:
            # Kafka's SaslServerAuthenticator: before the handshake only ApiVersions and
            # SaslHandshake are read (anything else closes the connection unanswered); after
            # it, anything but SaslAuthenticate is answered with its error response
            # (ILLEGAL_SASL_STATE), then the connection closes
            authenticating = exchange is not None and exchange.state is SaslState.AUTHENTICATE
            if authenticating and header.api_key != ApiKey.SASL_AUTHENTICATE:
                return self._refuse_during_authentication(conn, handler, header, frame, pos)
            if not handler.before_authentication:
                raise CloseConnection(
                    f"{handler.api_key.name} before authentication from client {header.client_id!r}"
                )
            if header.api_key == ApiKey.SASL_AUTHENTICATE and not authenticating:
                raise CloseConnection(
                    f"SASL_AUTHENTICATE before a SaslHandshake from client {header.client_id!r}"
                )
        elif (
            session.reauth_deadline_ns
            and header.api_key not in _SASL_APIS
            and time.monotonic_ns() > session.reauth_deadline_ns
        ):
            raise CloseConnection(
                f"the SASL session of {session.principal} expired: the client did not "
                "re-authenticate in time (connections.max.reauth.ms)"
            )
        try:
            body, _ = handler.schema.request_decoder(header.api_version)(frame, pos)
        except RemoteProtocolError as e:
            raise CloseConnection(
                f"malformed {handler.api_key.name} v{header.api_version} request: {e}"
            ) from None
        ctx = RequestContext(self.services, session, header, received, conn)
        metrics = conn.request_metrics
        metrics.received(header.api_key, len(frame))
        if handler.is_async:
            return self._run_async(handler, ctx, body, metrics)
        if handler.blocking:
            return self._run_blocking(handler, ctx, body, metrics)
        try:
            if self._authorizer is not None:
                self._authorize_cluster(handler, ctx)
            result = handler.fn(ctx, body)
        except CloseConnection:
            raise
        except Exception as e:  # noqa: BLE001 - every failure becomes a response or a close
            result = self._error_result(handler, ctx, body, e)
        if result is None:
            self._record(metrics, ctx, body, time.monotonic_ns() - received, 0)
            return None
        if result.__class__ is Later:
            later = self._finish_later(
                handler, ctx, body, metrics, result.awaitable, time.monotonic_ns()
            )
            # pipelined: the handler's effects are done, the next requests may be handled
            return Deferred(later) if result.pipelined else later
        self._record(metrics, ctx, body, time.monotonic_ns() - received, 0)
        return self._frame(handler, ctx, body, result)

    @staticmethod
    def _record(
        metrics: RequestMetrics, ctx: RequestContext, body: Any, local_ns: int, remote_ns: int
    ) -> None:
        """Kafka's RequestMetrics of one request: the time it waited behind its connection's
        earlier requests (since the read that preceded its handling), in its handler, and
        waiting for other components; a fetch counts as FetchConsumer or FetchFollower too."""
        header = ctx.header
        conn = ctx.conn
        queue_ns = ctx.received_ns - conn.read_ns if conn is not None else 0
        fetch_key = 0
        if header.api_key == ApiKey.FETCH:
            fetch_key = (
                FETCH_FOLLOWER if _replica_id(body, header.api_version) >= 0 else FETCH_CONSUMER
            )
        metrics.record(
            header.api_key,
            header.api_version,
            max(queue_ns, 0),
            local_ns,
            remote_ns,
            ctx.throttle_ms,
            fetch_key,
        )

    async def _finish_later(
        self,
        handler: Handler,
        ctx: RequestContext,
        body: Any,
        metrics: RequestMetrics,
        awaitable: Awaitable[Any],
        started: int,
    ) -> Response:
        """``started``: when the handler returned (what follows is remote time)."""
        ctx.quota_ns = started - ctx.received_ns
        try:
            result = await awaitable
        except CloseConnection:
            raise
        except Exception as e:  # noqa: BLE001 - every failure becomes a response or a close
            result = self._error_result(handler, ctx, body, e)
        now = time.monotonic_ns()
        self._record(metrics, ctx, body, started - ctx.received_ns, now - started)
        if result is None:
            return None
        return self._frame(handler, ctx, body, result)

    async def _run_async(
        self,
        handler: Handler,
        ctx: RequestContext,
        body: Any,
        metrics: RequestMetrics,
    ) -> Response:
        try:
            if self._authorizer is not None:
                self._authorize_cluster(handler, ctx)
            awaitable: Awaitable[Any] = handler.fn(ctx, body)
            quotas = self._quotas
            if quotas is not None and quotas.request.enabled and hasattr(awaitable, "send"):
                # charged: the time before the handler ran (decoding, the gate), then the
                # handler's own steps
                decode_ns = time.monotonic_ns() - ctx.received_ns
                timed = _Timed(awaitable)  # type: ignore[arg-type]
                try:
                    result = await timed
                finally:
                    ctx.quota_ns = decode_ns + timed.ns
            else:
                result = await awaitable
        except CloseConnection:
            raise
        except Exception as e:  # noqa: BLE001 - every failure becomes a response or a close
            result = self._error_result(handler, ctx, body, e)
        # an asynchronous handler waits on other components (purgatory, coordinators): remote
        self._record(metrics, ctx, body, 0, time.monotonic_ns() - ctx.received_ns)
        if result is None:
            return None
        return self._frame(handler, ctx, body, result)

    async def _run_blocking(
        self, handler: Handler, ctx: RequestContext, body: Any, metrics: RequestMetrics
    ) -> Response:
        """A handler registered ``blocking=True`` (it waits on the metadata store) runs on the
        broker's blocking-call threads; this loop serves its other connections meanwhile. A
        :class:`Later` it returns (CreateTopics waiting for its leaders) is awaited here, on the
        loop. All of it is remote time (waiting on other components), as for async handlers."""
        try:
            if self._authorizer is not None:
                self._authorize_cluster(handler, ctx)
            result = await ctx.run_blocking(handler.fn, ctx, body)
            if result.__class__ is Later:
                result = await result.awaitable
        except CloseConnection:
            raise
        except Exception as e:  # noqa: BLE001 - every failure becomes a response or a close
            result = self._error_result(handler, ctx, body, e)
        self._record(metrics, ctx, body, 0, time.monotonic_ns() - ctx.received_ns)
        if result is None:
            return None
        return self._frame(handler, ctx, body, result)

    @staticmethod
    def _authorize_cluster(handler: Handler, ctx: RequestContext) -> None:
        acl = handler.acl
        if (
            acl is not None
            and acl[1] == ResourceType.CLUSTER
            and not ctx.authorize(acl[0], ResourceType.CLUSTER, CLUSTER_NAME)
        ):
            raise ClusterAuthorizationFailed(
                f"{ctx.session.principal} may not {acl[0].name} the cluster"
            )

    def _throttle(self, ctx: RequestContext, result: Any) -> None:
        """The request-time quota, then the response's throttle_time_ms and the mute."""
        quotas = self._quotas
        if quotas is not None and quotas.request.enabled:
            charged_ns = ctx.quota_ns
            if charged_ns is None:
                charged_ns = time.monotonic_ns() - ctx.received_ns
            request_ms = quotas.request.record(
                ctx.quota_user, ctx.client_id, charged_ns * 1e-7, ctx.now_ms()
            )
            if request_ms > 0:
                quotas.request.throttled(request_ms)
                ctx.throttle(request_ms)
        ms = ctx.throttle_ms
        if ms > 0:
            if result is not None and hasattr(result, "throttle_time_ms"):
                result.throttle_time_ms = max(ms, result.throttle_time_ms or 0)
            if ctx.conn is not None:
                ctx.conn.mute(ms)

    def _refuse_during_authentication(
        self, conn: Connection, handler: Handler, header: Any, frame: memoryview, pos: int
    ) -> Response:
        """A request other than SaslAuthenticate after the SASL handshake: answered with the
        API's error response (ILLEGAL_SASL_STATE), then the connection closes."""
        reason = (
            f"Unexpected Kafka request of type {handler.api_key.name} during SASL authentication."
        )
        if handler.error_response is None:
            raise CloseConnection(reason)
        try:
            body, _ = handler.schema.request_decoder(header.api_version)(frame, pos)
            answer = handler.error_answer(
                body, ErrorCode.ILLEGAL_SASL_STATE, reason, header.api_version
            )
            encoded = encode_response(
                handler.schema, header.api_version, header.correlation_id, answer
            )
        except Exception:  # noqa: BLE001 - an undecodable request or answer: closed at once
            raise CloseConnection(reason) from None
        security = self.services.security
        if security is not None:
            fail_authentication(conn, conn.session.authenticator, security.audit, reason)
        else:
            conn.close_after_responses(reason)
        return encoded

    def _frame(self, handler: Handler, ctx: RequestContext, body: Any, result: Any) -> Response:
        """The response frame. A response that cannot be encoded (a bug) is answered with the
        API's error response instead, so every request gets exactly one answer, in order; if
        even that fails, the connection is closed."""
        header = ctx.header
        if ctx.throttle_ms or self._quotas is not None:
            self._throttle(ctx, result)
        try:
            if isinstance(result, EncodedBody):
                return frame_response(
                    handler.schema, header.api_version, header.correlation_id, result.parts
                )
            return encode_response(
                handler.schema, header.api_version, header.correlation_id, result
            )
        except Exception as e:  # answered or closed, never dropped
            if isinstance(result, EncodedBody) or handler.error_response is None:
                raise CloseConnection(
                    f"{handler.api_key.name} v{header.api_version} response failed to encode: {e}"
                ) from e
            log.error(
                "%s v%d response to %s failed to encode; answering UNKNOWN_SERVER_ERROR",
                handler.api_key.name,
                header.api_version,
                ctx.session.peer,
                exc_info=e,
            )
            try:
                fallback = handler.error_answer(
                    body, ErrorCode.UNKNOWN_SERVER_ERROR, None, header.api_version
                )
                return encode_response(
                    handler.schema, header.api_version, header.correlation_id, fallback
                )
            except Exception as again:  # then the stream cannot go on
                raise CloseConnection(
                    f"{handler.api_key.name} v{header.api_version} error response failed to "
                    f"encode too: {again}"
                ) from again

    def _error_result(
        self, handler: Handler, ctx: RequestContext, body: Any, exc: Exception
    ) -> Any:
        if isinstance(exc, KafkaApiError):
            code, message = exc.error_code, str(exc)
        else:
            log.error(
                "unexpected error handling %s v%d from %s",
                handler.api_key.name,
                ctx.api_version,
                ctx.session.peer,
                exc_info=exc,
            )
            code, message = ErrorCode.UNKNOWN_SERVER_ERROR, None
        if handler.error_response is None:
            raise CloseConnection(f"{handler.api_key.name} failed: {exc}") from exc
        return handler.error_answer(body, code, message, ctx.api_version)

    def _raw_sasl_token(self, conn: Connection, auth: SaslExchange, frame: memoryview) -> Response:
        """A SASL token after a v0 SaslHandshake: a raw size-prefixed frame each way."""
        security = self.services.security
        assert security is not None
        try:
            token = auth.authenticate(bytes(frame))
        except SaslFailure as e:
            fail_authentication(conn, auth, security.audit, str(e))
            raise CloseConnection(f"SASL authentication failed: {e}") from None
        if auth.complete:
            complete_authentication(conn, auth, security.audit)
        return [struct.pack(">i", len(token)), token]

    def _unsupported_api_versions(self, header: RequestHeader) -> Response:
        supported = self.registry.get(ApiKey.API_VERSIONS)
        hi = supported.versions.hi if supported else 0
        body = ApiVersionsResponse(
            error_code=ErrorCode.UNSUPPORTED_VERSION,
            api_keys=[ApiVersion(api_key=ApiKey.API_VERSIONS, min_version=0, max_version=hi)],
        )
        return encode_response(self._api_versions_schema, 0, header.correlation_id, body)
