"""usage against a real Prometheus: Debian's `prometheus` scrapes a fixture serving node-exporter series for
three kwok nodes, py-volcano's `metrics` section points at it, and the pods avoid the node over the CPU
threshold and go to the least loaded one.

The fixture serves, per node, `node_cpu_seconds_total{mode="idle"}` counters growing at the node's idle
fraction of wall time (two CPUs) and `node_memory_MemTotal_bytes` / `node_memory_MemAvailable_bytes`,
each labelled `instance="<node name>"` (Prometheus keeps it: `honor_labels`), which is what Volcano's
queries select. Volcano's CPU query is a `rate(...[5m])` averaged over 10 minutes, and `rate` divides by
the whole 5 minutes: a Prometheus with seconds of data reads nearly 100% busy. So the fixture first
replays 16 minutes of history, one explicitly timestamped sample 30 s later per scrape (Prometheus keeps
exposed timestamps), and serves live samples once it has caught up with the clock (about 35 s).
The nodes, first by name first: `a-hot` (92% CPU busy), `b-busy` (60%), `c-idle` (20%);
without usage every node scores alike and the pods would go to `a-hot`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e.harness import Nodes, Rest, Scheduler, create_namespace, delete_namespace, node, pod, token, wait_for
from e2e.prometheus import Prometheus
from py_volcano.cache.node_usage import cpu_query, memory_query

pytest_plugins = ["e2e.fixtures"]

GI = 2**30
#: Busy CPU and used memory percent per node role.
LOAD = {"a-hot": (92.0, 40.0), "b-busy": (60.0, 50.0), "c-idle": (20.0, 30.0)}


class NodeExporterFixture:
    """A loopback HTTP server whose /metrics holds node-exporter series for the given nodes."""

    def __init__(self, load: dict[str, tuple[float, float]]) -> None:
        self.load = load
        now = time.time()
        self.booted = now - 3600
        self.cursor = now - 16 * 60
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
        """The text format: the next historical instant (timestamped) until caught up, then this instant."""
        with self.lock:
            now = time.time()
            at, stamp = (self.cursor, f" {int(self.cursor * 1000)}") if self.cursor < now - 30 else (now, "")
            self.cursor += 30
        uptime = at - self.booted
        lines = ["# TYPE node_cpu_seconds_total counter"]
        for name, (cpu, _) in self.load.items():
            idle = uptime * (100.0 - cpu) / 100.0
            for core in ("0", "1"):
                lines.append(f'node_cpu_seconds_total{{cpu="{core}",instance="{name}",mode="idle"}} {idle:.3f}{stamp}')
                lines.append(
                    f'node_cpu_seconds_total{{cpu="{core}",instance="{name}",mode="user"}} {uptime - idle:.3f}{stamp}'
                )
        lines.append("# TYPE node_memory_MemTotal_bytes gauge")
        lines += [f'node_memory_MemTotal_bytes{{instance="{name}"}} {8 * GI}{stamp}' for name in self.load]
        lines.append("# TYPE node_memory_MemAvailable_bytes gauge")
        lines += [
            f'node_memory_MemAvailable_bytes{{instance="{name}"}} {int(8 * GI * (100 - memory) / 100)}{stamp}'
            for name, (_, memory) in self.load.items()
        ]
        return "\n".join(lines) + "\n"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def settled(prometheus: Prometheus, query: str, expected: float) -> Callable[[], float | None]:
    """A check: the query's value once it is within 0.5 of `expected`, else None."""

    def check() -> float | None:
        value = prometheus.value(query)
        return value if value is not None and abs(value - expected) < 0.5 else None

    return check


@dataclass
class Plane:
    prometheus: Prometheus
    scheduler: Scheduler
    names: dict[str, str]
    scheduler_name: str


def conf_text(address: str) -> str:
    return yaml.safe_dump({
        "actions": "enqueue, allocate, backfill",
        "tiers": [
            {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
            {"plugins": [
                {"name": "predicates"},
                {"name": "proportion"},
                {"name": "usage", "arguments": {
                    "usage.weight": 5, "cpu.weight": 1, "memory.weight": 1, "thresholds": {"cpu": 80, "mem": 80},
                }},
            ]},
        ],
        "metrics": {"type": "prometheus", "address": address, "interval": "2s"},
    })


@pytest.fixture(scope="module")
def plane(control_plane: Any, rest: Rest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    prefix = token("usage")
    names = {role: f"{prefix}-{role}" for role in LOAD}
    fixture = NodeExporterFixture({names[role]: load for role, load in LOAD.items()})
    nodes = Nodes(rest)
    workdir = tmp_path_factory.mktemp("usage")
    prometheus = Prometheus(workdir / "prometheus", [fixture.target], job="node-exporter", honor_labels=True)
    try:
        for name in names.values():
            nodes.create(node(name, cpu="4", memory="8Gi"))
        prometheus.wait_scraped()
        for role, (cpu, memory) in LOAD.items():
            name = names[role]
            wait_for(f"Prometheus reads {name} {cpu}% busy", settled(prometheus, cpu_query(name), cpu), timeout=120)
            wait_for(f"Prometheus reads {name} {memory}% used", settled(prometheus, memory_query(name), memory))
        conf = workdir / "volcano-scheduler.conf"
        conf.write_text(conf_text(prometheus.url))
        scheduler_name = token("pv-usage")
        with Scheduler(
            Path(control_plane.kubeconfig), f"--scheduler-conf={conf}", f"--scheduler-name={scheduler_name}",
            "--schedule-period=0.3", "--no-leader-elect", name="usage-scheduler",
        ) as process:
            process.wait_event("node_usage_polled", nodes=len(names), failed=0, timeout=60)
            yield Plane(prometheus, process, names, scheduler_name)
    finally:
        prometheus.stop()
        fixture.stop()
        nodes.delete_all()


def test_pods_avoid_the_hot_node_and_take_the_least_loaded(plane: Plane, rest: Rest) -> None:
    """Two one-CPU pods: none lands on a-hot (92% CPU > 80), both on c-idle rather than b-busy: 20% CPU and
    30% memory score 375, and still 244 with the first pod's shadow estimate, against b-busy's 225."""
    namespace = create_namespace(rest, token("usage"))
    try:
        pods = [f"web-{i}" for i in range(2)]
        for name in pods:
            rest.create(pod(name, namespace, scheduler=plane.scheduler_name, cpu="1", memory="1Gi"))
        wait_for("every pod bound", lambda: all(rest.node_of(namespace, p) for p in pods), timeout=60)
        placed = {p: rest.node_of(namespace, p) for p in pods}
        assert placed == dict.fromkeys(pods, plane.names["c-idle"]), placed
        polled = plane.scheduler.events("node_usage_polled")
        assert polled and all(line["failed"] == 0 for line in polled)
    finally:
        delete_namespace(rest, namespace)
