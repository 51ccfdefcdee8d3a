"""The pure parts of ``odradek reassign`` and ``odradek leader-election``: Kafka's plan and
election files, and the round robin ``generate`` proposes (the commands themselves run against
real brokers in tests/integration/test_cli_replication.py)."""

from __future__ import annotations

import json
import random
from collections import Counter

import click
import pytest

from cli.commands.leader_election import read_election_file
from cli.commands.reassign import assign_round_robin, plan_json, read_plan


@pytest.mark.parametrize("seed", range(20))
def test_round_robin_spreads_leaders_and_keeps_replicas_distinct(seed):
    brokers = [1, 2, 3, 4, 5]
    assignment = assign_round_robin(brokers, 10, 3, random.Random(seed))
    assert len(assignment) == 10
    assert all(len(set(r)) == 3 and set(r) <= set(brokers) for r in assignment)
    # leaders go round robin: every broker leads 10 / 5 partitions
    assert Counter(r[0] for r in assignment) == dict.fromkeys(brokers, 2)
    # and every broker holds 10 * 3 / 5 replicas
    assert Counter(b for r in assignment for b in r) == dict.fromkeys(brokers, 6)


def test_round_robin_with_as_many_replicas_as_brokers():
    assignment = assign_round_robin([7], 3, 1, random.Random(0))
    assert assignment == [[7], [7], [7]]
    assignment = assign_round_robin([1, 2], 4, 2, random.Random(0))
    assert all(sorted(r) == [1, 2] for r in assignment)


def test_read_plan_reads_kafkas_format_and_its_own_output(tmp_path):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan_json({("b", 1): [3, 1], ("a", 0): [1]})))
    assert read_plan(str(path)) == [(("a", 0), [1]), (("b", 1), [3, 1])]
    path.write_text('{"partitions": [{"topic": "a", "partition": 0, "replicas": [2]}]}')
    assert read_plan(str(path)) == [(("a", 0), [2])]  # version 1 when not given, as Kafka


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1]", "a reassignment plan is a JSON object"),
        ('{"version": 2}', "not supported version field value 2"),
        ('{"partitions": [{"topic": "a", "partition": 0}]}', '"replicas": [...]'),
        (
            '{"partitions": [{"topic": "a", "partition": 0, "replicas": [1], "log_dirs": []}]}',
            "is different from size of log dirs list",
        ),
        (
            '{"partitions": [{"topic": "a", "partition": 0, "replicas": [1], '
            '"log_dirs": ["/data"]}]}',
            "odradek log-dirs move",
        ),
        ("{", "is not JSON"),
    ],
)
def test_read_plan_refuses_what_is_not_a_plan(tmp_path, text, message):
    path = tmp_path / "plan.json"
    path.write_text(text)
    with pytest.raises(click.UsageError, match=message.replace("[", r"\[").replace(".", r"\.")):
        read_plan(str(path))


def test_read_election_file(tmp_path):
    path = tmp_path / "election.json"
    path.write_text(
        '{"partitions": [{"topic": "a", "partition": 1}, {"topic": "b", "partition": 0}]}'
    )
    assert read_election_file(str(path)) == [("a", 1), ("b", 0)]
    path.write_text(
        '{"partitions": [{"topic": "a", "partition": 1}, {"topic": "a", "partition": 1}]}'
    )
    with pytest.raises(click.UsageError, match="duplicate partitions: a-1"):
        read_election_file(str(path))
    path.write_text("{}")
    with pytest.raises(click.UsageError, match='missing "partitions"'):
        read_election_file(str(path))
