"""A small extender for tests: an HTTP server on 127.0.0.1 that records every call and answers per verb.

Used in-process by the unit tests and beside a real `py-volcano run` by e2e/test_extender.py.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Answer", "Call", "FakeExtender", "serving"]

#: What a verb's handler returns: (HTTP status, JSON object or raw bytes).
Answer = tuple[int, dict[str, Any] | bytes]


@dataclass(slots=True, frozen=True)
class Call:
    """One request the extender received."""

    verb: str
    body: dict[str, Any]


@dataclass(slots=True)
class FakeExtender:
    """Answers each verb with its handler (an unknown verb: 200 and `{}`), after `delay` seconds."""

    handlers: dict[str, Callable[[dict[str, Any]], Answer]] = field(default_factory=dict)
    delay: float = 0.0
    calls: list[Call] = field(default_factory=list)
    url: str = ""

    def verbs(self) -> list[str]:
        """Return the verbs called, in order."""
        return [call.verb for call in self.calls]

    def answer(self, verb: str, body: dict[str, Any]) -> Answer:
        """Record the call and return the handler's answer."""
        self.calls.append(Call(verb, body))
        if self.delay:
            time.sleep(self.delay)
        handler = self.handlers.get(verb)
        return handler(body) if handler is not None else (200, {})


def _handler(extender: FakeExtender) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            status, answer = extender.answer(self.path.rsplit("/", 1)[-1], body)
            data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (its timeout): nothing left to answer

        def log_message(self, format: str, *args: Any) -> None:
            """Keep test output quiet."""

    return Handler


@contextmanager
def serving(extender: FakeExtender, *, host: str = "127.0.0.1") -> Iterator[FakeExtender]:
    """Serve the extender on `host` (loopback by default) and a free port; its `url` is set while serving."""
    server = ThreadingHTTPServer((host, 0), _handler(extender))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="fake-extender", daemon=True)
    thread.start()
    extender.url = f"http://{host}:{server.server_address[1]}"
    try:
        yield extender
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
