"""The connector against a multi-broker cluster: three ``odradek serve`` processes coordinated by
a real ZooKeeper, partitions led by different brokers. Spark reads every partition (batch and
streaming) and writes to partitions on every broker, bootstrapping from one broker; then a
leader is SIGKILLed and restarted on another port, and the query resumes from its checkpoint
through fresh metadata."""

from __future__ import annotations

import pytest

from tests.integration.test_spark_support import (
    consume_all,
    produce,
    run_available_now,
    source,
    spark,  # noqa: F401 - fixture
    unique,
)
from tests.integration.test_zookeeper_brokers import (  # noqa: F401 - fixtures
    ProcessCluster,
    cluster,
    create_topic,
    wait_for,
    wait_leaders,
)

pytestmark = [pytest.mark.spark, pytest.mark.zookeeper]


def records(tag: str, partitions: int, per_partition: int) -> list[dict]:
    return [
        {"value": f"{tag}-{p}-{i}".encode(), "partition": p}
        for i in range(per_partition)
        for p in range(partitions)
    ]


def test_reads_and_writes_a_multi_broker_cluster(spark, cluster: ProcessCluster, tmp_path):  # noqa: F811
    b1, b2, b3 = cluster.start(1, 2, 3)
    topic = unique("cluster")
    create_topic(b1.bootstrap, topic, 6)
    layout = wait_leaders(b3.bootstrap, topic, 6)
    assert sorted(set(layout.values())) == [1, 2, 3]
    first = records("a", 6, 50)
    produce(b2.bootstrap, topic, first)

    # batch, bootstrapping from broker 3 only
    df = source(spark, b3.bootstrap, stream=False, subscribe=topic)
    rows = df.select("partition", "offset", "value").collect()
    assert sorted((r.partition, r.offset, bytes(r.value)) for r in rows) == sorted(
        (p, i, f"a-{p}-{i}".encode()) for p in range(6) for i in range(50)
    )

    # streaming into parquet, bootstrapping from broker 1
    stream = source(
        spark,
        f"{b1.bootstrap},{b2.bootstrap}",
        subscribe=topic,
        startingOffsets="earliest",
        maxOffsetsPerTrigger=100,
    )
    out, checkpoint = tmp_path / "out", tmp_path / "ck"
    run_available_now(stream, out, checkpoint)
    assert spark.read.parquet(str(out)).count() == 300

    # the sink writes to partitions led by every broker
    copy = unique("cluster-copy")
    create_topic(b2.bootstrap, copy, 6)
    wait_leaders(b1.bootstrap, copy, 6)
    df.selectExpr("partition", "value").write.format("odradek").option(
        "kafka.bootstrap.servers", b2.bootstrap
    ).option("topic", copy).mode("append").save()
    got = consume_all(b3.bootstrap, copy, 6, 300)
    assert sorted((m.partition(), m.value()) for m in got) == sorted(
        (p, f"a-{p}-{i}".encode()) for p in range(6) for i in range(50)
    )

    # SIGKILL the leader of some partitions, restart it (on a new port), add data, resume
    victim = layout[0]
    proc = cluster.brokers[victim]
    proc.kill()
    wait_for(lambda: victim not in cluster.registered(), f"broker {victim} gone")
    proc.start()
    wait_for(lambda: victim in cluster.registered(), f"broker {victim} back")
    wait_for(
        lambda: wait_leaders(b3.bootstrap if victim != 3 else b2.bootstrap, topic, 6) == layout,
        "the same leaders again",
    )
    alive = b3.bootstrap if victim != 3 else b2.bootstrap
    second = records("b", 6, 20)
    produce(alive, topic, second)
    run_available_now(stream, out, checkpoint)
    rows = spark.read.parquet(str(out)).select("partition", "offset").collect()
    assert sorted((r.partition, r.offset) for r in rows) == sorted(
        (p, i) for p in range(6) for i in range(70)
    )
