"""The controller's gauges (Kafka's ``kafka.controller:type=KafkaController`` MBeans), named as
the Prometheus JMX exporter's Kafka rules name them (``...,name=OfflinePartitionsCount`` ->
``kafka_controller_kafkacontroller_offlinepartitionscount``).

As in Kafka, only the active controller reports partition counts; every other broker reports 0
(and ActiveControllerCount 0), so a sum over the cluster gives the cluster's figure. A standalone
broker is its own controller. Computed from the immutable cluster view at each scrape.
"""

from __future__ import annotations

from broker.metrics import MetricSamples
from coordination.metadata.store import MetadataStore


def controller_metrics(metadata: MetadataStore) -> list[MetricSamples]:
    active = metadata.is_controller
    offline = imbalance = partitions = topics = 0
    if active:
        view = metadata.view
        live = view.brokers
        topics = len(view.topics)
        for topic in view.topics.values():
            for p in topic.partitions:
                partitions += 1
                if p.leader not in live:
                    offline += 1
                if p.replicas and p.leader != p.replicas[0]:
                    imbalance += 1
    return [
        (
            "kafka_controller_kafkacontroller_activecontrollercount",
            "gauge",
            "1 on the broker that is the active controller, 0 elsewhere.",
            [("", float(active))],
        ),
        (
            "kafka_controller_kafkacontroller_offlinepartitionscount",
            "gauge",
            "Partitions without a live leader (active controller only).",
            [("", float(offline))],
        ),
        (
            "kafka_controller_kafkacontroller_preferredreplicaimbalancecount",
            "gauge",
            "Partitions not led by their preferred (first) replica (active controller only).",
            [("", float(imbalance))],
        ),
        (
            "kafka_controller_kafkacontroller_globaltopiccount",
            "gauge",
            "Topics in the cluster (active controller only).",
            [("", float(topics))],
        ),
        (
            "kafka_controller_kafkacontroller_globalpartitioncount",
            "gauge",
            "Partitions in the cluster (active controller only).",
            [("", float(partitions))],
        ),
    ]
