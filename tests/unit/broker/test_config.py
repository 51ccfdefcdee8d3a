import dataclasses
import logging
from pathlib import Path

import pytest

from broker.config import (
    APPLIED_AT_RESTART,
    BROKER_CONFIGS,
    DYNAMIC_BROKER_CONFIGS,
    BrokerConfig,
    ConfigError,
    HandlerConfig,
    ReplicationConfig,
    TopicAdminConfig,
    read_properties,
    validate_topic_configs,
)
from scripts.gen_config_docs import OUT, render


def test_defaults_are_a_standalone_broker_on_loopback():
    config = BrokerConfig.load()
    assert [str(lst) for lst in config.listeners] == ["PLAINTEXT://127.0.0.1:9092"]
    assert [str(a) for a in config.advertised_listeners] == ["PLAINTEXT://127.0.0.1:9092"]
    assert config.log_dirs == [Path("./data")]
    assert config.broker_id == 0 and config["zookeeper.connect"] is None


def test_properties_file_and_overrides(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text(
        "# comment\n! also\nbroker.id = 3\nlog.dirs=/a,/b\nlisteners: PLAINTEXT://0.0.0.0:19099\n"
        "advertised.listeners=PLAINTEXT://example.org:19099\n"
        "log.retention.hours=1\nnum.network.threads 2\nlong.key=a\\\n  b\n"
    )
    config = BrokerConfig.load(path, ["log.retention.ms=5000"])
    assert config.broker_id == 3
    assert config.log_dirs == [Path("/a"), Path("/b")]
    assert config["num.network.threads"] == 2
    assert config.log_retention_ms == 5000
    assert config.unknown == {"long.key": "ab"}
    assert str(config.advertised_listeners[0]) == "PLAINTEXT://example.org:19099"


def test_unknown_keys_are_reported(caplog):
    with caplog.at_level(logging.WARNING):
        config = BrokerConfig.from_dict({"no.such.key": "1"})
    assert "no.such.key" in config.unknown
    assert "unknown configuration key no.such.key" in caplog.text


@pytest.mark.parametrize(
    "raw",
    [
        {"num.network.threads": "x"},
        {"num.network.threads": "0"},
        {"listeners": "nonsense"},
        {"advertised.listeners": "PLAINTEXT://0.0.0.0:1"},
        {"auto.create.topics.enable": "maybe"},
    ],
)
def test_bad_values_are_errors(raw):
    with pytest.raises(ConfigError):
        BrokerConfig.from_dict(raw)


def test_topic_defaults_follow_broker_keys():
    config = BrokerConfig.from_dict({"log.retention.hours": "2", "log.segment.bytes": "1000"})
    effective = config.topic_config({"segment.bytes": 50})
    assert effective["retention.ms"] == 7_200_000
    assert effective["segment.bytes"] == 50
    assert effective["cleanup.policy"] == ["delete"]


def test_roll_jitter_and_the_dedupe_buffer_are_in_effect():
    """``log.roll.jitter.*`` gives segment.jitter.ms its default and
    ``log.cleaner.dedupe.buffer.size`` bounds the cleaner's key map: neither is reported as
    accepted without effect."""
    config = BrokerConfig.from_dict(
        {"log.roll.jitter.hours": "1", "log.cleaner.dedupe.buffer.size": "1048576"}
    )
    assert config.inert == []
    assert config.topic_config({})["segment.jitter.ms"] == 3_600_000
    assert config.topic_config({"segment.jitter.ms": 5})["segment.jitter.ms"] == 5


@pytest.mark.parametrize(
    "configs",
    [
        {"nope": "1"},
        {"retention.ms": "x"},
        {"cleanup.policy": "shred"},
        {"compression.type": "brotli"},
        {"segment.bytes": "5"},
        {"retention.ms": None},
        # Kafka's LogConfig ranges (the differential corpus's edge/topic-config-validation)
        {"retention.ms": "-2"},
        {"segment.ms": "0"},
        {"segment.index.bytes": "3"},
        {"min.insync.replicas": "0"},
        {"min.cleanable.dirty.ratio": "1.5"},
        {"flush.messages": "0"},
        {"max.compaction.lag.ms": "0"},
        {"compression.gzip.level": "0"},
        {"compression.gzip.level": "10"},
        {"compression.lz4.level": "18"},
        {"compression.zstd.level": "23"},
        {"local.retention.ms": "-3"},
        {"follower.replication.throttled.replicas": "0:x"},
        {"leader.replication.throttled.replicas": "*,0:1"},
    ],
)
def test_topic_config_validation(configs):
    with pytest.raises(ConfigError):
        validate_topic_configs(configs)


@pytest.mark.parametrize(
    "configs",
    [
        {"retention.ms": "-1", "retention.bytes": "-5", "local.retention.ms": "-2"},
        {"compression.gzip.level": "-1"},
        {"compression.gzip.level": "9", "compression.lz4.level": "17"},
        {"compression.zstd.level": "-131072"},
        {"min.cleanable.dirty.ratio": "0", "segment.ms": "1", "segment.index.bytes": "4"},
        {"leader.replication.throttled.replicas": "*"},
        {"follower.replication.throttled.replicas": "0:1,1:2"},
        {"leader.replication.throttled.replicas": ""},
    ],
)
def test_topic_configs_at_the_ends_of_their_ranges(configs):
    validate_topic_configs(configs)


def test_read_properties_separators():
    assert read_properties("a=1\nb:2\nc 3\nd\n") == {"a": "1", "b": "2", "c": "3", "d": ""}


def test_configuration_reference_is_up_to_date():
    assert OUT.read_text() == render(), "run: python scripts/gen_config_docs.py"


def test_security_protocol_map() -> None:
    config = BrokerConfig.from_dict(
        {"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT, client:ssl"}
    )
    assert config.security_protocol_map == {"PLAINTEXT": "PLAINTEXT", "CLIENT": "SSL"}
    assert config.security_protocol("client") == "SSL"
    with pytest.raises(ConfigError):
        BrokerConfig.from_dict({"listener.security.protocol.map": "oops"})
    with pytest.raises(ConfigError):
        config.security_protocol("OTHER")


def test_the_handlers_section_reads_its_keys_once() -> None:
    """Each field of HandlerConfig is a broker key (dots as underscores) that cannot change at
    runtime: were one made dynamic, a section built at start-up would keep its old value."""
    keys = [f.name.replace("_", ".") for f in dataclasses.fields(HandlerConfig)]
    assert all(k in BROKER_CONFIGS for k in keys)
    assert not set(keys) & DYNAMIC_BROKER_CONFIGS
    config = BrokerConfig.from_dict(
        {
            "num.partitions": "3",
            "auto.create.topics.enable": "false",
            "fetch.max.bytes": "1000",
            "max.request.partition.size.limit": "7",
            "metrics.port": "9404",
        }
    )
    assert HandlerConfig.from_broker(config) == HandlerConfig(
        num_partitions=3,
        auto_create_topics_enable=False,
        fetch_max_bytes=1000,
        max_request_partition_size_limit=7,
        metrics_port=9404,
    )


def test_the_replication_section_reads_its_keys_once() -> None:
    """Each field of ReplicationConfig is a broker key (dots as underscores) that is either
    read-only or dynamic but applied at the next start: were one made dynamic at once, a
    section built at start-up would keep its old value."""
    keys = [f.name.replace("_", ".") for f in dataclasses.fields(ReplicationConfig)]
    assert all(k in BROKER_CONFIGS for k in keys)
    assert set(keys) & DYNAMIC_BROKER_CONFIGS <= APPLIED_AT_RESTART
    assert ReplicationConfig.from_broker(BrokerConfig.from_dict({})) == ReplicationConfig(
        replica_lag_time_max_ms=30000,
        num_replica_fetchers=1,
        replica_fetch_max_bytes=1048576,
        replica_fetch_response_max_bytes=10485760,
        replica_fetch_wait_max_ms=500,
        replica_fetch_min_bytes=1,
        replica_fetch_backoff_ms=1000,
        replica_socket_timeout_ms=30000,
        replica_fetch_session_enable=True,
        producer_id_expiration_ms=86400000,
        inter_broker_listener_name=None,
    )
    config = BrokerConfig.from_dict(
        {
            "listeners": "PLAINTEXT://127.0.0.1:9092,REPLICATION://127.0.0.1:9093",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,REPLICATION:PLAINTEXT",
            "inter.broker.listener.name": "REPLICATION",
            "replica.lag.time.max.ms": "5000",
            "num.replica.fetchers": "2",
            "replica.fetch.max.bytes": "1000",
            "replica.fetch.response.max.bytes": "2000",
            "replica.fetch.wait.max.ms": "100",
            "replica.fetch.min.bytes": "10",
            "replica.fetch.backoff.ms": "200",
            "replica.socket.timeout.ms": "3000",
            "replica.fetch.session.enable": "false",
            "producer.id.expiration.ms": "60000",
        }
    )
    assert ReplicationConfig.from_broker(config) == ReplicationConfig(
        replica_lag_time_max_ms=5000,
        num_replica_fetchers=2,
        replica_fetch_max_bytes=1000,
        replica_fetch_response_max_bytes=2000,
        replica_fetch_wait_max_ms=100,
        replica_fetch_min_bytes=10,
        replica_fetch_backoff_ms=200,
        replica_socket_timeout_ms=3000,
        replica_fetch_session_enable=False,
        producer_id_expiration_ms=60000,
        inter_broker_listener_name="REPLICATION",
    )
    # the composition root builds it after the stored dynamic configs applied: a value stored
    # for a key applied at restart is the one the section holds
    config.apply_dynamic({"num.replica.fetchers": "3"}, {"producer.id.expiration.ms": "7"})
    section = ReplicationConfig.from_broker(config)
    assert (section.num_replica_fetchers, section.producer_id_expiration_ms) == (3, 7)


def test_the_topic_admin_section_reads_its_keys_once() -> None:
    """Each field of TopicAdminConfig is a broker key (dots as underscores) that cannot change
    at runtime."""
    keys = [f.name.replace("_", ".") for f in dataclasses.fields(TopicAdminConfig)]
    assert all(k in BROKER_CONFIGS for k in keys)
    assert not set(keys) & DYNAMIC_BROKER_CONFIGS
    assert TopicAdminConfig.from_broker(BrokerConfig.from_dict({})) == TopicAdminConfig(
        max_partitions_per_request=10000,
        max_broker_partitions=100000,
        num_partitions=1,
        default_replication_factor=1,
        delete_topic_enable=True,
    )
    config = BrokerConfig.from_dict(
        {
            "max.partitions.per.request": "50",
            "max.broker.partitions": "500",
            "num.partitions": "3",
            "default.replication.factor": "2",
            "delete.topic.enable": "false",
        }
    )
    section = TopicAdminConfig.from_broker(config)
    assert section == TopicAdminConfig(
        max_partitions_per_request=50,
        max_broker_partitions=500,
        num_partitions=3,
        default_replication_factor=2,
        delete_topic_enable=False,
    )
    assert type(section.delete_topic_enable) is bool and type(section.num_partitions) is int


def test_connection_limit_overrides_by_address_and_host_name():
    from broker.config import NetworkConfig

    def overrides(text: str) -> dict[str, int]:
        config = BrokerConfig.load(None, [f"max.connections.per.ip.overrides={text}"])
        return NetworkConfig.from_broker(config).max_connections_per_ip_overrides

    assert overrides("") == {}
    assert overrides("10.0.0.7:3, [::1]:5,0:0:0:0:0:0:0:2:6") == {
        "10.0.0.7": 3,
        "::1": 5,
        "::2": 6,
    }
    # a host name counts for the addresses it resolves to; an address given as such wins
    assert overrides("localhost:4")["127.0.0.1"] == 4
    assert overrides("127.0.0.1:9,localhost:4")["127.0.0.1"] == 9
    for bad in ("nohost", "host:many", ":5"):
        with pytest.raises(ConfigError, match=r"invalid max\.connections\.per\.ip\.overrides"):
            overrides(bad)
    with pytest.raises(ConfigError, match=r"'no-such-host\.invalid' does not resolve"):
        overrides("no-such-host.invalid:5")


def test_listener_connection_limits_are_dynamic() -> None:
    """``listener.name.<listener>.max.connections`` and ``.max.connection.creation.rate`` may be
    changed at runtime, for one broker or cluster-wide (Kafka's ClusterLevelListenerConfigs),
    over server.properties' value; DescribeConfigs shows the level in force and the others as
    synonyms. Other listener-prefixed keys stay static."""
    from broker.config import NetworkConfig, validate_dynamic_broker_configs
    from broker.config_describe import ConfigSource, describe_broker

    limit, rate = (
        "listener.name.external.max.connections",
        "listener.name.client.max.connection.creation.rate",
    )
    assert validate_dynamic_broker_configs({limit: "5"}, per_broker=False) == {limit: 5}
    assert validate_dynamic_broker_configs({rate: "20"}, per_broker=True) == {rate: 20}
    for bad in ("0", "-1", "many"):
        with pytest.raises(ConfigError):
            validate_dynamic_broker_configs({limit: bad}, per_broker=True)
    with pytest.raises(ConfigError, match="Unknown broker configs"):
        validate_dynamic_broker_configs({"listener.name.x.no.such.key": "1"}, per_broker=True)
    with pytest.raises(ConfigError):
        validate_dynamic_broker_configs(
            {"listener.name.x.ssl.keystore.type": "PEM"}, per_broker=True
        )
    config = BrokerConfig.from_dict({limit: "9"})
    assert NetworkConfig.from_broker(config).listener_max_connections == {"EXTERNAL": 9}
    assert config.apply_dynamic({limit: "7", rate: "30"}, {limit: "5"}) == {limit, rate}
    network = NetworkConfig.from_broker(config)
    assert network.listener_max_connections == {"EXTERNAL": 5}
    assert network.listener_creation_rates == {"CLIENT": 30}
    entries = {e.name: e for e in describe_broker(config)}
    assert (entries[limit].value, entries[limit].source, entries[limit].read_only) == (
        "5",
        ConfigSource.DYNAMIC_BROKER_CONFIG,
        False,
    )
    assert entries[limit].synonyms == [
        (limit, "5", ConfigSource.DYNAMIC_BROKER_CONFIG),
        (limit, "7", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        (limit, "9", ConfigSource.STATIC_BROKER_CONFIG),
    ]
    assert entries[rate].source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    # deleted dynamically: server.properties' value again, the rate gone
    assert config.apply_dynamic({}, {}) == {limit, rate}
    assert NetworkConfig.from_broker(config).listener_max_connections == {"EXTERNAL": 9}
    assert NetworkConfig.from_broker(config).listener_creation_rates == {}
    assert config.apply_dynamic({}, {}) == set()


def test_replication_throttles_are_dynamic_only_and_listed_where_set() -> None:
    """Kafka's broker-level replication throttles (kafka-reassign-partitions --throttle sets
    them, --verify deletes them): dynamic only, longs of at least 0, listed by DescribeConfigs
    only where set, read-only, the broker's value before the cluster default's."""
    from broker.config import REPLICATION_THROTTLE_CONFIGS, validate_dynamic_broker_configs
    from broker.config_describe import (
        ConfigSource,
        ConfigType,
        describe_broker,
        describe_broker_default,
    )

    leader, follower, alter_dirs = REPLICATION_THROTTLE_CONFIGS
    assert validate_dynamic_broker_configs({leader: "1000"}, per_broker=True) == {leader: 1000}
    assert validate_dynamic_broker_configs({alter_dirs: "0"}, per_broker=False) == {alter_dirs: 0}
    for bad in ("-5", "fast"):
        with pytest.raises(ConfigError):
            validate_dynamic_broker_configs({follower: bad}, per_broker=True)
    config = BrokerConfig.from_dict({})
    assert not [e for e in describe_broker(config) if e.name in REPLICATION_THROTTLE_CONFIGS]
    # kept beside the broker's dynamic configs; they change no broker setting
    assert config.apply_dynamic({leader: "7", alter_dirs: "9"}, {leader: "5"}) == set()
    entries = {e.name: e for e in describe_broker(config)}
    assert (entries[leader].value, entries[leader].source) == (
        "5",
        ConfigSource.DYNAMIC_BROKER_CONFIG,
    )
    assert entries[leader].synonyms == [
        (leader, "5", ConfigSource.DYNAMIC_BROKER_CONFIG),
        (leader, "7", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
    ]
    assert entries[leader].read_only and entries[leader].type == ConfigType.LONG
    assert entries[alter_dirs].source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    assert follower not in entries
    assert [e.name for e in describe_broker(config, [follower, alter_dirs])] == [alter_dirs]
    assert {e.name: e.value for e in describe_broker_default(config)} == {
        leader: "7",
        alter_dirs: "9",
    }


@pytest.mark.parametrize(
    ("configs", "ok"),
    [
        ({"log.roll.ms": "0"}, False),
        ({"log.index.size.max.bytes": "3"}, False),
        ({"log.cleaner.min.cleanable.ratio": "1.5"}, False),
        ({"min.insync.replicas": "0"}, False),
        ({"compression.zstd.level": "23"}, False),
        ({"log.retention.ms": "-2"}, True),  # Kafka takes any negative retention as unlimited
        ({"num.io.threads": "16"}, True),
        ({"num.io.threads": "17"}, False),
        ({"num.io.threads": "4"}, True),
        ({"num.io.threads": "3"}, False),
        ({"num.io.threads": "0"}, False),
        ({"log.cleaner.threads": "2"}, True),
        ({"log.cleaner.threads": "3"}, False),
        ({"log.cleaner.threads": "0"}, False),
        ({"max.connections.per.ip.overrides": "nonsense"}, False),
        ({"max.connections.per.ip.overrides": "127.0.0.1:5"}, True),
    ],
)
def test_dynamic_broker_configs_in_kafkas_ranges(configs: dict[str, str], ok: bool) -> None:
    """Kafka's ranges for dynamic broker configs (the differential corpus's
    edge/dynamic-broker-config-validation): a topic default's is its topic config's, and a
    thread pool grows to at most double and shrinks to at least half its current size."""
    from broker.config import validate_dynamic_broker_configs

    current = BrokerConfig.from_dict({}).values
    assert current["num.io.threads"] == 8 and current["log.cleaner.threads"] == 1
    if ok:
        validate_dynamic_broker_configs(configs, per_broker=True, current=current)
    else:
        with pytest.raises(ConfigError):
            validate_dynamic_broker_configs(configs, per_broker=True, current=current)


def test_a_cluster_default_is_checked_against_what_this_broker_keeps_of_its_own():
    """A change to the cluster-wide default is validated against the broker's values but for
    the keys the broker sets for itself, which stay in force over the default."""
    from broker.dynamic_config import values_in_force
    from coordination.metadata.view import DEFAULT_BROKER_ENTITY, ClusterView

    config = BrokerConfig.from_dict({"num.network.threads": "4", "log.cleaner.threads": "1"})
    view = ClusterView(
        cluster_id="c",
        controller_id=0,
        brokers={},
        topics={},
        broker_configs={"0": {"num.network.threads": "4"}},
    )
    by_default = values_in_force(config, view, 0, DEFAULT_BROKER_ENTITY)
    assert "num.network.threads" not in by_default
    assert by_default["log.cleaner.threads"] == 1
    assert values_in_force(config, view, 0, "0")["num.network.threads"] == 4
