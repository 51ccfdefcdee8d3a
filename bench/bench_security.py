"""Security costs: TLS (SASL_SSL) against PLAINTEXT, and authorization with 1,000 ACLs.

    python -m bench bench_security [--records 300000] [--repeats 2] [--requests 20000]

1. **SASL_SSL vs PLAINTEXT** on one broker with both listeners: confluent-kafka produces
   ``--records`` x 1 KiB records (acks=1, linger.ms=5, no compression) and a fresh consumer reads
   them back, alternately on each listener. TLS encrypts in user space and cannot use sendfile:
   fetched data is read from the segment into memory and encrypted (plaintext sends it from the
   page cache with sendfile). Reported: MB/s and broker CPU per MB on each listener, and the
   ratios.
2. **Authorization**: the broker CPU per Produce request (``--requests`` one-record requests,
   acks=1, no batching), without an authorizer and with the ACL authorizer holding 1,000 ACLs
   (100 topics x 10 principals, plus prefixed ones; the producing principal is allowed by one of
   them). Decisions are cached per (principal, host, operation, resource), so the difference is a
   dictionary lookup per topic per request.

Broker CPU is user+system time of the broker process (/proc/<pid>/stat) during each run; the
machine is shared, so quote ratios from one run.
"""

from __future__ import annotations

import argparse
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


def authorization_overhead_with_store(requests: int, repeats: int) -> None:
    """Seeds the embedded security store file with 1,000 ACLs before the broker starts (the
    store's own format, as CreateAcls would leave it), then measures."""
    import json

    from confluent_kafka import Producer

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
    total = sum(len(v) for v in acls.values())
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

    def run(with_acls: bool) -> float:
        tmp = Path(tempfile.mkdtemp(prefix="bench-authz-"))
        settings = {"num.network.threads": "1"}
        if with_acls:
            (tmp / "data").mkdir(parents=True)
            (tmp / "data" / "odradek-security.json").write_text(json.dumps(doc))
            settings["authorizer.class.name"] = "kafka.security.authorizer.AclAuthorizer"
        broker = BrokerProcess(tmp / "data", settings, log_path=tmp / "broker.log").start()
        try:
            producer = Producer(
                {
                    "bootstrap.servers": broker.bootstrap,
                    "linger.ms": 0,
                    "batch.num.messages": 1,
                    "acks": 1,
                    "max.in.flight.requests.per.connection": 1,
                }
            )
            for _ in range(200):  # warm up: topic creation, connections, caches
                producer.produce("bench-topic", b"x" * 100)
            assert producer.flush(30) == 0
            cpu0 = cpu_seconds(broker.pid)
            for _ in range(requests):
                producer.produce("bench-topic", b"x" * 100)
                producer.poll(0)
            assert producer.flush(120) == 0
            return (cpu_seconds(broker.pid) - cpu0) / requests * 1e6
        finally:
            broker.stop()
            shutil.rmtree(tmp, ignore_errors=True)

    off: list[float] = []
    on: list[float] = []
    for _ in range(repeats):
        off.append(run(False))
        on.append(run(True))
    print(
        f"{requests} Produce requests of one record, acks=1, one at a time; broker CPU per "
        f"request, best of {repeats} alternating runs:"
    )
    print(
        f"  no authorizer:              {min(off):6.1f} us  (runs: "
        f"{', '.join(f'{x:.1f}' for x in off)})"
    )
    print(
        f"  ACL authorizer, {total} ACLs: {min(on):6.1f} us  (runs: "
        f"{', '.join(f'{x:.1f}' for x in on)})"
    )
    print(f"  overhead: {(min(on) / min(off) - 1) * 100:+.1f}%")


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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench bench_security")
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--requests", type=int, default=20_000)
    args = parser.parse_args(argv or [])
    tls_vs_plaintext(args.records, args.repeats)
    authorization_overhead_with_store(args.requests, args.repeats)
    authorization_in_process()


if __name__ == "__main__":
    main(sys.argv[1:])
