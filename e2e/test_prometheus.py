"""A real Prometheus scrapes a running py-volcano; every query of our Grafana dashboard and of Volcano's
two scheduler dashboards (read from a Volcano checkout named by VOLCANO_SOURCE: opt-in, see
e2e/volcano_dashboards.py) returns data, and the queue figures Prometheus
holds are the scheduler's.

The known workload, on two kwok nodes of 8 CPUs, 16 GiB and 4 GPUs each:
* queue `qa` (weight 2, capability 6 CPUs, 12 GiB, 4 GPUs): gang `train` (2 pods of 1 CPU, 1 GiB,
  1 GPU) runs; gang `waiting` (minResources 1 CPU, 1 GiB, 1 GPU) is admitted but its one pod asks for
  8 GPUs, which no node has: it stays Inqueue, one task short;
* queue `qb` (weight 1): gang `batch` (3 pods of 2 CPUs, 2 GiB) runs.
Prometheus starts before the workload is created, so every rate and quantile over the last 5 minutes
sees the cycles, binds and allocations it caused.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from e2e.harness import (
    Nodes,
    Rest,
    Scheduler,
    create_namespace,
    delete_namespace,
    node,
    pod,
    pod_group,
    queue,
    token,
    wait_for,
)
from e2e.prometheus import Prometheus
from e2e.test_chart import find_helm
from e2e.volcano_dashboards import SKIP_REASON, volcano_dashboard_queries
from py_volcano.api import (
    ClusterInfo,
    CycleResult,
    parse_node,
    parse_pod,
    parse_pod_group,
    parse_priority_class,
    parse_queue,
)
from py_volcano.framework import run_cycle
from py_volcano.registry import default_registry, load_conf

pytest_plugins = ["e2e.fixtures"]

REPO = Path(__file__).resolve().parent.parent
OUR_DASHBOARD = REPO / "deploy" / "grafana" / "py-volcano-dashboard.json"
GPU = "nvidia.com/gpu"
GI = 2**30
MI = 2**20
#: Grafana's variables, as a user looking at queue qa would have them.
RATE_INTERVAL = "5m"


@dataclass(frozen=True)
class Query:
    dashboard: str
    panel: str
    expr: str


def _our_queries() -> list[Query]:
    board = json.loads(OUR_DASHBOARD.read_text())
    panels = [p for top in board["panels"] for p in (top, *top.get("panels", []))]
    queries = [Query("py-volcano", p["title"], t["expr"]) for p in panels for t in p.get("targets", [])]
    queries += [Query("py-volcano", f"variable {v['name']}", v["definition"]) for v in board["templating"]["list"]
                if v["type"] == "query"]
    return queries


def _volcano_queries() -> list[Query]:
    helm = find_helm()
    found = volcano_dashboard_queries(helm) if helm else None
    return [Query(*query) for query in found or []]


QUERIES = _our_queries() + _volcano_queries()


def promql(expr: str, queue_name: str) -> str:
    """The query Grafana sends: variables replaced; `label_values(m, l)` becomes the series it reads."""
    expr = expr.replace("$__rate_interval", RATE_INTERVAL).replace("$queue", queue_name)
    match = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", expr)
    return f"count by ({match.group(2)}) ({match.group(1)})" if match else expr


@dataclass
class Run:
    """The running scheduler, Prometheus, and the workload's names."""

    prometheus: Prometheus
    scheduler: Scheduler
    namespace: str
    qa: str
    qb: str
    scheduler_name: str


def gpu_node(name: str) -> dict[str, Any]:
    manifest = node(name, cpu="8", memory="16Gi")
    for resources in (manifest["status"]["allocatable"], manifest["status"]["capacity"]):
        resources[GPU] = "4"
    return manifest


def gpu_pod(name: str, namespace: str, *, scheduler: str, group: str, gpus: str, **kwargs: Any) -> dict[str, Any]:
    manifest = pod(name, namespace, scheduler=scheduler, group=group, **kwargs)
    (container,) = manifest["spec"]["containers"]
    container["resources"]["requests"][GPU] = gpus
    container["resources"]["limits"] = {GPU: gpus}
    return manifest


def create_workload(rest: Rest, namespace: str, qa: str, qb: str, scheduler: str) -> None:
    rest.create(pod_group("train", namespace, min_member=2, queue=qa))
    rest.create(pod_group("waiting", namespace, min_member=1, queue=qa,
                          minResources={"cpu": "1", "memory": "1Gi", GPU: "1"}))
    rest.create(pod_group("batch", namespace, min_member=3, queue=qb))
    for i in range(2):
        rest.create(gpu_pod(f"train-{i}", namespace, scheduler=scheduler, group="train", gpus="1", memory="1Gi"))
    rest.create(gpu_pod("waiting-0", namespace, scheduler=scheduler, group="waiting", gpus="8", memory="1Gi"))
    for i in range(3):
        rest.create(pod(f"batch-{i}", namespace, scheduler=scheduler, group="batch", cpu="2", memory="2Gi"))


@pytest.fixture(scope="module")
def run(control_plane: Any, rest: Rest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    nodes = Nodes(rest)
    namespace = create_namespace(rest, token("prom"))
    qa, qb = token("qa"), token("qb")
    rest.create(queue(qa, weight=2, capability={"cpu": "6", "memory": "12Gi", GPU: "4"}))
    rest.create(queue(qb, weight=1))
    scheduler_name = token("pv-prom")
    try:
        for _ in range(2):
            nodes.create(gpu_node(token("kwok-gpu")))
        with Scheduler(
            Path(control_plane.kubeconfig), f"--scheduler-name={scheduler_name}", "--schedule-period=0.3",
            "--no-leader-elect", name="prom-scheduler",
        ) as process:
            prometheus = Prometheus(tmp_path_factory.mktemp("prometheus"), [f"127.0.0.1:{process.port}"])
            try:
                prometheus.wait_scraped()
                create_workload(rest, namespace, qa, qb, scheduler_name)
                bound = [f"train-{i}" for i in range(2)] + [f"batch-{i}" for i in range(3)]
                wait_for("train and batch bound", lambda: all(rest.node_of(namespace, p) for p in bound), timeout=60)
                run = Run(prometheus, process, namespace, qa, qb, scheduler_name)
                settled = f'volcano_queue_allocated_milli_cpu{{queue_name="{qb}"}} == 6000'
                wait_for("the last figures scraped", lambda: prometheus.value(settled) is not None, timeout=60)
                wait_for("five scrapes since", lambda: (prometheus.value(
                    f"count_over_time(({settled})[{RATE_INTERVAL}:1s])") or 0) >= 5, timeout=30)
                yield run
            finally:
                prometheus.stop()
    finally:
        delete_namespace(rest, namespace)
        for name in (qa, qb):
            rest.delete("Queue", name)
        nodes.delete_all()


@pytest.mark.parametrize("query", QUERIES, ids=lambda q: f"{q.dashboard}: {q.panel}: {q.expr}")
def test_every_dashboard_query_returns_data(run: Run, query: Query) -> None:
    """Each panel query of the three dashboards has at least one series, every value a number."""
    result = run.prometheus.query(promql(query.expr, run.qa))
    assert result, f"no data for {query.dashboard} / {query.panel}: {query.expr}"
    values = [float(sample["value"][1]) for sample in result]
    assert all(math.isfinite(value) for value in values), (query.expr, result)


def test_volcanos_dashboards_were_read() -> None:
    """Volcano's two scheduler dashboards are among the queries when a Volcano checkout is given."""
    if not os.environ.get("VOLCANO_SOURCE"):
        pytest.skip(SKIP_REASON)
    boards = {query.dashboard for query in QUERIES}
    assert {"Volcano Scheduler Internal Metrics", "Volcano Queue Metrics"} <= boards


def cluster_as_listed(rest: Rest, scheduler: str) -> ClusterInfo:
    """The snapshot the scheduler's store makes of the API server's objects now."""
    classes = {spec.name: spec for spec in map(parse_priority_class, rest.list("PriorityClass"))}
    return ClusterInfo.build(
        nodes=[parse_node(obj) for obj in rest.list("Node")],
        pods=[parse_pod(obj, priority_classes=classes) for obj in rest.list("Pod")],
        queues=[parse_queue(obj) for obj in rest.list("Queue")],
        pod_groups=[parse_pod_group(obj) for obj in rest.list("PodGroup")],
        priority_classes=classes,
        scheduler_name=scheduler,
    )


def test_queue_figures_are_the_schedulers(run: Run, rest: Rest) -> None:
    """What Prometheus holds for each queue is what the workload makes and what a cycle computes."""
    prom, qa, qb = run.prometheus, run.qa, run.qb

    def value(metric: str, queue_name: str, **labels: str) -> float | None:
        selector = ",".join([f'queue_name="{queue_name}"', *(f'{k}="{v}"' for k, v in labels.items())])
        return prom.value(f"volcano_queue_{metric}{{{selector}}}")

    expected = {
        ("allocated_milli_cpu", qa): 2000, ("allocated_memory_bytes", qa): 2 * GI,
        ("request_milli_cpu", qa): 3000, ("request_memory_bytes", qa): 3 * GI,
        ("capacity_milli_cpu", qa): 6000, ("capacity_memory_bytes", qa): 12 * GI,
        ("inqueue_milli_cpu", qa): 1000, ("inqueue_memory_bytes", qa): GI,
        ("allocated_milli_cpu", qb): 6000, ("allocated_memory_bytes", qb): 6 * GI,
        ("request_milli_cpu", qb): 6000, ("inqueue_milli_cpu", qb): 0,
        ("weight", qa): 2, ("weight", qb): 1,
        ("pod_group_running_count", qa): 1, ("pod_group_inqueue_count", qa): 1,
        ("pod_group_running_count", qb): 1, ("pod_group_pending_count", qb): 0,
    }
    assert {key: value(*key) for key in expected} == expected
    scalars = {which: value(f"{which}_scalar_resources", qa, resource=GPU)
               for which in ("allocated", "request", "capacity", "inqueue")}
    assert scalars == {"allocated": 2000, "request": 10000, "capacity": 4000, "inqueue": 1000}, "milli GPUs"
    assert value("capacity_milli_cpu", qb) is None, "qb has no capability"

    registry = default_registry()
    result: CycleResult = run_cycle(
        cluster_as_listed(rest, run.scheduler_name), load_conf(None, source="default", registry=registry), registry
    )
    for name in (qa, qb):
        figures = result.queues[name]
        assert figures.deserved is not None and figures.real_capability is not None
        computed = {
            "deserved_milli_cpu": figures.deserved.milli_cpu,
            "deserved_memory_bytes": figures.deserved.memory,
            "real_capacity_milli_cpu": figures.real_capability.milli_cpu,
            "real_capacity_memory_bytes": figures.real_capability.memory,
            "share": figures.share,
            "overused": 1.0 if figures.overused else 0.0,
        }
        assert {metric: value(metric, name) for metric in computed} == pytest.approx(computed), name
    jobs = {sample["metric"]["job_id"]: float(sample["value"][1])
            for sample in prom.query('volcano_unschedule_task_count{job_id=~"train|waiting|batch"}')}
    assert jobs == {"waiting": 1}
