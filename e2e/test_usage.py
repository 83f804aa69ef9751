"""usage against a real Prometheus: Debian's `prometheus` scrapes a fixture serving node-exporter series for
three kwok nodes (e2e/node_exporter.py), py-volcano's `metrics` section points at it, and the pods avoid
the node over the CPU threshold and go to the least loaded one.

The nodes, first by name first: `a-hot` (92% CPU busy), `b-busy` (60%), `c-idle` (20%);
without usage every node scores alike and the pods would go to `a-hot`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e.harness import Nodes, Rest, Scheduler, create_namespace, delete_namespace, node, pod, token, wait_for
from e2e.node_exporter import measured
from e2e.prometheus import Prometheus

pytest_plugins = ["e2e.fixtures"]

#: Busy CPU and used memory percent per node role.
LOAD = {"a-hot": (92.0, 40.0), "b-busy": (60.0, 50.0), "c-idle": (20.0, 30.0)}


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
    nodes = Nodes(rest)
    workdir = tmp_path_factory.mktemp("usage")
    with measured(workdir / "prometheus", {names[role]: load for role, load in LOAD.items()}) as prometheus:
        try:
            for name in names.values():
                nodes.create(node(name, cpu="4", memory="8Gi"))
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
