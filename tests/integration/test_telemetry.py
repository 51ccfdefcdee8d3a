"""Client telemetry (KIP-714) on the real broker: a subscription set with kafka-python's admin
client (IncrementalAlterConfigs on a CLIENT_METRICS resource, described back), a librdkafka
producer with ``enable.metrics.push`` whose metrics appear on the broker's Prometheus endpoint
labelled with its client id and instance id while an unmatched client pushes nothing, and raw
PushTelemetry requests with every compression type clients use."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest

from protocol import otlp
from protocol.error_codes import ErrorCode
from protocol.messages.get_telemetry_subscriptions import GetTelemetrySubscriptionsRequest
from protocol.messages.push_telemetry import PushTelemetryRequest
from protocol.otlp import DataPoint, Metric, ResourceMetrics
from protocol.records import compression
from tests.integration.broker_process import BrokerProcess
from tests.support.metrics import scrape
from tests.support.ports import free_port
from tests.support.raw_client import api_versions, call, connect
from tests.support.waiting import wait_for


@pytest.fixture(scope="module")
def telemetry_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    port = free_port()
    proc = BrokerProcess(tmp_path_factory.mktemp("telemetry") / "data", {"metrics.port": str(port)})
    proc.metrics_port = port  # type: ignore[attr-defined]
    proc.start()
    yield proc
    proc.stop()


def alter(bootstrap: str, name: str, configs: dict[str, str]) -> str:
    """kafka-python's IncrementalAlterConfigs of a CLIENT_METRICS resource: its answer ("OK" or
    the error)."""
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        resource = ConfigResource(ConfigResourceType.CLIENT_METRICS, name, configs)
        result = admin.alter_configs([resource], incremental=True)
        return str(result["client_metrics"][name])
    finally:
        admin.close()


def subscribe(bootstrap: str, name: str, configs: dict[str, str]) -> None:
    """Sets a subscription and checks DescribeConfigs shows it."""
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    assert alter(bootstrap, name, configs) == "OK"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        described = admin.describe_configs(
            [ConfigResource(ConfigResourceType.CLIENT_METRICS, name)], config_filter="all"
        )["client_metrics"][name]
    finally:
        admin.close()
    for key, value in configs.items():
        assert described[key]["value"] == value
        assert described[key]["config_source"] == "DYNAMIC_CLIENT_METRICS_CONFIG"


def client_series(port: int, client_id: str) -> dict[str, float]:
    return {k: v for k, v in scrape(port).items() if f'client_id="{client_id}"' in k}


def test_a_librdkafka_client_pushes_its_metrics(telemetry_broker: BrokerProcess) -> None:
    """Acceptance (issue 19): a librdkafka client with telemetry enabled has its metrics on
    the Prometheus endpoint, with its client id and instance id."""
    from confluent_kafka import Producer

    port = telemetry_broker.metrics_port  # type: ignore[attr-defined]
    subscribe(
        telemetry_broker.bootstrap,
        "apps",
        {
            "metrics": "org.apache.kafka.producer.",
            "interval.ms": "500",
            "match": "client_id=tele-.*",
        },
    )
    topic = f"telemetry-{uuid.uuid4().hex[:6]}"
    pushing = Producer(
        {
            "bootstrap.servers": telemetry_broker.bootstrap,
            "client.id": "tele-producer",
            "enable.metrics.push": True,
        }
    )
    silent = Producer(
        {
            "bootstrap.servers": telemetry_broker.bootstrap,
            "client.id": "unmatched-producer",
            "enable.metrics.push": True,
        }
    )
    try:
        for i in range(50):
            pushing.produce(topic, str(i).encode())
            silent.produce(topic, str(i).encode())
        assert pushing.flush(30) == 0 and silent.flush(30) == 0

        def pushed() -> dict[str, float] | None:
            pushing.poll(0.2)
            silent.poll(0.2)
            series = client_series(port, "tele-producer")
            return series if any("record_queue_time" in k for k in series) else None

        series = wait_for(pushed, "the producer's metrics on the endpoint", timeout=60)
        assert all(k.startswith("org_apache_kafka_producer_") for k in series)
        instance = next(iter(series)).split('client_instance_id="')[1].split('"')[0]
        assert uuid.UUID(instance).int != 0
        # the unmatched client is subscribed to nothing, so it pushes nothing
        assert client_series(port, "unmatched-producer") == {}
    finally:
        pushing.flush(5)
        silent.flush(5)


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_push_with_each_compression_type(telemetry_broker: BrokerProcess, codec: str) -> None:
    subscribe(telemetry_broker.bootstrap, "raw", {"metrics": "*", "match": "client_id=raw-.*"})
    port = telemetry_broker.metrics_port  # type: ignore[attr-defined]
    client_id = f"raw-{codec}"
    sock = connect(telemetry_broker.bootstrap)
    try:
        got = call(
            sock,
            GetTelemetrySubscriptionsRequest(client_instance_id=uuid.UUID(int=0)),
            0,
            client_id=client_id,
        )
        assert got.error_code == 0 and got.requested_metrics == ["*"]
        assert set(got.accepted_compression_types) == {1, 2, 3, 4}
        data = otlp.encode_metrics_data(
            [ResourceMetrics((), (Metric("raw.gauge", otlp.GAUGE, (DataPoint((), 42.0),)),))]
        )
        code = compression.CompressionType.from_name(codec)
        pushed = call(
            sock,
            PushTelemetryRequest(
                client_instance_id=got.client_instance_id,
                subscription_id=got.subscription_id,
                terminating=False,
                compression_type=code,
                metrics=compression.compress(code, data),
            ),
            0,
            client_id=client_id,
        )
        assert pushed.error_code == ErrorCode.NONE
        series = client_series(port, client_id)
        assert [v for k, v in series.items() if k.startswith("raw_gauge{")] == [42.0]
        # garbage in a valid frame: INVALID_RECORD, and the broker goes on
        time.sleep(0.01)
        bad = call(
            sock,
            PushTelemetryRequest(
                client_instance_id=got.client_instance_id,
                subscription_id=got.subscription_id,
                terminating=True,
                compression_type=code,
                metrics=compression.compress(code, b"\x0a\x09garbage"),
            ),
            0,
            client_id=client_id,
        )
        assert bad.error_code == ErrorCode.INVALID_RECORD
    finally:
        sock.close()


def test_bad_subscriptions_are_refused(telemetry_broker: BrokerProcess) -> None:
    boot = telemetry_broker.bootstrap
    assert "InvalidRequestError" in alter(boot, "bad", {"interval.ms": "50"})
    assert "InvalidConfigurationError" in alter(boot, "bad", {"match": "nobody=x"})


def test_telemetry_apis_are_advertised_only_with_the_metrics_endpoint(
    telemetry_broker: BrokerProcess, broker: BrokerProcess
) -> None:
    """As Kafka advertises them only with a telemetry receiver: without metrics.port, pushed
    metrics would go nowhere, so clients are not asked to collect them."""
    from protocol.api_keys import ApiKey

    telemetry = {ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, ApiKey.PUSH_TELEMETRY}
    for proc, expected in ((telemetry_broker, telemetry), (broker, set())):
        with connect(proc.bootstrap) as sock:
            keys = {a.api_key for a in call(sock, api_versions(), 3).api_keys}
        assert keys & telemetry == expected


def test_kafka_client_metrics_tool_lists_and_describes_subscriptions(
    telemetry_broker: BrokerProcess,
) -> None:
    """Kafka 4.x's kafka-client-metrics: --alter writes a subscription, --list names every
    subscription (ListConfigResources v1, as ListClientMetricsResources before it), --describe
    without a name describes each one listed."""
    from tests.support.kafka_reference import kraft_version, run_tool

    tool = "org.apache.kafka.tools.ClientMetricsCommand"
    version = kraft_version()
    boot = ("--bootstrap-server", telemetry_broker.bootstrap)
    prefix = f"tool-{uuid.uuid4().hex[:6]}"
    names = [f"{prefix}-{i}" for i in range(2)]
    for name, interval in zip(names, ("2000", "5000"), strict=True):
        out = run_tool(
            version, tool, *boot, "--alter", "--name", name,
            "--metrics", "org.apache.kafka.producer.", "--interval", interval,
        ).stdout  # fmt: skip
        assert out.strip() == f"Altered client metrics config for {name}."
    listed = run_tool(version, tool, *boot, "--list").stdout.split()
    assert [n for n in listed if n in names] == names
    described = run_tool(version, tool, *boot, "--describe").stdout
    for name, interval in zip(names, ("2000", "5000"), strict=True):
        assert (
            f"Client metrics configs for {name} are:\n  interval.ms={interval}\n  match=\n"
            "  metrics=org.apache.kafka.producer.\n"
        ) in described
    for name in names:
        run_tool(version, tool, *boot, "--delete", "--name", name)
    assert not set(run_tool(version, tool, *boot, "--list").stdout.split()) & set(names)
