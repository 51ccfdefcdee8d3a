"""Kafka API message schemas, one module per API, and the registry that finds them.

Each module defines a ``<Name>Request`` and a ``<Name>Response`` with
:func:`protocol.schema.message`. The registry imports every module in this package and pairs
requests with responses by API key, so adding an API is adding a module.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass

from protocol.api_keys import ApiKey
from protocol.codegen import Decoder, Encoder, decoder, encoder
from protocol.errors import LocalProtocolError, UnsupportedVersion
from protocol.schema import Message, Versions


@dataclass(frozen=True)
class ApiSchema:
    """A request/response pair and the header rules that go with it."""

    key: ApiKey
    request: type[Message]
    response: type[Message]

    @property
    def name(self) -> str:
        return self.request.__name__.removesuffix("Request")

    @property
    def valid_versions(self) -> Versions:
        return self.request.valid_versions

    def is_flexible(self, version: int) -> bool:
        return version in self.request.flexible_versions

    def request_header_version(self, version: int) -> int:
        # ControlledShutdown v0 is the one request whose header has no client id (v0).
        if self.key == ApiKey.CONTROLLED_SHUTDOWN and version == 0:
            return 0
        return 2 if self.is_flexible(version) else 1

    def response_header_version(self, version: int) -> int:
        # ApiVersions responses always use header v0, so that a client that does not yet know
        # the broker's versions can read the error code.
        if self.key == ApiKey.API_VERSIONS:
            return 0
        return 1 if self.is_flexible(version) else 0

    def check_version(self, version: int) -> None:
        if version not in self.valid_versions:
            raise UnsupportedVersion(self.key, version)

    def request_decoder(self, version: int) -> Decoder:
        return decoder(self.request, version, self.is_flexible(version))

    def request_encoder(self, version: int) -> Encoder:
        return encoder(self.request, version, self.is_flexible(version))

    def response_decoder(self, version: int) -> Decoder:
        return decoder(self.response, version, self.is_flexible(version))

    def response_encoder(self, version: int) -> Encoder:
        return encoder(self.response, version, self.is_flexible(version))


def _discover() -> dict[int, ApiSchema]:
    requests: dict[int, type[Message]] = {}
    responses: dict[int, type[Message]] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for value in vars(module).values():
            if not (
                isinstance(value, type) and issubclass(value, Message) and value is not Message
            ):
                continue
            if value.__module__ != module.__name__:
                continue
            table = {"request": requests, "response": responses}.get(value.kind)
            if table is None:
                continue
            other = table.get(value.api_key)
            if other is not None and other is not value:
                raise LocalProtocolError(f"two {value.kind}s for api key {value.api_key}")
            table[value.api_key] = value
    schemas = {}
    for key, request in requests.items():
        response = responses.get(key)
        if response is None:
            raise LocalProtocolError(f"{request.__name__} has no response schema")
        if request.valid_versions != response.valid_versions:
            raise LocalProtocolError(f"{request.__name__}: request and response versions differ")
        if request.flexible_versions != response.flexible_versions:
            raise LocalProtocolError(f"{request.__name__}: flexible versions differ")
        schemas[key] = ApiSchema(ApiKey(key), request, response)
    return dict(sorted(schemas.items()))


#: Every API we have a schema for, by key.
SCHEMAS: dict[int, ApiSchema] = _discover()


def schema_for(api_key: int) -> ApiSchema:
    try:
        return SCHEMAS[api_key]
    except KeyError:
        raise UnsupportedVersion(api_key, -1) from None
