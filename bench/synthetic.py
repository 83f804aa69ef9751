"""Synthetic clusters for benchmarks: nodes with cpu/memory/gpu mixes, labels and taints; weighted
queues; gang jobs of sizes 1 to 64 with priorities. Deterministic for a given seed."""

from __future__ import annotations

import gc
import random
import time
from dataclasses import dataclass
from typing import Any

from py_volcano.api import ClusterInfo, CycleResult
from py_volcano.cache.collector import collector_paused
from py_volcano.framework import Registry, SchedulerConf, run_cycle
from py_volcano.simulation import InMemoryCluster

__all__ = ["Shape", "TimedCycle", "build_cluster", "load", "manifests", "timed_cycle"]

_NODE_TYPES = (
    ({"cpu": "32", "memory": "128Gi", "pods": "110"}, "cpu"),
    ({"cpu": "64", "memory": "256Gi", "pods": "110"}, "cpu"),
    ({"cpu": "48", "memory": "384Gi", "pods": "110", "nvidia.com/gpu": "8"}, "gpu"),
)
_POD_SHAPES = (
    {"cpu": "500m", "memory": "1Gi"},
    {"cpu": "1", "memory": "2Gi"},
    {"cpu": "2", "memory": "4Gi"},
    {"cpu": "4", "memory": "16Gi"},
)


@dataclass(frozen=True)
class Shape:
    """How big a synthetic cluster is."""

    nodes: int
    pending_pods: int
    queues: int = 10
    gang_sizes: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)
    seed: int = 7


def manifests(shape: Shape) -> list[dict[str, Any]]:
    """Return the cluster as plain manifests: nodes, priority classes, queues, podgroups, pods."""
    rng = random.Random(shape.seed)
    objects: list[dict[str, Any]] = []
    for i in range(shape.nodes):
        allocatable, kind = _NODE_TYPES[i % len(_NODE_TYPES)]
        taints = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}] if kind == "gpu" else []
        objects.append({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": f"node-{i:05d}", "labels": {"zone": f"z{i % 4}", "type": kind}},
            "spec": {"taints": taints},
            "status": {"allocatable": dict(allocatable), "capacity": dict(allocatable)},
        })
    for name, value in (("low", 100), ("mid", 500), ("high", 1000)):
        objects.append({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                        "metadata": {"name": name}, "value": value})
    for q in range(shape.queues):
        objects.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                        "metadata": {"name": f"q{q}"}, "spec": {"weight": 1 + q % 4}})
    placed, job = 0, 0
    while placed < shape.pending_pods:
        size = min(rng.choice(shape.gang_sizes), shape.pending_pods - placed)
        name, queue = f"job-{job:05d}", f"q{job % shape.queues}"
        priority = rng.choice(("low", "mid", "high"))
        objects.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                        "metadata": {"name": name, "namespace": "bench"},
                        "spec": {"minMember": size, "queue": queue, "priorityClassName": priority},
                        "status": {"phase": "Inqueue"}})
        requests = rng.choice(_POD_SHAPES)
        selector = {"zone": f"z{job % 4}"} if job % 5 == 0 else {}
        for t in range(size):
            objects.append({"apiVersion": "v1", "kind": "Pod",
                            "metadata": {"name": f"{name}-{t}", "namespace": "bench",
                                         "annotations": {"scheduling.k8s.io/group-name": name}},
                            "spec": {"schedulerName": "py-volcano", "priorityClassName": priority,
                                     "nodeSelector": selector,
                                     "containers": [{"name": "main", "resources": {"requests": dict(requests)}}]},
                            "status": {"phase": "Pending"}})
        placed += size
        job += 1
    return objects


def load(objects: list[dict[str, Any]]) -> InMemoryCluster:
    """Feed manifests to a store once, as the simulator does; `snapshot()` is then `Store.snapshot`,
    what the runner pays every cycle (parsing happened as the watch events came, untimed)."""
    return InMemoryCluster(objects, source="bench", scheduler_name="py-volcano")


def build_cluster(shape: Shape) -> InMemoryCluster:
    """Generate a synthetic cluster and load it into a store."""
    return load(manifests(shape))


@dataclass(frozen=True, slots=True)
class TimedCycle:
    """One snapshot and the cycle over it, with the seconds each took."""

    snapshot: ClusterInfo
    result: CycleResult
    snapshot_s: float
    cycle_s: float


def timed_cycle(cluster: InMemoryCluster, conf: SchedulerConf, registry: Registry) -> TimedCycle:
    """Take a snapshot of `cluster` and run one cycle over it, timing each, with the collector handled as
    `py-volcano run` handles it: the loaded cluster frozen out of collections (`wait_synced`), the
    collector paused over the snapshot and the cycle (`cache.collector_paused`)."""
    gc.collect()
    gc.freeze()
    try:
        with collector_paused():
            started = time.perf_counter()
            snapshot = cluster.snapshot()
            snapshot_s = time.perf_counter() - started
            started = time.perf_counter()
            result = run_cycle(snapshot, conf, registry)
            cycle_s = time.perf_counter() - started
    finally:
        gc.unfreeze()
    return TimedCycle(snapshot, result, snapshot_s, cycle_s)
