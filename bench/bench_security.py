"""Security costs: TLS (SASL_SSL) against PLAINTEXT, and authorization with 1,000 ACLs.

    python -m bench bench_security [--records 300000] [--repeats 2]
                                   [--requests 20000] [--authz-repeats 6]
                                   [--only tls|authz|in-process|signatures ...]

1. **SASL_SSL vs PLAINTEXT** on one broker with both listeners: confluent-kafka produces
   ``--records`` x 1 KiB records (acks=1, linger.ms=5, no compression) and a fresh consumer reads
   them back, alternately on each listener. TLS encrypts in user space and cannot use sendfile:
   fetched data is read from the segment into memory and encrypted (plaintext sends it from the
   page cache with sendfile). Reported: MB/s and broker CPU per MB on each listener, and the
   ratios.
2. **Authorization, measured directly**: two brokers with the same settings (one network thread)
   and the same store of 1,001 ACLs (95 topics x 10 principals, 49 prefixed patterns, and the
   PREFIXED ACL that lets the benchmark's principal in), one with
   ``authorizer.class.name=kafka.security.authorizer.AclAuthorizer`` and one without. The same
   workloads against each, alternating (ABBA) for ``--authz-repeats`` rounds: ``--requests``
   Produce requests of one record (confluent-kafka, acks=1, one in flight), then ``--requests``
   Fetch v12 requests (one partition, about 1 KiB answered, one at a time). Reported: the
   broker's CPU per request answered (user+system from /proc/<pid>/stat over the round, divided
   by the requests the broker's own metrics counted), the medians and their ratio.
3. **In process**, without the network: the dispatcher and the Produce handler over a stub
   append, with and without the authorizer (an upper bound of the share, the stub request
   being cheaper than a real one).
4. **Signatures**: one OAUTHBEARER login's token check with a JWKS (KIP-768), per signature
   algorithm: the time the processor thread spends in it, in process.

The machine is shared: quote ratios from one run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.integration.broker_process import BrokerProcess  # noqa: E402

PAYLOAD = (b'{"user":1234,"order":"ok","region":"eu-west","amount":42},' * 20)[:1024]


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def produce_consume(
    broker: BrokerProcess, listener: str, client: dict[str, str], topic: str, records: int
) -> tuple[float, float, float, float]:
    """(produce seconds, produce broker CPU, consume seconds, consume broker CPU)."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    conf = {"bootstrap.servers": broker.address(listener), **client}
    producer = Producer(
        {
            **conf,
            "acks": 1,
            "linger.ms": 5,
            "batch.size": 1048576,
            "queue.buffering.max.kbytes": 1048576,
        }
    )
    cpu0, t0 = cpu_seconds(broker.pid), time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, PAYLOAD)
                break
            except BufferError:
                producer.poll(0.01)
    assert producer.flush(300) == 0
    produce_s, produce_cpu = time.perf_counter() - t0, cpu_seconds(broker.pid) - cpu0
    consumer = Consumer(
        {
            **conf,
            "group.id": topic + "-reader",
            "enable.auto.commit": False,
            "fetch.max.bytes": 52428800,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    got = 0
    cpu0, t0 = cpu_seconds(broker.pid), time.perf_counter()
    while got < records:
        for m in consumer.consume(10000, 1.0):
            if not m.error():
                got += 1
    consume_s, consume_cpu = time.perf_counter() - t0, cpu_seconds(broker.pid) - cpu0
    consumer.close()
    return produce_s, produce_cpu, consume_s, consume_cpu


def tls_vs_plaintext(records: int, repeats: int) -> None:
    from tests.support.certs import make_tls_files
    from tests.support.secure_broker import plain_jaas

    tmp = Path(tempfile.mkdtemp(prefix="bench-security-"))
    tls = make_tls_files(tmp / "certs")
    broker = BrokerProcess(
        tmp / "data",
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_ssl.plain.sasl.jaas.config": plain_jaas(),
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(tls.server),
            "message.max.bytes": str(2 * 1024 * 1024),
        },
        log_path=tmp / "broker.log",
    ).start()
    clients = {
        "PLAINTEXT": {},
        "SASL_SSL": {
            "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(tls.ca),
            "sasl.mechanism": "PLAIN",
            "sasl.username": "alice",
            "sasl.password": "alice-secret",
        },
    }
    mb = records * len(PAYLOAD) / 1e6
    results: dict[str, list[tuple[float, float, float, float]]] = {k: [] for k in clients}
    try:
        for r in range(repeats):
            for listener, client in clients.items():
                results[listener].append(
                    produce_consume(broker, listener, client, f"{listener}-{r}", records)
                )
    finally:
        broker.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{records} x {len(PAYLOAD)} B records ({mb:.0f} MB), best of {repeats}:")
    best = {}
    for listener, runs in results.items():
        p_s = min(r[0] for r in runs)
        c_s = min(r[2] for r in runs)
        p_cpu = min(r[1] for r in runs)
        c_cpu = min(r[3] for r in runs)
        best[listener] = (mb / p_s, mb / c_s, p_cpu / mb * 1000, c_cpu / mb * 1000)
        print(
            f"  {listener:10s} produce {mb / p_s:7.1f} MB/s ({p_cpu / mb * 1000:5.1f} ms broker "
            f"CPU/MB)   consume {mb / c_s:7.1f} MB/s ({c_cpu / mb * 1000:5.1f} ms broker CPU/MB)"
        )
    plain, secure = best["PLAINTEXT"], best["SASL_SSL"]
    print(
        f"  SASL_SSL / PLAINTEXT: produce throughput {secure[0] / plain[0]:.2f}x, consume "
        f"throughput {secure[1] / plain[1]:.2f}x; broker CPU per MB: produce "
        f"{secure[2] / plain[2]:.2f}x, consume {secure[3] / plain[3]:.2f}x"
    )


AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"


def acl_store_document() -> tuple[dict[str, object], int]:
    """The embedded security store's file with 1,001 ACLs (the store's own format, as
    CreateAcls would leave it): 95 topics x 10 principals, 49 prefixed patterns of another
    principal, and what lets ``User:ANONYMOUS`` (the PLAINTEXT listener's principal) work: ALL
    on the ``bench-`` prefix and on the cluster. Returns (document, number of ACLs)."""
    import json

    from coordination.metadata.security import (
        AccessControlEntry,
        ResourcePattern,
        encode_acls,
        resource_type_name,
    )
    from protocol.acl import AclOperation, AclPermissionType, PatternType, ResourceType

    acls: dict[ResourcePattern, set[AccessControlEntry]] = {}
    for t in range(95):
        for u in range(10):
            acls.setdefault(
                ResourcePattern(ResourceType.TOPIC, f"topic-{t}", PatternType.LITERAL), set()
            ).add(
                AccessControlEntry(
                    f"User:user-{u}", "*", AclOperation.WRITE, AclPermissionType.ALLOW
                )
            )
    for p in range(49):
        acls.setdefault(
            ResourcePattern(ResourceType.TOPIC, f"prefix-{p}-", PatternType.PREFIXED), set()
        ).add(AccessControlEntry("User:user-1", "*", AclOperation.READ, AclPermissionType.ALLOW))
    acls[ResourcePattern(ResourceType.TOPIC, "bench-", PatternType.PREFIXED)] = {
        AccessControlEntry("User:ANONYMOUS", "*", AclOperation.ALL, AclPermissionType.ALLOW)
    }
    acls[ResourcePattern(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL)] = {
        AccessControlEntry("User:ANONYMOUS", "*", AclOperation.ALL, AclPermissionType.ALLOW)
    }
    doc = {
        "version": 1,
        "acls": [
            {
                "resource_type": resource_type_name(p.resource_type),
                "pattern_type": p.pattern_type.name,
                "name": p.name,
                "acls": json.loads(encode_acls(entries)),
            }
            for p, entries in acls.items()
        ],
        "configs": {},
    }
    return doc, sum(len(v) for v in acls.values())


def requests_answered(metrics_port: int) -> float:
    """Every request the broker has answered (kafka_network_requestmetrics_requests_total)."""
    from tests.support.metrics import scrape

    return sum(
        value
        for name, value in scrape(metrics_port).items()
        if name.startswith("kafka_network_requestmetrics_requests_total{")
    )


class AuthzTarget:
    """One broker of the comparison, with a producer and a fetching connection kept open
    across rounds (so that no round pays for connecting)."""

    TOPIC = "bench-topic"

    def __init__(self, label: str, broker: BrokerProcess, metrics_port: int) -> None:
        from confluent_kafka import Producer

        from tests.support.raw_client import connect

        self.label = label
        self.broker = broker
        self.metrics_port = metrics_port
        self.producer: Producer | None = Producer(
            {
                "bootstrap.servers": broker.bootstrap,
                "linger.ms": 0,
                "batch.num.messages": 1,
                "acks": 1,
                "max.in.flight.requests.per.connection": 1,
            }
        )
        self.fetcher = connect(broker.bootstrap)
        self.produced = 0
        self.correlation = 0

    def produce(self, n: int) -> None:
        """``n`` Produce requests of one 100-byte record each, one in flight."""
        assert self.producer is not None
        for _ in range(n):
            while True:
                try:
                    self.producer.produce(self.TOPIC, b"x" * 100)
                    break
                except BufferError:
                    self.producer.poll(0.01)
            self.producer.poll(0)
        assert self.producer.flush(300) == 0
        self.produced += n

    def fetch(self, n: int) -> None:
        """``n`` Fetch requests (v12, sessionless, as a consumer without a fetch session), one
        at a time, each from another offset of the partition and answered with its batch."""
        from protocol.error_codes import ErrorCode
        from protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
        from tests.support.raw_client import call

        for i in range(n):
            request = FetchRequest(
                replica_id=-1,
                max_wait_ms=0,
                min_bytes=0,
                max_bytes=64 * 1024,
                session_id=0,
                session_epoch=-1,
                topics=[
                    FetchTopic(
                        topic=self.TOPIC,
                        partitions=[
                            FetchPartition(
                                partition=0,
                                fetch_offset=i % self.produced,
                                partition_max_bytes=1024,
                            )
                        ],
                    )
                ],
            )
            self.correlation += 1
            answer = call(self.fetcher, request, 12, self.correlation)
            partition = answer.responses[0].partitions[0]
            assert partition.error_code == ErrorCode.NONE and partition.records, partition

    def cpu_per_request(self, work: str, n: int) -> float:
        """Broker CPU microseconds per request answered while doing ``work`` ``n`` times."""
        pid = self.broker.pid
        answered0 = requests_answered(self.metrics_port)
        cpu0 = cpu_seconds(pid)
        getattr(self, work)(n)
        cpu = cpu_seconds(pid) - cpu0
        answered = requests_answered(self.metrics_port) - answered0
        return cpu / answered * 1e6

    def close(self) -> None:
        self.fetcher.close()
        if self.producer is not None:
            self.producer.flush(30)
            self.producer = None  # closed before its broker goes
        self.broker.stop()


def authorization_overhead(requests: int, repeats: int) -> None:
    """The broker CPU per request, measured directly: two brokers with the same settings and
    the same 1,001-ACL store, one with ``authorizer.class.name`` and one without; the same
    Produce and Fetch workloads against each, alternating (ABBA) for ``repeats`` rounds;
    medians and their ratio."""
    import json
    import statistics

    from tests.support.zookeeper import free_port

    doc, total = acl_store_document()
    tmp = Path(tempfile.mkdtemp(prefix="bench-authz-"))
    targets: list[AuthzTarget] = []
    try:
        for label, authorizer in (
            ("no authorizer", None),
            (f"ACL authorizer, {total} ACLs", AUTHORIZER),
        ):
            home = tmp / ("with" if authorizer else "without")
            (home / "data").mkdir(parents=True)
            (home / "data" / "odradek-security.json").write_text(json.dumps(doc))
            metrics_port = free_port()
            settings = {"num.network.threads": "1", "metrics.port": str(metrics_port)}
            if authorizer:
                settings["authorizer.class.name"] = authorizer
            broker = BrokerProcess(home / "data", settings, log_path=home / "broker.log").start()
            targets.append(AuthzTarget(label, broker, metrics_port))
        warm = max(200, requests // 10)
        for target in targets:  # topic creation, connections, the authorizer's cache
            target.produce(warm)
            target.fetch(warm)
        results: dict[tuple[str, str], list[float]] = {}
        for r in range(repeats):
            for target in targets if r % 2 == 0 else targets[::-1]:
                for work in ("produce", "fetch"):
                    us = target.cpu_per_request(work, requests)
                    results.setdefault((target.label, work), []).append(us)
    finally:
        for target in targets:
            target.close()
        shutil.rmtree(tmp, ignore_errors=True)
    print(
        f"Broker CPU per request (user+system of the broker process from /proc, over the "
        f"requests its metrics counted), {requests} requests per round, {repeats} alternating "
        f"rounds, medians; one broker each, one network thread:"
    )
    base_label, acl_label = (t.label for t in targets)
    for work, what in (
        ("produce", "Produce, one 100 B record per request, one in flight (confluent-kafka)"),
        ("fetch", "Fetch v12, one partition, about 1 KiB per response, one at a time"),
    ):
        base = results[(base_label, work)]
        acl = results[(acl_label, work)]
        ratio = statistics.median(acl) / statistics.median(base)
        print(f"  {what}:")
        for label, runs in ((base_label, base), (acl_label, acl)):
            print(
                f"    {label:28s} {statistics.median(runs):6.1f} us  (rounds: "
                f"{', '.join(f'{x:.1f}' for x in runs)})"
            )
        print(f"    with / without the authorizer: {ratio:.3f} ({(ratio - 1) * 100:+.1f}%)")


def authorization_in_process(acl_doc_acls: int = 1000, iterations: int = 20000) -> None:
    """The same question without the machine's noise: the dispatcher and the Produce handler,
    in this process, over a stub append (so the request is cheaper than a real one and the
    share of authorization is an upper bound), with and without the ACL authorizer."""
    import timeit

    from broker.dispatch import Dispatcher
    from broker.handlers import load_handlers
    from broker.net.session import Session
    from broker.security.authorizer import AclAuthorizer
    from broker.security.services import SecurityServices
    from coordination.metadata.embedded_security import EmbeddedSecurityStore
    from coordination.metadata.security import AccessControlEntry, ResourcePattern
    from protocol.acl import AclOperation, AclPermissionType, PatternType, ResourceType
    from protocol.headers import encode_request
    from protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
    from tests.unit.broker.test_dispatch import FakeConnection, FakeReplicaManager, services
    from tests.unit.storage.util import make_batch

    tmp = Path(tempfile.mkdtemp(prefix="bench-authz-"))
    store = EmbeddedSecurityStore(tmp / "security.json")
    store.start()
    acls: dict[ResourcePattern, frozenset[AccessControlEntry]] = {}
    for t in range(acl_doc_acls // 10):
        acls[ResourcePattern(ResourceType.TOPIC, f"topic-{t}", PatternType.LITERAL)] = frozenset(
            AccessControlEntry(f"User:user-{u}", "*", AclOperation.WRITE, AclPermissionType.ALLOW)
            for u in range(10)
        )
    acls[ResourcePattern(ResourceType.TOPIC, "bench-", PatternType.PREFIXED)] = frozenset(
        {AccessControlEntry("User:ANONYMOUS", "*", AclOperation.WRITE, AclPermissionType.ALLOW)}
    )
    store._publish_acls(acls)
    authorizer = AclAuthorizer(store)
    registry = load_handlers()
    frame = encode_request(
        ProduceRequest(
            acks=1,
            timeout_ms=1000,
            topic_data=[
                TopicProduceData(
                    name="bench-topic",
                    partition_data=[
                        PartitionProduceData(index=0, records=make_batch(1, value_size=100))
                    ],
                )
            ],
        ),
        9,
        7,
        "bench",
    )[4:]
    calls = {}
    for label, authz in (
        ("no authorizer", None),
        (f"ACL authorizer, {acl_doc_acls + 1} ACLs", authorizer),
    ):
        svc = services(FakeReplicaManager(), authz)
        fields = {f: getattr(svc, f) for f in svc.__dataclass_fields__}
        fields["security"] = SecurityServices(store=store, authorizer=authz)
        dispatcher = Dispatcher(type(svc)(**fields), registry)
        conn = FakeConnection(Session.accepted("PLAINTEXT", "PLAINTEXT", ("127.0.0.1", 1)))

        def one(dispatcher: Dispatcher = dispatcher, conn: FakeConnection = conn) -> None:
            dispatcher.handle(conn, memoryview(frame))  # type: ignore[arg-type]

        one()
        calls[label] = one
    # alternating, so that the machine's drift hits both alike
    times = {label: float("inf") for label in calls}
    for _ in range(7):
        for label, one in calls.items():
            t = timeit.timeit(one, number=iterations) / iterations * 1e6
            times[label] = min(times[label], t)
    shutil.rmtree(tmp, ignore_errors=True)
    base, with_acls = times.values()
    print(
        f"In process (dispatcher + Produce handler over a stub append), best of 7 x {iterations}:"
    )
    for label, us in times.items():
        print(f"  {label:28s} {us:6.2f} us per request")
    print(
        f"  authorization adds {with_acls - base:.2f} us per request "
        f"({(with_acls / base - 1) * 100:+.1f}% of this stub request)"
    )


def signature_checks(iterations: int = 20) -> None:
    """What one OAUTHBEARER login's signature check costs the processor thread that runs it
    (KIP-768: a JWS verified against the identity provider's key, with Python's integers)."""
    import timeit

    from broker.security.oauth_jwks import JwksSource, JwtValidator
    from tests.support.oauth_idp import SigningKey

    now = int(time.time())
    claims = {"sub": "svc", "iat": now, "exp": now + 600}
    print(
        "OAUTHBEARER signature checks (a JWT validated against its JWKS), "
        f"best of 5 x {iterations}:"
    )
    for alg in ("RS256", "PS256", "ES256", "ES384"):
        key = SigningKey(alg, "k")
        document = json.dumps({"keys": [key.jwk]}).encode()
        validator = JwtValidator(JwksSource("https://idp/jwks", fetch=lambda url, d=document: d))
        token = key.token(claims)
        validator(token)
        best = min(
            timeit.repeat(
                lambda v=validator, t=token: v(t),  # type: ignore[misc]
                number=iterations,
                repeat=5,
            )
        )
        print(f"  {alg}  {best / iterations * 1e3:6.2f} ms per login")


PARTS = ("tls", "authz", "in-process", "signatures")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench bench_security")
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--repeats", type=int, default=2, help="TLS vs PLAINTEXT runs")
    parser.add_argument("--requests", type=int, default=20_000, help="per authorization round")
    parser.add_argument("--authz-repeats", type=int, default=6, help="authorization rounds")
    parser.add_argument(
        "--only", action="append", choices=PARTS, help="run only these parts (repeatable)"
    )
    args = parser.parse_args(argv or [])
    parts = args.only or PARTS
    if "tls" in parts:
        tls_vs_plaintext(args.records, args.repeats)
    if "authz" in parts:
        authorization_overhead(args.requests, args.authz_repeats)
    if "in-process" in parts:
        authorization_in_process()
    if "signatures" in parts:
        signature_checks()


if __name__ == "__main__":
    main(sys.argv[1:])
