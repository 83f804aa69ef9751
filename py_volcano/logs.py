"""structlog set-up: JSON (or console) lines on stderr, filtered by level."""

from __future__ import annotations

import logging
import sys

import structlog

__all__ = ["LEVELS", "configure_logging"]

LEVELS = ("debug", "info", "warning", "error")


def _stderr_logger(*_: object) -> structlog.PrintLogger:
    # Resolve sys.stderr when a logger is made, not once: whoever replaced it later (a test runner's
    # capture, a daemon's redirect) gets the lines, and a closed earlier stream is never written to.
    return structlog.PrintLogger(file=sys.stderr)


def configure_logging(level: str = "info", fmt: str = "json") -> None:
    """Send structlog events at `level` and above to stderr, as JSON or console lines."""
    numeric = getattr(logging, level.upper())
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if fmt == "json" else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=_stderr_logger,
        cache_logger_on_first_use=False,
    )
    logging.basicConfig(level=max(numeric, logging.INFO), stream=sys.stderr, format="%(message)s")
