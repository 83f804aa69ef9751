"""The extender's HTTP client: one keep-alive connection per session, a timeout per call, and a session
that stops calling after the first failure.

The cycle is synchronous code, so each call blocks it for at most `extender.httpTimeout` (per socket
operation: connecting, sending, each read). Volcano makes every call whatever happened before; here,
once a call fails (unreachable, timed out, an answer that is not 200 or not JSON, or over 10 MiB), the
session's later calls are not sent and are answered as failed, so an extender that is down costs one
timeout per cycle, not one per task and node.
"""

from __future__ import annotations

import http.client
import json
from typing import Any
from urllib.parse import urlsplit

import structlog

__all__ = ["MAX_ANSWER_BYTES", "ExtenderClient"]

log = structlog.get_logger(__name__)

#: The largest answer read, as Volcano's maxBodySize.
MAX_ANSWER_BYTES = 10 << 20


class ExtenderClient:
    """POSTs JSON to `<urlPrefix>/<verb>`; `call` answers the decoded JSON object, or None when the call failed."""

    __slots__ = (
        "_base",
        "_connection",
        "_host",
        "_https",
        "_keep_alive",
        "_port",
        "calls",
        "failure",
        "skipped",
        "timeout",
    )

    def __init__(self, url_prefix: str, *, timeout: float) -> None:
        parts = urlsplit(url_prefix)
        self._https = parts.scheme == "https"
        self._host = parts.hostname or ""
        self._port = parts.port
        self._base = parts.path.rstrip("/")
        self._connection: http.client.HTTPConnection | None = None
        self._keep_alive = True
        self.timeout = timeout
        self.calls = 0
        self.skipped = 0
        self.failure = "" if self._host else f"extender.urlPrefix {url_prefix!r} names no host"

    def call(self, verb: str, body: object, *, answer: bool = True) -> dict[str, Any] | None:
        """POST `body` to the verb; return the answer's JSON object ({} when `answer` is False), None on failure."""
        if self.failure:
            self.skipped += 1
            return None
        self.calls += 1
        status, data = self._post(verb, json.dumps(body).encode())
        if status is None:
            return None
        problem = ""
        decoded: object = {}
        if status != 200:
            problem = f"answered HTTP {status}"
        elif len(data) > MAX_ANSWER_BYTES:
            problem = f"answer larger than {MAX_ANSWER_BYTES} bytes"
        elif answer:
            try:
                decoded = json.loads(data)
            except ValueError as exc:
                problem = f"answer is not JSON: {exc}"
            if not problem and not isinstance(decoded, dict):
                problem = "answer is not a JSON object"
        if problem:
            self._fail(verb, problem)
            return None
        return decoded if isinstance(decoded, dict) else {}

    def _post(self, verb: str, payload: bytes) -> tuple[int | None, bytes]:
        """Send one request; (status, at most MAX_ANSWER_BYTES + 1 bytes of answer), or (None, b"") on failure."""
        headers = {"Content-Type": "application/json"}
        try:
            connection = self._connect()
            connection.request("POST", f"{self._base}/{verb}", body=payload, headers=headers)
            response = connection.getresponse()
            data = response.read(MAX_ANSWER_BYTES + 1)
            if not response.isclosed() or not self._keep_alive:
                response.close()
                self.close()
            return response.status, data
        except (OSError, http.client.HTTPException) as exc:
            self._fail(verb, f"{type(exc).__name__}: {exc}")
            return None, b""

    def _connect(self) -> http.client.HTTPConnection:
        if self._connection is None:
            kind = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
            self._connection = kind(self._host, self._port, timeout=self.timeout)
        return self._connection

    def _fail(self, verb: str, reason: str) -> None:
        """Note the session's failure (later calls are not sent) and log it once."""
        self.failure = f"{verb}: {reason}"
        self.close()
        log.warning("extender_call_failed", verb=verb, reason=reason)

    def close(self) -> None:
        """Close the connection (the next call opens a new one)."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def finish(self) -> None:
        """Close the connection for good: calls made from now on (the session reads job readiness after its
        plugins closed) each open and close their own."""
        self._keep_alive = False
        self.close()
