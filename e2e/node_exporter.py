"""Node usage from a real Prometheus for the e2e tests: a node-exporter stand-in, and a Prometheus scraping it.

The fixture serves, per node, `node_cpu_seconds_total{mode="idle"}` counters growing at the node's idle
fraction of wall time (two CPUs) and `node_memory_MemTotal_bytes` / `node_memory_MemAvailable_bytes`,
each labelled `instance="<node name>"` (Prometheus keeps it: `honor_labels`), which is what Volcano's
queries select. Volcano's CPU query is a `rate(...[5m])` averaged over 10 minutes, and `rate` divides by
the whole 5 minutes: a Prometheus with seconds of data reads nearly 100% busy. So the fixture's first
scrape holds 16 minutes of history, one explicitly timestamped sample every 30 s per series (Prometheus
keeps exposed timestamps), and every later scrape the live values: the queries answer the load at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from e2e.harness import wait_for
from e2e.prometheus import Prometheus
from py_volcano.cache.node_usage import cpu_query, memory_query

__all__ = ["NodeExporterFixture", "measured"]

GI = 2**30
HISTORY = 16 * 60.0
"""Seconds of history the first scrape holds: the CPU query reads 10 minutes of 5-minute rates."""
STEP = 30.0
"""Seconds between two historical samples."""


class NodeExporterFixture:
    """A loopback HTTP server whose /metrics holds node-exporter series for `load`: per node name, its
    busy CPU and used memory in percent."""

    def __init__(self, load: Mapping[str, tuple[float, float]]) -> None:
        self.load = dict(load)
        self.booted = time.time() - 3600
        self.caught_up = False
        self.lock = threading.Lock()
        fixture = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = fixture.exposition().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.target = f"127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, name="node-exporter-fixture", daemon=True)
        self.thread.start()

    def exposition(self) -> str:
        """The text format: the first time, the history (timestamped) up to now; then this instant."""
        now = time.time()
        with self.lock:
            history, self.caught_up = not self.caught_up, True
        instants = [now - HISTORY + STEP * i for i in range(int(HISTORY / STEP))] if history else []

        def samples(series: str, value: float, per_second: float = 0.0) -> list[str]:
            """The series at each instant: `value`, plus `per_second` for each second since boot (a counter)."""
            stamped = [f"{series} {value + (at - self.booted) * per_second:.3f} {int(at * 1000)}" for at in instants]
            return [*stamped, f"{series} {value + (now - self.booted) * per_second:.3f}"]

        lines = ["# TYPE node_cpu_seconds_total counter"]
        for name, (cpu, _) in self.load.items():
            for core in ("0", "1"):
                for mode, share in (("idle", 100.0 - cpu), ("user", cpu)):
                    series = f'node_cpu_seconds_total{{cpu="{core}",instance="{name}",mode="{mode}"}}'
                    lines += samples(series, 0.0, per_second=share / 100)
        lines.append("# TYPE node_memory_MemTotal_bytes gauge")
        for name in self.load:
            lines += samples(f'node_memory_MemTotal_bytes{{instance="{name}"}}', 8 * GI)
        lines.append("# TYPE node_memory_MemAvailable_bytes gauge")
        for name, (_, memory) in self.load.items():
            available = 8 * GI * (100 - memory) / 100
            lines += samples(f'node_memory_MemAvailable_bytes{{instance="{name}"}}', available)
        return "\n".join(lines) + "\n"

    def stop(self) -> None:
        """Stop serving."""
        self.server.shutdown()
        self.server.server_close()


def settled(prometheus: Prometheus, query: str, expected: float) -> Callable[[], float | None]:
    """A check: the query's value once it is within 0.5 of `expected`, else None."""

    def check() -> float | None:
        value = prometheus.value(query)
        return value if value is not None and abs(value - expected) < 0.5 else None

    return check


@contextmanager
def measured(workdir: Path, load: Mapping[str, tuple[float, float]]) -> Iterator[Prometheus]:
    """Serve `load` (node name -> busy CPU %, used memory %) to a Prometheus of its own, in `workdir`;
    yield it once the usage plugin's queries answer every node's load."""
    fixture = NodeExporterFixture(load)
    try:
        prometheus = Prometheus(workdir, [fixture.target], job="node-exporter", honor_labels=True)
        try:
            prometheus.wait_scraped()
            for name, (cpu, memory) in load.items():
                wait_for(f"Prometheus reads {name} {cpu}% busy", settled(prometheus, cpu_query(name), cpu))
                wait_for(f"Prometheus reads {name} {memory}% used", settled(prometheus, memory_query(name), memory))
            yield prometheus
        finally:
            prometheus.stop()
    finally:
        fixture.stop()
