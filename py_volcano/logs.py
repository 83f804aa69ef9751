"""Logging set-up: every line on stderr in one format, JSON or console, ours and every library's.

structlog events are filtered by level and rendered directly. Lines of libraries that use the stdlib
`logging` (kopf, aiohttp) reach the root logger, whose one handler renders them through structlog's
`ProcessorFormatter` with the same processors: level, logger name, timestamp, the message as `event`.
"""

from __future__ import annotations

import logging
import sys

import structlog

__all__ = ["LEVELS", "configure_logging"]

LEVELS = ("debug", "info", "warning", "error")


class _StderrLogger(structlog.PrintLogger):
    """structlog's print logger on the current sys.stderr, named like the module that asked for it."""

    def __init__(self, name: str = "") -> None:
        super().__init__(file=sys.stderr)
        self.name = name


def _stderr_logger(name: str = "", *_: object) -> _StderrLogger:
    # Resolve sys.stderr when a logger is made, not once: whoever replaced it later (a test runner's
    # capture, a daemon's redirect) gets the lines, and a closed earlier stream is never written to.
    return _StderrLogger(name)


class _StderrHandler(logging.Handler):
    """Write each stdlib record to sys.stderr as it is when the record comes (as `_stderr_logger`)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
        except Exception:  # logging's own contract: a failing handler reports and never raises
            self.handleError(record)


def configure_logging(level: str = "info", fmt: str = "json") -> None:
    """Send structlog events at `level` and above, and library lines at `level` or info and above, to
    stderr as JSON or console lines."""
    numeric = getattr(logging, level.upper())
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if fmt == "json" else structlog.dev.ConsoleRenderer(colors=False)
    )
    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    structlog.configure(
        processors=[*shared, structlog.processors.format_exc_info, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=_stderr_logger,
        cache_logger_on_first_use=False,
    )
    handler = _StderrHandler()
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                renderer,
            ],
        )
    )
    root = logging.getLogger()
    for previous in [h for h in root.handlers if isinstance(h, _StderrHandler)]:
        root.removeHandler(previous)
    root.addHandler(handler)
    # Libraries stay at info even when ours go down to debug: aiohttp's and kopf's debug lines are noise.
    root.setLevel(max(numeric, logging.INFO))
