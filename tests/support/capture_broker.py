"""A capture broker: just enough Kafka (ApiVersions, Metadata, Produce) for a real producer to
send record batches, which it keeps for the test to inspect.

librdkafka (confluent-kafka, kcat) only ever writes batches to a broker, so this is how its
batches reach our reader. It speaks through our own codecs (protocol.headers, protocol.messages),
listens on 127.0.0.1 port 0, and runs its asyncio loop in a thread because the producers under
test block. Which versions it advertises is a parameter: advertising what Kafka 0.9 or 0.10 did
makes librdkafka write legacy message sets (magic 0 or 1).
"""

from __future__ import annotations

import asyncio
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from protocol.api_keys import ApiKey
from protocol.errors import RemoteProtocolError, UnsupportedVersion
from protocol.headers import decode_request, decode_request_header, encode_response
from protocol.messages import SCHEMAS
from protocol.messages.api_versions import ApiVersionsResponse
from protocol.messages.metadata import MetadataResponse
from protocol.messages.produce import ProduceResponse

#: What a modern broker offers for producing: v2 batches and every codec. librdkafka's feature
#: checks want Fetch 10+ for zstd and FindCoordinator for lz4, so those are advertised too,
#: though never served.
MODERN_VERSIONS: dict[int, tuple[int, int]] = {
    ApiKey.PRODUCE: (0, 9),
    ApiKey.FETCH: (0, 11),
    ApiKey.METADATA: (0, 9),
    ApiKey.FIND_COORDINATOR: (0, 2),
    ApiKey.API_VERSIONS: (0, 3),
}

#: A Kafka 0.10-like broker: Produce v2 at most and Fetch v3, so clients write magic 1.
V1_VERSIONS: dict[int, tuple[int, int]] = {
    ApiKey.PRODUCE: (0, 2),
    ApiKey.FETCH: (0, 3),
    ApiKey.METADATA: (0, 2),
    ApiKey.FIND_COORDINATOR: (0, 0),
    ApiKey.API_VERSIONS: (0, 1),
}

#: A Kafka 0.9-like broker: Produce and Fetch v1 at most, so clients write magic 0.
V0_VERSIONS: dict[int, tuple[int, int]] = {
    ApiKey.PRODUCE: (0, 1),
    ApiKey.FETCH: (0, 1),
    ApiKey.METADATA: (0, 1),  # librdkafka 2.x fails to parse partitions in Metadata v0
    ApiKey.FIND_COORDINATOR: (0, 0),
    ApiKey.API_VERSIONS: (0, 0),
}

_SIZE = struct.Struct(">i")


@dataclass
class CapturedBatch:
    """The records field of one partition in one Produce request."""

    api_version: int
    client_id: str | None
    topic: str
    partition: int
    acks: int
    transactional_id: str | None
    records: bytes


@dataclass
class CaptureBroker:
    versions: dict[int, tuple[int, int]] = field(default_factory=lambda: dict(MODERN_VERSIONS))
    partitions: int = 1
    node_id: int = 1
    host: str = "127.0.0.1"
    port: int = 0
    captured: list[CapturedBatch] = field(default_factory=list)
    requests: list[tuple[int, int]] = field(default_factory=list)  # (api_key, version) seen
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self._next_offset: dict[tuple[str, int], int] = {}
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    # -- lifecycle (called from the test's thread) ---------------------------------------------

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self) -> CaptureBroker:
        self._thread = threading.Thread(target=self._run, name="capture-broker", daemon=True)
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("capture broker did not start")
        return self

    def stop(self) -> None:
        loop = self._loop
        if loop is not None and self._thread is not None and self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(30)
            loop.call_soon_threadsafe(loop.stop)
            self._thread.join(30)

    def __enter__(self) -> CaptureBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def batches(self) -> list[CapturedBatch]:
        with self._lock:
            return list(self.captured)

    def wait_for(
        self, predicate: Callable[[list[CapturedBatch]], bool], timeout: float = 30.0
    ) -> list[CapturedBatch]:
        """Waits until ``predicate(batches)`` holds (a deadline for a hung client, not a timing
        assertion)."""
        deadline = time.monotonic() + timeout
        while True:
            batches = self.batches()
            if predicate(batches) or time.monotonic() > deadline:
                return batches
            time.sleep(0.02)

    # -- the loop's thread ----------------------------------------------------------------------

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        self._server = loop.run_until_complete(
            asyncio.start_server(self._serve, self.host, self.port)
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            loop.close()

    async def _shutdown(self) -> None:
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):
            writer.close()
        tasks = [t for t in self._tasks if not t.done()]
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        try:
            while True:
                size = _SIZE.unpack(await reader.readexactly(4))[0]
                frame = await reader.readexactly(size)
                response = self._handle(frame)
                if response is not None:
                    writer.write(b"".join(bytes(p) for p in response))
                    await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except RemoteProtocolError as e:
            self.errors.append(repr(e))
        finally:
            self._writers.discard(writer)
            self._tasks.discard(task)
            writer.close()

    def _handle(self, frame: bytes) -> list[Any] | None:
        header, _ = decode_request_header(frame)
        self.requests.append((header.api_key, header.api_version))
        advertised = self.versions.get(header.api_key)
        if header.api_key == ApiKey.API_VERSIONS and (
            advertised is None or not advertised[0] <= header.api_version <= advertised[1]
        ):
            # answer an unknown ApiVersions version with error 35 and a v0 body
            body = ApiVersionsResponse(error_code=35, api_keys=self._api_versions())
            return encode_response(SCHEMAS[ApiKey.API_VERSIONS], 0, header.correlation_id, body)
        if advertised is None or not advertised[0] <= header.api_version <= advertised[1]:
            raise UnsupportedVersion(header.api_key, header.api_version)
        header, request = decode_request(frame)
        schema = SCHEMAS[header.api_key]
        if header.api_key == ApiKey.API_VERSIONS:
            body: Any = ApiVersionsResponse(error_code=0, api_keys=self._api_versions())
        elif header.api_key == ApiKey.METADATA:
            body = self._metadata(request)
        elif header.api_key == ApiKey.PRODUCE:
            body = self._produce(header.api_version, header.client_id, request)
            if request.acks == 0:
                return None
        else:
            raise UnsupportedVersion(header.api_key, header.api_version)
        return encode_response(schema, header.api_version, header.correlation_id, body)

    def _api_versions(self) -> list[Any]:
        return [
            ApiVersionsResponse.ApiVersion(api_key=key, min_version=lo, max_version=hi)
            for key, (lo, hi) in sorted(self.versions.items())
        ]

    def _metadata(self, request: Any) -> Any:
        names = [t.name for t in request.topics or [] if t.name is not None]
        broker = MetadataResponse.MetadataResponseBroker(
            node_id=self.node_id, host=self.host, port=self.port
        )
        topics = [
            MetadataResponse.MetadataResponseTopic(
                error_code=0,
                name=name,
                partitions=[
                    MetadataResponse.MetadataResponsePartition(
                        error_code=0,
                        partition_index=p,
                        leader_id=self.node_id,
                        leader_epoch=0,
                        replica_nodes=[self.node_id],
                        isr_nodes=[self.node_id],
                    )
                    for p in range(self.partitions)
                ],
            )
            for name in names
        ]
        return MetadataResponse(
            brokers=[broker], cluster_id="capture", controller_id=self.node_id, topics=topics
        )

    def _produce(self, version: int, client_id: str | None, request: Any) -> Any:
        responses = []
        for topic in request.topic_data:
            partitions = []
            for data in topic.partition_data:
                records = b"" if data.records is None else bytes(data.records)
                key = (topic.name, data.index)
                with self._lock:
                    self.captured.append(
                        CapturedBatch(
                            version,
                            client_id,
                            topic.name,
                            data.index,
                            request.acks,
                            getattr(request, "transactional_id", None),
                            records,
                        )
                    )
                    base_offset = self._next_offset.get(key, 0)
                    self._next_offset[key] = base_offset + _count_records(records)
                partitions.append(
                    ProduceResponse.PartitionProduceResponse(
                        index=data.index, error_code=0, base_offset=base_offset, log_start_offset=0
                    )
                )
            responses.append(
                ProduceResponse.TopicProduceResponse(
                    name=topic.name, partition_responses=partitions
                )
            )
        return ProduceResponse(responses=responses, throttle_time_ms=0)


def _count_records(records: bytes) -> int:
    """Offsets a produced records blob takes (good enough for base offsets in responses)."""
    from protocol.records.memory import iter_any_batches

    try:
        return sum(len(batch.records) for batch in iter_any_batches(records))
    except RemoteProtocolError:
        return 1
