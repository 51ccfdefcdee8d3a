"""The client's pieces that need no broker: retry backoff from the kafka.retry.backoff options."""

from __future__ import annotations

from spark_connector.client import Backoff, ClientConfig, KafkaClient
from spark_connector.offsets import OffsetRange
from spark_connector.options import parse_sink_options, parse_source_options
from spark_connector.reader import ReadSettings, _RangeReader

# Port 1: nothing listens there, and nothing here connects (connections are opened lazily).
BOOTSTRAP = "127.0.0.1:1"


def delays(backoff: Backoff, n: int = 6) -> list[float]:
    return [backoff.next_delay_s() for _ in range(n)]


def test_backoff_doubles_up_to_retry_backoff_max_ms():
    options = {
        "kafka.bootstrap.servers": BOOTSTRAP,
        "subscribe": "t",
        "kafka.retry.backoff.ms": "100",
        "kafka.retry.backoff.max.ms": "2500",
    }
    source = parse_source_options(options, streaming=False)
    sink = parse_sink_options({**options, "topic": "t"})
    for config in (source.client, sink.client):
        assert delays(KafkaClient(config).backoff()) == [0.1, 0.2, 0.4, 0.8, 1.6, 2.5]
    # The reader's stalls used to stop at a hard-coded 1 s whatever the option said.
    reader = _RangeReader(
        ReadSettings(source.client, source.fetch, False, True),
        OffsetRange("t", 0, 0, 10),
        KafkaClient(source.client),
    )
    assert delays(reader.backoff) == [0.1, 0.2, 0.4, 0.8, 1.6, 2.5]


def test_backoff_reset_and_a_base_above_the_max():
    backoff = Backoff(ClientConfig.from_bootstrap(BOOTSTRAP, retry_backoff_ms=50))
    assert delays(backoff, 3) == [0.05, 0.1, 0.2]
    backoff.reset()
    assert delays(backoff, 2) == [0.05, 0.1]
    # As in Kafka's clients: retry.backoff.ms above retry.backoff.max.ms waits the max throughout.
    config = ClientConfig.from_bootstrap(BOOTSTRAP, retry_backoff_ms=5000, retry_backoff_max_ms=300)
    assert delays(Backoff(config), 3) == [0.3, 0.3, 0.3]
