"""Predicate and score benchmark: the per-task cost of `predicates`, `nodeorder` and `binpack` at 1,000 and
5,000 nodes.

Synthetic nodes carry zone, rack, disk and hostname labels; one in three has a NoSchedule taint, one in five a
PreferNoSchedule taint, one in fifty is cordoned; each runs three pods (some with host ports, required
anti-affinity, or the preferred anti-affinity a Deployment spreading itself has). Pod shapes include topology
spread over zones (DoNotSchedule) and over hosts (ScheduleAnyway). For each pod shape, a batch
of distinct pending tasks of that shape is timed through the session's own calls: `predicate_mask` (every
enabled predicate), `fit_idle`, and `prioritize` over the nodes that pass (nodeorder + binpack). The first
task of a shape pays the static mask; the figures are per task over the whole batch, so they show the
repeated-shape cost. `pinned` gives every task its own shape. `fit` (the framework's resource and pod-slot
fit) is shown apart: it is not a plugin's cost.

Usage: python -m bench.bench_predicates [--nodes 1000,5000] [--tasks 200] [--json]
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from bench.synthetic import load
from py_volcano.api import TaskInfo, TaskStatus
from py_volcano.framework import Session, open_session
from py_volcano.registry import default_registry, load_conf

__all__ = ["SHAPES", "main", "manifests", "measure"]

CONF = """actions: "allocate"
tiers:
- plugins:
  - name: predicates
  - name: nodeorder
  - name: binpack
"""
ZONES, RACKS = 8, 64
HOST = "kubernetes.io/hostname"


def _node(i: int) -> dict[str, Any]:
    taints = []
    if i % 3 == 0:
        taints.append({"key": "dedicated", "value": f"team-{i % 4}", "effect": "NoSchedule"})
    if i % 5 == 0:
        taints.append({"key": "spot", "value": "true", "effect": "PreferNoSchedule"})
    allocatable = {"cpu": "32", "memory": "128Gi", "pods": "110"}
    labels = {
        HOST: f"node-{i:05d}",
        "zone": f"z{i % ZONES}",
        "rack": f"r{i % RACKS}",
        "disk": "ssd" if i % 2 else "hdd",
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"node-{i:05d}", "labels": labels},
        "spec": {"taints": taints, "unschedulable": i % 50 == 49},
        "status": {"allocatable": allocatable, "capacity": dict(allocatable)},
    }


def _pod(
    name: str,
    spec: dict[str, Any],
    *,
    node: str = "",
    labels: dict[str, str] | None = None,
    ports: Sequence[int] = (),
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}
    if ports:
        container["ports"] = [{"containerPort": p, "hostPort": p} for p in ports]
    body = {"schedulerName": "py-volcano", "containers": [container], **spec}
    if node:
        body["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "bench", "labels": labels or {"app": "batch"}},
        "spec": body,
        "status": {"phase": "Running" if node else "Pending"},
    }


def _anti(app: str) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": HOST}
    return {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}}


def _preferred_anti(app: str) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": HOST}
    preferred = [{"weight": 50, "podAffinityTerm": term}]
    return {"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}}}


def _shape_spec(shape: str, index: int) -> tuple[dict[str, Any], dict[str, str], list[int]]:
    """(spec, labels, host ports) of the index-th task of a shape."""
    tolerate = {"tolerations": [{"key": "dedicated", "operator": "Exists"}]}
    if shape == "plain":
        return {}, {"app": "batch"}, []
    if shape == "selector":
        return {"nodeSelector": {"disk": "ssd"}, **tolerate}, {"app": "batch"}, []
    if shape == "affinity":
        required = {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": "zone", "operator": "In", "values": ["z1", "z2", "z3"]},
                        {"key": "rack", "operator": "NotIn", "values": ["r1"]},
                    ]
                }
            ]
        }
        preferred = [
            {
                "weight": 10,
                "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]},
            }
        ]
        return (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": required,
                        "preferredDuringSchedulingIgnoredDuringExecution": preferred,
                    }
                }
            },
            {"app": "batch"},
            [],
        )
    if shape == "pinned":
        return {"nodeSelector": {HOST: f"node-{index * 7:05d}"}, **tolerate}, {"app": "batch"}, []
    if shape == "host-port":
        return {}, {"app": "batch"}, [9000]
    if shape == "anti-affinity":
        return _anti("spread"), {"app": "spread"}, []
    if shape == "preferred-anti":
        return _preferred_anti("web"), {"app": "web"}, []
    if shape in ("spread", "spread-soft"):
        when = "DoNotSchedule" if shape == "spread" else "ScheduleAnyway"
        constraint = {
            "maxSkew": 2,
            "topologyKey": "zone" if shape == "spread" else HOST,
            "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
        return {"topologySpreadConstraints": [constraint]}, {"app": "web"}, []
    raise ValueError(shape)


SHAPES = (
    "plain",
    "selector",
    "affinity",
    "pinned",
    "host-port",
    "anti-affinity",
    "preferred-anti",
    "spread",
    "spread-soft",
)


def manifests(nodes: int, tasks: int) -> list[dict[str, Any]]:
    """Nodes with three running pods each, then `tasks` pending pods of every shape."""
    objects = [_node(i) for i in range(nodes)]
    for i in range(nodes):
        node = f"node-{i:05d}"
        tolerate = {"tolerations": [{"operator": "Exists"}]}
        for k in range(3):
            spec, labels, ports = dict(tolerate), {"app": "batch"}, []
            if k == 0 and i % 10 == 0:
                ports = [9000]
            if k == 1 and i % 20 == 0:
                spec.update(_anti("db"))
                labels = {"app": "db"}
            if k == 2 and i % 2 == 0:
                spec.update(_preferred_anti("web"))
                labels = {"app": "web"}
            objects.append(_pod(f"run-{i}-{k}", spec, node=node, labels=labels, ports=ports))
    for shape in SHAPES:
        for t in range(tasks):
            spec, labels, ports = _shape_spec(shape, t)
            objects.append(_pod(f"{shape}-{t}", spec, labels=labels, ports=ports))
    return objects


def _time(fn: Callable[[], object], repeat: int) -> float:
    started = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - started) / repeat


def _per_task(ssn: Session, tasks: list[TaskInfo]) -> dict[str, float]:
    gc.collect()  # a collection left over from building the cluster would land on whichever shape runs next
    predicate = fit = score = 0.0
    candidates = 0
    for task in tasks:
        started = time.perf_counter()
        mask = ssn.predicate_mask(task)
        predicate += time.perf_counter() - started
        started = time.perf_counter()
        rows = np.flatnonzero(mask & ssn.fit_idle(task))
        fit += time.perf_counter() - started
        started = time.perf_counter()
        ssn.prioritize(task, rows)
        score += time.perf_counter() - started
        candidates += len(rows)
    n = len(tasks)
    return {
        "predicate_us": round(predicate / n * 1e6, 1),
        "fit_us": round(fit / n * 1e6, 1),
        "score_us": round(score / n * 1e6, 1),
        "total_us": round((predicate + fit + score) / n * 1e6, 1),
        "candidates": candidates // n,
    }


def measure(nodes: int, tasks: int) -> dict[str, Any]:
    """Open one session at this size and time every shape's tasks; return the figures."""
    cluster = load(manifests(nodes, tasks))
    registry = default_registry()
    started = time.perf_counter()
    ssn = open_session(cluster.snapshot(), load_conf(CONF, registry=registry), registry)
    open_s = time.perf_counter() - started
    pending = [t for job in ssn.jobs.values() for t in job.tasks.values() if t.status is TaskStatus.PENDING]
    shapes = {shape: [t for t in pending if t.name.rsplit("-", 1)[0] == shape] for shape in SHAPES}
    row: dict[str, Any] = {"nodes": nodes, "open_session_ms": round(open_s * 1000, 1)}
    row["shapes"] = {shape: _per_task(ssn, tasks_of) for shape, tasks_of in shapes.items()}
    plain = shapes["plain"][0]
    row["repeat_same_task_us"] = round(_time(lambda: ssn.predicate_mask(plain), 200) * 1e6, 1)
    return row


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the sizes given and print a table (and JSON with --json)."""
    parser = argparse.ArgumentParser(prog="python -m bench.bench_predicates")
    parser.add_argument("--nodes", default="1000,5000", help="comma list of node counts")
    parser.add_argument("--tasks", type=int, default=200, help="pending tasks per shape")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = [measure(int(n), args.tasks) for n in args.nodes.split(",")]
    print(
        f"{'nodes':>6} {'shape':<14} {'predicate us':>12} {'fit us':>8} {'score us':>9} {'total us':>9} "
        f"{'candidates':>10}"
    )
    for row in rows:
        for shape, figures in row["shapes"].items():
            print(
                f"{row['nodes']:>6} {shape:<14} {figures['predicate_us']:>12} {figures['fit_us']:>8} "
                f"{figures['score_us']:>9} {figures['total_us']:>9} {figures['candidates']:>10}"
            )
        print(
            f"{row['nodes']:>6} open_session {row['open_session_ms']} ms; predicate_mask of one task again: "
            f"{row['repeat_same_task_us']} us"
        )
    report = {"bench_predicates": rows}
    if args.json:
        print(json.dumps(report))
    return report


if __name__ == "__main__":
    main()
