"""Fixtures every test directory may use: Apache Kafka itself as the reference (issue 15)."""

from tests.support.reference_fixtures import (
    java_scenarios,
    kafka_kraft,
    kafka_reference,
    odradek_zk,
    reference_zookeeper,
)

__all__ = ["java_scenarios", "kafka_kraft", "kafka_reference", "odradek_zk", "reference_zookeeper"]
