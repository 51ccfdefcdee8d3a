"""Page-view events into a topic: website activity tracking, Kafka's first use case (its
documentation, "Use Cases").

Each event is a JSON object keyed by its user, so one user's views stay in order in one
partition::

    {"page": "/articles/3", "user": "user-17", "ts": 1700000000123,
     "referrer": "search", "agent": "mobile"}

``ts`` (milliseconds) is also the record's timestamp. Pages are drawn with Zipf-like weights, so a
few pages get most of the views, as on a real site. It uses the connector's own client and
idempotent producer (no pyspark, no other Kafka client)::

    python examples/pageviews/produce.py --bootstrap localhost:9092 --count 10000 --rate 500

``--count 0`` produces forever. The bootstrap servers also come from ``$ODRADEK_BOOTSTRAP`` or
``$KAFKA_BOOTSTRAP_SERVERS``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script from a checkout: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from spark_connector.client import BrokerUnavailable, ClientConfig, KafkaClient
from spark_connector.options import parse_sink_options
from spark_connector.producer import Producer

REFERRERS = ["search", "direct", "social", "newsletter", "partner"]
AGENTS = ["desktop", "mobile", "tablet", "bot"]


def default_bootstrap() -> str:
    return os.environ.get("ODRADEK_BOOTSTRAP") or os.environ.get(
        "KAFKA_BOOTSTRAP_SERVERS", "localhost:9092"
    )


def page_names(count: int) -> list[str]:
    kinds = ["articles", "products", "profiles", "search", "jobs"]
    return ["/"] + [f"/{kinds[i % len(kinds)]}/{i}" for i in range(1, count)]


def generate(
    count: int,
    *,
    seed: int = 1,
    pages: int = 50,
    users: int = 1000,
    start_ms: int | None = None,
    step_ms: int = 100,
) -> Iterator[dict[str, Any]]:
    """``count`` events (forever if 0), ``step_ms`` apart (with a little jitter) from
    ``start_ms`` (now by default). Deterministic for a seed."""
    rng = random.Random(seed)
    names = page_names(pages)
    weights = [1 / (rank + 1) for rank in range(len(names))]
    ts = int(time.time() * 1000) if start_ms is None else start_ms
    n = 0
    while count == 0 or n < count:
        yield {
            "page": rng.choices(names, weights)[0],
            "user": f"user-{rng.randrange(users)}",
            "ts": ts + rng.randrange(step_ms // 2 + 1),
            "referrer": rng.choice(REFERRERS),
            "agent": rng.choice(AGENTS),
        }
        ts += step_ms
        n += 1


def wait_for_broker(client: KafkaClient, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            client.refresh_metadata([])
            return
        except BrokerUnavailable:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", default=default_bootstrap())
    parser.add_argument("--topic", default="pageviews")
    parser.add_argument("--partitions", type=int, default=3, help="if the topic is created")
    parser.add_argument("--count", type=int, default=10_000, help="0 = forever")
    parser.add_argument("--rate", type=float, default=0, help="events per second, 0 = no limit")
    parser.add_argument("--pages", type=int, default=50)
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--start-ms", type=int, default=None, help="first event time (now)")
    parser.add_argument("--step-ms", type=int, default=None, help="event time between events")
    parser.add_argument("--wait", type=float, default=60, help="seconds to wait for the broker")
    args = parser.parse_args(argv)

    step_ms = (
        args.step_ms if args.step_ms is not None else (int(1000 / args.rate) if args.rate else 10)
    )
    client = KafkaClient(ClientConfig.from_bootstrap(args.bootstrap, client_id="pageviews"))
    wait_for_broker(client, args.wait)
    if client.create_topic(args.topic, args.partitions, configs={"retention.ms": "-1"}):
        print(f"created topic {args.topic} with {args.partitions} partitions", flush=True)
    options = parse_sink_options({"kafka.bootstrap.servers": args.bootstrap, "topic": args.topic})
    producer = Producer(options, client)
    started = time.monotonic()
    sent = 0
    try:
        for event in generate(
            args.count,
            seed=args.seed,
            pages=args.pages,
            users=args.users,
            start_ms=args.start_ms,
            step_ms=step_ms,
        ):
            value = json.dumps(event, separators=(",", ":")).encode()
            producer.append(args.topic, None, event["user"].encode(), value, (), event["ts"])
            sent += 1
            if args.rate:
                ahead = sent / args.rate - (time.monotonic() - started)
                if ahead > 0.05:
                    producer.flush()
                    time.sleep(ahead)
            elif sent % 50_000 == 0:
                producer.flush()
    except KeyboardInterrupt:
        pass
    finally:
        producer.flush()
        client.close()
    elapsed = time.monotonic() - started
    print(f"produced {sent} page views to {args.topic} in {elapsed:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
