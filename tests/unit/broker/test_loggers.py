"""Log line formats: Kafka's log4j layout and one JSON object per line."""

from __future__ import annotations

import io
import json
import logging
import re

from broker.loggers import configure


def test_kafka_layout_and_json_lines_with_exceptions() -> None:
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    try:
        out = io.StringIO()
        configure("kafka", "INFO", out)
        logging.getLogger("broker.x").warning("hello %s", "there")
        try:
            raise ValueError("boom")
        except ValueError:
            logging.getLogger("broker.y").exception("failed")
        lines = out.getvalue().splitlines()
        assert re.fullmatch(
            r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] WARN hello there \(broker\.x\)", lines[0]
        )
        assert lines[1].endswith("] ERROR failed (broker.y)")
        assert lines[2] == "Traceback (most recent call last):"
        assert lines[-1] == "ValueError: boom"

        out = io.StringIO()
        configure("json", "INFO", out)
        logging.getLogger("broker.x").info('quoted "%s"', "value")
        logging.getLogger("broker.x").debug("not shown")
        try:
            raise ValueError("boom")
        except ValueError:
            logging.getLogger("broker.y").exception("failed")
        entries = [json.loads(line) for line in out.getvalue().splitlines()]
        assert len(entries) == 2
        assert entries[0]["message"] == 'quoted "value"'
        assert entries[0]["level"] == "INFO" and entries[0]["logger"] == "broker.x"
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", entries[0]["time"])
        assert "exception" not in entries[0]
        assert entries[1]["exception"].endswith("ValueError: boom")
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
