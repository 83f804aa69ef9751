"""Logging set-up: lines go to whatever sys.stderr is when they are written."""

from __future__ import annotations

import io
import json
import sys

import pytest
import structlog

from py_volcano.logs import configure_logging


def test_lines_follow_a_replaced_stderr_and_never_hit_a_closed_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """Configure with one stderr, close it, replace it: the next line lands on the new one."""
    first = io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    configure_logging("info", "json")
    first.close()
    second = io.StringIO()
    monkeypatch.setattr(sys, "stderr", second)
    structlog.get_logger("t").info("hello", field=1)
    line = json.loads(second.getvalue())
    assert (line["event"], line["field"], line["level"]) == ("hello", 1, "info")
