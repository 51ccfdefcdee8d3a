"""The handler registry: one handler per API key; ApiVersions is derived from it.

A handler module registers with :func:`handler`, declaring the ACL operation and resource type
Kafka checks for that API (the gate in :mod:`broker.dispatch` and the handler itself use it)::

    @handler(ApiKey.LIST_OFFSETS, "0-10", acl=(AclOperation.DESCRIBE, ResourceType.TOPIC))
    def handle_list_offsets(ctx: RequestContext, request: Struct) -> Struct: ...

and may register an error-response builder for whole-request failures with
:func:`error_response`. The broker advertises exactly the registered version ranges, so it never
advertises an API it does not handle. ``before_authentication=True`` marks the APIs a client may
use before its SASL exchange completes (ApiVersions, SaslHandshake, SaslAuthenticate).
``blocking=True`` marks a synchronous handler that waits on the metadata store (admin writes:
ZooKeeper round trips): the dispatcher runs it off the processor loop
(:mod:`broker.blocking`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import SCHEMAS, ApiSchema
from protocol.schema import Versions

HandlerFn = Callable[..., Any]
#: ``(request, code, message)``, or ``(request, code, message, version)`` for an API whose
#: error response depends on the version (as Kafka's ``getErrorResponse`` may)
ErrorResponseFn = Callable[..., Any]
#: (operation, resource type) an API needs, as Kafka's KafkaApis checks it
AclRequirement = tuple[AclOperation, ResourceType]


@dataclass
class Handler:
    api_key: ApiKey
    versions: Versions
    fn: HandlerFn
    schema: ApiSchema
    is_async: bool
    #: what Kafka authorizes for this API (None: nothing, e.g. ApiVersions)
    acl: AclRequirement | None = None
    #: whether a client may use it before authenticating (the SASL exchange itself)
    before_authentication: bool = False
    error_response: ErrorResponseFn | None = None
    #: whether :attr:`error_response` takes the request's version
    error_response_versioned: bool = False
    #: a synchronous handler that waits on the metadata store: run off the processor loop
    blocking: bool = False
    #: Kafka authorizes nothing for this API (client telemetry): said explicitly
    no_acl: bool = False

    def error_answer(self, request: Any, code: ErrorCode, message: str | None, version: int) -> Any:
        """The API's answer to ``request`` (of ``version``) failing whole with ``code``."""
        fn = self.error_response
        assert fn is not None
        if self.error_response_versioned:
            return fn(request, code, message, version)
        return fn(request, code, message)


class HandlerRegistry:
    def __init__(self) -> None:
        self._handlers: dict[int, Handler] = {}

    def register(
        self,
        api_key: ApiKey,
        versions: str,
        fn: HandlerFn,
        *,
        acl: AclRequirement | None = None,
        before_authentication: bool = False,
        blocking: bool = False,
        no_acl: bool = False,
    ) -> Handler:
        if api_key in self._handlers:
            raise ValueError(f"a handler for {api_key.name} is already registered")
        schema = SCHEMAS.get(api_key)
        if schema is None:
            raise ValueError(f"no schema for {api_key.name}")
        vr = Versions.parse(versions)
        if vr.lo < schema.valid_versions.lo or vr.hi > schema.valid_versions.hi:
            raise ValueError(
                f"{api_key.name} handler versions {vr} exceed the schema's {schema.valid_versions}"
            )
        h = Handler(
            api_key,
            vr,
            fn,
            schema,
            inspect.iscoroutinefunction(fn),
            acl=acl,
            before_authentication=before_authentication,
            blocking=blocking,
            no_acl=no_acl,
        )
        if no_acl and acl is not None:
            raise ValueError(f"{api_key.name}: no_acl with an ACL requirement")
        if blocking and h.is_async:
            raise ValueError(f"{api_key.name}: a blocking handler must be synchronous")
        self._handlers[api_key] = h
        return h

    def set_error_response(self, api_key: ApiKey, fn: ErrorResponseFn) -> None:
        h = self._handlers[api_key]
        h.error_response = fn
        h.error_response_versioned = "version" in inspect.signature(fn).parameters

    def get(self, api_key: int) -> Handler | None:
        return self._handlers.get(api_key)

    def __iter__(self) -> Iterator[Handler]:
        return iter(sorted(self._handlers.values(), key=lambda h: h.api_key))

    def api_versions(self) -> list[tuple[int, int, int]]:
        return [(h.api_key, h.versions.lo, h.versions.hi) for h in self]


#: The broker's registry; handler modules in broker/handlers register into it on import
#: (:func:`broker.handlers.load_handlers`).
REGISTRY = HandlerRegistry()


def handler(
    api_key: ApiKey,
    versions: str,
    *,
    acl: AclRequirement | None = None,
    before_authentication: bool = False,
    blocking: bool = False,
    no_acl: bool = False,
) -> Callable[[HandlerFn], HandlerFn]:
    def register(fn: HandlerFn) -> HandlerFn:
        REGISTRY.register(
            api_key,
            versions,
            fn,
            acl=acl,
            before_authentication=before_authentication,
            blocking=blocking,
            no_acl=no_acl,
        )
        return fn

    return register


def error_response(api_key: ApiKey) -> Callable[[ErrorResponseFn], ErrorResponseFn]:
    """Registers how to answer a whole ``api_key`` request with one error code."""

    def register(fn: ErrorResponseFn) -> ErrorResponseFn:
        REGISTRY.set_error_response(api_key, fn)
        return fn

    return register
