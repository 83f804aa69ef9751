"""Logging set-up: lines go to whatever sys.stderr is when they are written, ours and libraries' alike."""

from __future__ import annotations

import io
import json
import logging
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


def test_a_library_line_is_one_json_object_like_ours(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stdlib logger's line (kopf's, aiohttp's) comes out as JSON: level, logger, timestamp, and the
    formatted message as the event."""
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    configure_logging("info", "json")
    logging.getLogger("kopf.objects").warning("x %s", 1)
    structlog.get_logger("py_volcano.runner").info("cycle_done", cycle=3)
    library, ours = (json.loads(line) for line in stderr.getvalue().splitlines())
    assert (library["event"], library["level"], library["logger"]) == ("x 1", "warning", "kopf.objects")
    assert (ours["event"], ours["level"], ours["logger"]) == ("cycle_done", "info", "py_volcano.runner")
    assert set(library) == {"event", "level", "logger", "timestamp"}
    assert set(ours) == {"event", "level", "logger", "timestamp", "cycle"}


def test_a_library_line_below_info_is_dropped_and_an_exception_is_rendered(monkeypatch: pytest.MonkeyPatch) -> None:
    """Library debug lines stay out even at our debug level; a logged exception becomes one JSON field."""
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    configure_logging("debug", "json")
    logging.getLogger("aiohttp.client").debug("noise")
    try:
        raise ValueError("boom")
    except ValueError:
        logging.getLogger("aiohttp.client").exception("request failed")
    (line,) = (json.loads(text) for text in stderr.getvalue().splitlines())
    assert (line["event"], line["level"]) == ("request failed", "error")
    assert "ValueError: boom" in line["exception"]
