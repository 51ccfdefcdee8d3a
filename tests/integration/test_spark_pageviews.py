"""examples/pageviews end to end: produce.py writes page views, job.py counts views per page per
minute into parquet and into another topic, and both outputs hold exactly the expected counts."""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.integration.test_spark_support import (
    consume_all,
    create_topic,
    spark,  # noqa: F401 - fixture
    unique,
)

pytestmark = pytest.mark.spark

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pageviews"


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"pageviews_{name}", EXAMPLE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def minute(ts_ms: int) -> int:
    return ts_ms // 60_000 * 60_000


def test_pageviews_example(spark, broker, tmp_path):  # noqa: F811
    produce, job = load("produce"), load("job")
    views, counts_topic = unique("pageviews"), unique("pageview-counts")
    create_topic(broker.bootstrap, counts_topic, 3)
    start = minute(int(time.time() * 1000)) - 30 * 60_000
    common = ["--bootstrap", broker.bootstrap, "--topic", views, "--seed", "5", "--pages", "8"]
    # 1500 views over 5 minutes, then one view 10 minutes later that closes those windows
    assert (
        produce.main([*common, "--count", "1500", "--start-ms", str(start), "--step-ms", "200"])
        == 0
    )
    late = start + 15 * 60_000
    assert produce.main([*common, "--count", "1", "--start-ms", str(late), "--seed", "6"]) == 0

    expected = Counter(
        (minute(e["ts"]), e["page"])
        for e in produce.generate(1500, seed=5, pages=8, start_ms=start, step_ms=200)
    )
    assert len({m for m, _ in expected}) == 5

    args = job.parse_args(
        [
            "--bootstrap",
            broker.bootstrap,
            "--input-topic",
            views,
            "--output-topic",
            counts_topic,
            "--output-dir",
            str(tmp_path / "counts"),
            "--checkpoint-dir",
            str(tmp_path / "checkpoints"),
            "--trigger",
            "availableNow",
        ]
    )
    queries = job.start_queries(spark, args)
    for query in queries:
        assert query.awaitTermination(180)
        assert query.exception() is None

    rows = spark.read.parquet(str(tmp_path / "counts")).collect()
    got = {(int(r.window_start.timestamp() * 1000), r.page): r.views for r in rows}
    assert got == dict(expected)
    assert all(
        int((r.window_end.timestamp() - r.window_start.timestamp()) * 1000) == 60_000 for r in rows
    )

    records = consume_all(broker.bootstrap, counts_topic, 3, len(expected))
    from_topic = {}
    for m in records:
        value = json.loads(m.value())
        assert m.key().decode() == value["page"]
        started = datetime.strptime(value["window_start"], "%Y-%m-%dT%H:%M:%S.%fZ")
        from_topic[(int(started.replace(tzinfo=UTC).timestamp() * 1000), value["page"])] = value[
            "views"
        ]
    assert from_topic == dict(expected)
