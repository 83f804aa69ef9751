"""Preemption benchmark: one high-priority gang of 50 pods on a 1,000-node cluster full of low-priority pods.

Every node runs four 2-CPU pods of low-priority jobs (minMember 1, so gang offers their pods as victims).
One cycle of `enqueue, allocate, preempt, backfill` with Volcano's default plugins must evict 50 pods and
pipeline the 50 preemptors. `--protected F` marks the low pods of the first fraction F of the nodes
`volcano.sh/preemptable: "false"`, so most nodes offer no victim; `--topology` runs topology-aware
preemption (dry runs on 10% of the nodes, at most 100, per preemptor).

Prints, per run: snapshot time, time per action, the whole cycle, evictions and pipelined pods.
Usage: python -m bench.bench_preempt [--nodes 1000] [--preemptors 50] [--protected 0.9] [--topology] [--json]
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from bench.synthetic import load, timed_cycle
from py_volcano.registry import default_registry, load_conf

__all__ = ["main", "manifests", "measure"]

PODS_PER_NODE = 4
LOW_JOB_SIZE = 40
CONF = """actions: "enqueue, allocate, preempt, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""
TOPOLOGY = """configurations:
- name: preempt
  arguments:
    enableTopologyAwarePreemption: true
"""


def _pod(name: str, group: str, pclass: str, *, node: str = "", protected: bool = False) -> dict[str, Any]:
    annotations = {"scheduling.k8s.io/group-name": group}
    if protected:
        annotations["volcano.sh/preemptable"] = "false"
    spec: dict[str, Any] = {
        "schedulerName": "py-volcano",
        "priorityClassName": pclass,
        "containers": [{"name": "main", "resources": {"requests": {"cpu": "2", "memory": "8Gi"}}}],
    }
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "bench", "annotations": annotations},
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }


def _group(name: str, min_member: int, pclass: str, phase: str) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "bench"},
        "spec": {"minMember": min_member, "queue": "default", "priorityClassName": pclass},
        "status": {"phase": phase},
    }


def manifests(nodes: int, preemptors: int, protected: float) -> list[dict[str, Any]]:
    """Return the cluster: full nodes of low-priority jobs, and one pending high-priority gang."""
    objects: list[dict[str, Any]] = [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "low"},
            "value": 100,
        },
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
        },
    ]
    allocatable = {"cpu": "8", "memory": "32Gi", "pods": "110"}
    for i in range(nodes):
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"node-{i:05d}"},
                "status": {"allocatable": dict(allocatable), "capacity": dict(allocatable)},
            }
        )
    for j in range(nodes * PODS_PER_NODE // LOW_JOB_SIZE):
        objects.append(_group(f"low-{j:04d}", 1, "low", "Running"))
    for p in range(nodes * PODS_PER_NODE):
        i = p // PODS_PER_NODE
        objects.append(
            _pod(
                f"low-{p // LOW_JOB_SIZE:04d}-{p % LOW_JOB_SIZE}",
                f"low-{p // LOW_JOB_SIZE:04d}",
                "low",
                node=f"node-{i:05d}",
                protected=i < nodes * protected,
            )
        )
    objects.append(_group("high", preemptors, "high", "Inqueue"))
    objects += [_pod(f"high-{t}", "high", "high") for t in range(preemptors)]
    return objects


def measure(nodes: int, preemptors: int, *, protected: float = 0.0, topology: bool = False) -> dict[str, Any]:
    """Run one cycle and return its figures; AssertionError when the gang was not placed in that cycle."""
    cluster = load(manifests(nodes, preemptors, protected))
    registry = default_registry()
    conf = load_conf(CONF + (TOPOLOGY if topology else ""), registry=registry)
    timed = timed_cycle(cluster, conf, registry)
    result = timed.result
    assert len(result.evictions) == preemptors, f"{len(result.evictions)} evictions, wanted {preemptors}"
    assert len(result.pipelined) == preemptors, f"{len(result.pipelined)} pipelined, wanted {preemptors}"
    return {
        "nodes": nodes,
        "running_pods": nodes * PODS_PER_NODE,
        "preemptors": preemptors,
        "protected": protected,
        "topology": topology,
        "snapshot_s": round(timed.snapshot_s, 3),
        "cycle_s": round(timed.cycle_s, 3),
        "actions_s": {name: round(s, 3) for name, s in result.action_durations.items()},
        "evictions": len(result.evictions),
        "pipelined": len(result.pipelined),
        "preempt_ms_per_preemptor": round(result.action_durations["preempt"] * 1000 / preemptors, 2),
    }


def main() -> None:
    """Parse arguments, run, print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--preemptors", type=int, default=50)
    parser.add_argument("--protected", type=float, default=0.0)
    parser.add_argument("--topology", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures = measure(args.nodes, args.preemptors, protected=args.protected, topology=args.topology)
    if args.json:
        print(json.dumps(figures))
        return
    for key, value in figures.items():
        print(f"{key:>26}: {value}")


if __name__ == "__main__":
    main()
