"""Differential protocol testing: the same requests to Apache Kafka and to Odradek, the responses
compared field by field after normalising what legitimately differs (issue 15).

A :class:`Scenario` is a short list of :class:`Exchange` rows (request builder, API version,
optional capture of ids from the answer). Builders take a per-broker :class:`Context`, so a
request can carry what that broker handed out earlier (topic ids, producer ids, member ids)
while staying the same request. Both sides are spoken to with Odradek's own protocol package
(``protocol.headers``), one connection per broker, one request at a time.

:func:`normalise` turns a decoded response into plain values and replaces what differs by
nature between two clusters: cluster ids, ports, topic ids, producer ids, fetch session ids,
telemetry subscription ids, member ids' random part, throttle times, broker-chosen timestamps,
error message wording (kept: whether there is one). Record batches are decoded into their records
so that compression output (which differs between codec libraries) is compared by content.

:func:`compare` lists the paths at which two normalised answers differ; :class:`Allowance`
rows say which differences are known and why (docs/compatibility.md lists them).
"""

from __future__ import annotations

import fnmatch
import os
import re
import socket
import struct
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.headers import decode_response, encode_request
from protocol.messages.api_versions import ApiVersionsRequest
from protocol.messages.find_coordinator import FindCoordinatorRequest
from protocol.messages.init_producer_id import InitProducerIdRequest
from protocol.records.legacy import LegacyBatch
from protocol.records.memory import iter_any_batches
from protocol.schema import Message
from tests.support import raw_client

ZERO_UUID = uuid.UUID(int=0)
CLOSED = "<connection closed>"


@dataclass
class Context:
    """What one broker handed out during a scenario (ids to reuse in later requests)."""

    target: str
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)

    def topic_id(self, name: str) -> uuid.UUID:
        return self.topic_ids.get(name, ZERO_UUID)


@dataclass(frozen=True)
class RawRequest:
    """A request frame built by hand: an API version no codec has (to see how a broker refuses
    it). The answer is decoded as ``decode_version`` of the same API."""

    api_key: int
    version: int
    body: bytes = b""
    decode_version: int = 0


Builder = Callable[[Context], "Message | RawRequest"]
Capture = Callable[[Context, Any], None]


@dataclass
class Exchange:
    """One request and its answer. ``capture`` keeps ids from the answer for later requests;
    ``project`` reduces the normalised answer to what the exchange is about (a set-up step
    compares its error codes only; a listing keeps the scenario's own groups)."""

    request: Builder | Message | RawRequest
    version: int
    capture: Capture | None = None
    label: str = ""
    project: Callable[[Any], Any] | None = None
    #: asked again (up to ``until_timeout`` seconds) until this holds of the answer: for state
    #: a broker reaches asynchronously (a transaction's markers written)
    until: Callable[[Any], bool] | None = None
    until_timeout: float = 30.0
    #: seconds to wait for the answer before taking the broker as silent (CLOSED): for a
    #: request the reference swallows without closing the connection
    answer_within: float = 60.0
    #: sent on a new connection (a SASL listener's connection starts unauthenticated)
    fresh: bool = False

    def build(self, ctx: Context) -> Message | RawRequest:
        if isinstance(self.request, Message | RawRequest):
            return self.request
        return self.request(ctx)

    @property
    def api_key(self) -> int:
        return int(self.build(Context("probe")).api_key)


@dataclass
class Scenario:
    name: str
    exchanges: list[Exchange]
    #: "3" (Kafka 3.9 in ZooKeeper mode) or "4" (Kafka 4.x KRaft): the reference that speaks
    #: every version the scenario uses; chosen by the corpus.
    reference: str = "3"
    #: the Kafka line to compare with when it speaks the scenario's versions (KIP-848 groups:
    #: Kafka 3.9 in ZooKeeper mode advertises them but serves no consumer group)
    prefer: str | None = None
    #: API keys the reference serves without advertising them, whose versions the choice of
    #: the reference does not check (Kafka 4.x serves KIP-714's client telemetry APIs with no
    #: telemetry receiver configured, and advertises them only with one)
    unadvertised: frozenset[int] = frozenset()
    #: the listener the scenario speaks to (the security corpora's brokers have several)
    listener: str = "PLAINTEXT"


class Connection:
    """One plain connection to a broker; reopened after the broker closes it."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.sock: socket.socket | None = None
        self.correlation_id = 0

    def call(self, request: Message | RawRequest, version: int, *, timeout: float = 60.0) -> Any:
        if self.sock is None:
            self.sock = raw_client.connect(self.bootstrap, timeout=timeout)
        self.sock.settimeout(timeout)
        self.correlation_id += 1
        if isinstance(request, RawRequest):
            frame_out = _raw_frame(request, self.correlation_id)
            version = request.decode_version
        else:
            frame_out = encode_request(request, version, self.correlation_id)
        try:
            self.sock.sendall(frame_out)
            frame = raw_client.read_frame(self.sock)
        except (ConnectionError, OSError, struct.error):
            self.close()
            return CLOSED
        got, response = decode_response(int(request.api_key), version, frame)
        if got != self.correlation_id:
            raise AssertionError(f"correlation id {got}, expected {self.correlation_id}")
        return response

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


def _raw_frame(request: RawRequest, correlation_id: int) -> bytes:
    """Request header v1 (api key, version, correlation id, client id) and the body as given."""
    client = b"odradek"
    header = struct.pack(">hhih", request.api_key, request.version, correlation_id, len(client))
    payload = header + client + request.body
    return struct.pack(">i", len(payload)) + payload


# --- normalisation ---------------------------------------------------------------------------

_UUID_IN_TEXT = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)

#: A Kafka Uuid as Kafka prints it (base64url, 22 characters): KIP-848 member ids.
_KAFKA_UUID = re.compile(r"[A-Za-z0-9_-]{22}")
_MEMBER_IDS = {"member_id", "leader"}

#: Fields whose value is chosen by each cluster on its own: replaced by a placeholder.
_PLACEHOLDERS = {
    "cluster_id": "<cluster-id>",
    "port": "<port>",
    "log_dir": "<log-dir>",
}
#: Fields compared only for being set (non-negative) or not: ids and times a broker picks, a
#: disk's sizes, and the finalized features' epoch (Kafka 4's is the offset of its metadata
#: log, Kafka 3.9's and Odradek's 0)
_SET_OR_NOT = {
    "producer_id",
    "log_append_time_ms",
    "transaction_start_time_ms",
    "total_bytes",
    "usable_bytes",
    "finalized_features_epoch",
}
_ZERO = {"throttle_time_ms"}
#: Ids a broker picks at random where 0 means none (a KIP-227 fetch session): compared for
#: being set or not.
_NONZERO_IDS = {"session_id"}
#: Ids a broker derives from random ones, any value (a KIP-714 subscription id: a CRC of the
#: subscription XORed with the client instance id's hash)
_ANY_IDS = {"subscription_id"}
#: Fields whose text is free wording: compared for presence only (null and "" alike: Kafka
#: itself answers either for "no message", depending on the API).
_WORDING = {"error_message", "batch_index_error_message", "documentation"}
#: Lists of strings that are sets to the broker (Kafka keeps a KIP-714 subscription's metric
#: prefixes in a HashSet, whose order means nothing): sorted before comparing.
_STRING_SETS = {"requested_metrics"}
#: Unordered lists: sorted by these keys before comparing.
_SORT_KEYS = (
    "name",
    "topic",
    "group_id",
    "user",
    "api_key",
    "partition_index",
    "partition",
    "partition_id",
    "node_id",
    # a quota entity's components (a map to Kafka, which answers them in its map's order)
    "entity_type",
    # ListConfigResources' topics (Kafka lists its metadata's topic set in hash order; a sort
    # is stable, so a name two types share, a broker's id, keeps the types' order)
    "resource_name",
)


def _decode_records(value: bytes) -> Any:
    """A Fetch partition's records as decoded batches (content, not compressed bytes)."""
    out: list[Any] = []
    try:
        for batch in iter_any_batches(value, allow_partial=True):
            if isinstance(batch, LegacyBatch):
                head: dict[str, Any] = {"magic": batch.magic}
            else:
                h = batch.header
                head = {
                    "magic": 2,
                    "producer_id": "<pid>" if h.producer_id >= 0 else h.producer_id,
                    "producer_epoch": h.producer_epoch,
                    "base_sequence": h.base_sequence,
                    "partition_leader_epoch": h.partition_leader_epoch,
                    "is_transactional": h.is_transactional,
                }
            head.update(
                base_offset=batch.base_offset,
                last_offset=batch.last_offset,
                compression=batch.compression,
                timestamp_type=batch.timestamp_type,
                is_control=batch.is_control,
                # a control record's timestamp is the broker's clock when it wrote the marker
                records=[
                    (
                        r.offset,
                        "<time>" if batch.is_control else r.timestamp,
                        r.key,
                        r.value,
                        [tuple(x) for x in r.headers],
                    )
                    for r in batch.records
                ],
            )
            out.append(head)
    except Exception as exc:
        out.append(f"<undecodable records: {type(exc).__name__}: {exc}>")
    return out


def normalise(value: Any, key: str = "") -> Any:
    """Plain, comparable values with cluster-specific details replaced (see module doc)."""
    if hasattr(value, "to_dict") and hasattr(value, "__fields__"):
        value = value.to_dict()
    if isinstance(value, dict):
        return {k: normalise(v, k) for k, v in value.items()}
    if isinstance(value, list):
        items = [normalise(v, key) for v in value]
        if key in _STRING_SETS and all(isinstance(i, str) for i in items):
            return sorted(items)
        if items and all(isinstance(i, dict) for i in items):
            for sort_key in _SORT_KEYS:
                if all(sort_key in i for i in items):
                    return sorted(items, key=lambda i: repr(i[sort_key]))
        return items
    if key in _ZERO:
        return 0
    if key in _NONZERO_IDS and isinstance(value, int):
        return "<set>" if value else 0
    if key in _ANY_IDS and isinstance(value, int):
        return "<id>"
    if key in _PLACEHOLDERS and value not in (None, "", -1):
        return _PLACEHOLDERS[key]
    if key in _SET_OR_NOT and isinstance(value, int):
        return "<set>" if value >= 0 else value
    if key in _WORDING:
        return "<text>" if value else None
    if isinstance(value, uuid.UUID):
        return "<uuid>" if value != ZERO_UUID else "<zero-uuid>"
    if key == "records" and isinstance(value, bytes | bytearray | memoryview):
        return _decode_records(bytes(value))
    if key in _MEMBER_IDS and isinstance(value, str) and _KAFKA_UUID.fullmatch(value):
        return "<uuid>"
    if isinstance(value, str) and _UUID_IN_TEXT.search(value):
        return _UUID_IN_TEXT.sub("<uuid>", value)
    return value


# --- comparison ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Difference:
    path: str
    kafka: Any
    odradek: Any

    def __str__(self) -> str:
        return f"{self.path}: Kafka {self.kafka!r}, Odradek {self.odradek!r}"


def compare(kafka: Any, odradek: Any, path: str = "") -> Iterator[Difference]:
    if isinstance(kafka, dict) and isinstance(odradek, dict):
        for k in sorted(set(kafka) | set(odradek)):
            yield from compare(kafka.get(k, "<absent>"), odradek.get(k, "<absent>"), f"{path}.{k}")
        return
    if isinstance(kafka, list) and isinstance(odradek, list):
        if len(kafka) != len(odradek):
            yield Difference(f"{path}[len]", _brief(kafka), _brief(odradek))
            return
        for i, (a, b) in enumerate(zip(kafka, odradek, strict=True)):
            yield from compare(a, b, f"{path}[{i}]")
        return
    if kafka != odradek:
        yield Difference(path, kafka, odradek)


def _brief(value: list[Any]) -> Any:
    text = repr(value)
    return text if len(text) < 400 else text[:400] + "..."


@dataclass(frozen=True)
class Allowance:
    """A known difference: scenarios matching ``scenario`` (fnmatch) may differ at paths matching
    ``path`` (a regular expression, searched). ``reason`` says why (an open issue or a
    legitimate difference); ``ident`` is the row's name in docs/compatibility.md."""

    ident: str
    scenario: str
    path: str
    reason: str

    def allows(self, scenario: str, difference: Difference) -> bool:
        return fnmatch.fnmatchcase(scenario, self.scenario) and bool(
            re.search(self.path, difference.path)
        )


@dataclass
class Outcome:
    scenario: Scenario
    differences: list[Difference]
    unexplained: list[Difference]
    allowances: set[str]

    @property
    def identical(self) -> bool:
        return not self.differences


def run_scenario(scenario: Scenario, kafka: Connection, odradek: Connection) -> list[Difference]:
    """Runs every exchange on both brokers (Kafka first) and returns the differences."""
    contexts = {"kafka": Context("kafka"), "odradek": Context("odradek")}
    differences: list[Difference] = []
    for i, exchange in enumerate(scenario.exchanges):
        answers = {}
        for target, conn in (("kafka", kafka), ("odradek", odradek)):
            ctx = contexts[target]
            request = exchange.build(ctx)
            if exchange.fresh:
                conn.close()
            response = conn.call(request, exchange.version, timeout=exchange.answer_within)
            deadline = time.monotonic() + exchange.until_timeout
            while (
                exchange.until is not None
                and response is not CLOSED
                and not exchange.until(response)
                and time.monotonic() < deadline
            ):
                time.sleep(0.05)
                response = conn.call(request, exchange.version)
            if exchange.capture is not None and response is not CLOSED:
                exchange.capture(ctx, response)
            answers[target] = normalise(response)
            if exchange.project is not None and response is not CLOSED:
                answers[target] = exchange.project(answers[target])
        api = ApiKey(exchange.api_key).name if exchange.api_key in ApiKey._value2member_map_ else ""
        prefix = f"#{i} {exchange.label or api.lower()} v{exchange.version}"
        if os.environ.get("ODRADEK_DIFF_SHOW"):
            print(f"{scenario.name} {prefix}")
            print(f"  kafka:   {answers['kafka']}\n  odradek: {answers['odradek']}")
        differences.extend(
            Difference(f"{prefix} {d.path}", d.kafka, d.odradek)
            for d in compare(answers["kafka"], answers["odradek"])
        )
    return differences


def judge(
    scenario: Scenario, differences: Sequence[Difference], allow_list: Sequence[Allowance]
) -> Outcome:
    unexplained = []
    used: set[str] = set()
    for d in differences:
        matched = [a for a in allow_list if a.allows(scenario.name, d)]
        if matched:
            used.update(a.ident for a in matched)
        else:
            unexplained.append(d)
    return Outcome(scenario, list(differences), unexplained, used)


# --- brokers ---------------------------------------------------------------------------------


def reference_ranges(bootstrap: str) -> dict[int, tuple[int, int]]:
    conn = Connection(bootstrap)
    try:
        answer = conn.call(
            ApiVersionsRequest(client_software_name="odradek-diff", client_software_version="1.0"),
            3,
        )
    finally:
        conn.close()
    return {a.api_key: (a.min_version, a.max_version) for a in answer.api_keys}


def warm_up(bootstrap: str, timeout: float = 120.0) -> None:
    """What a broker does once in its life before the corpus may compare it: create
    ``__consumer_offsets`` and ``__transaction_state`` (on the first FindCoordinator of each
    kind) and fetch a producer id block (Kafka 3.x asks its controller for one on the first
    InitProducerId). Not compared: only waited for."""
    conn = Connection(bootstrap)
    deadline = time.monotonic() + timeout
    try:
        for request, version in (
            (FindCoordinatorRequest(key="odradek-warm-up", key_type=0), 3),
            (FindCoordinatorRequest(key="odradek-warm-up", key_type=1), 3),
            (InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000), 4),
        ):
            while True:
                answer = conn.call(request, version)
                if getattr(answer, "error_code", None) == ErrorCode.NONE:
                    break
                if time.monotonic() > deadline:
                    raise AssertionError(f"{bootstrap} did not warm up: {answer}")
                time.sleep(0.2)
    finally:
        conn.close()
