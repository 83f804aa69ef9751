"""Random small clusters for the parity suite, each written as a scenario dict (docs/scenarios.md).

A cluster has 1-3 nodes (some labelled by zone, some tainted), 1-3 leaf queues (weights, capability,
deserved and guarantee; under one or two parents when the capacity plugin runs with `enableHierarchy`),
priority classes, and 1-4 jobs: PodGroups of 1-3 pods with a minMember, a priority, maybe a node selector
or a toleration; some already Running on nodes, so preempt and reclaim have victims. The configuration
runs proportion, capacity or hierarchical capacity, with or without preempt and reclaim. The dict is a
scenario with an empty `expect`: saved as YAML, a divergent case can be played by `py-volcano simulate`.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from hypothesis import strategies as st

NODE_CPU = (2, 4, 8)
ZONES = ("a", "b")
TAINT = {"key": "dedicated", "value": "batch", "effect": "NoSchedule"}
PRIORITIES = {"low": 10, "high": 1000}
IMAGE = "registry.k8s.io/pause:3.9"
NAMESPACE = "gen"

#: Queue-share plugin -> its plugin entry in the second tier.
SHARE_PLUGINS = {
    "proportion": "    - name: proportion\n",
    "capacity": "    - name: capacity\n",
    "hierarchy": "    - name: capacity\n      enableHierarchy: true\n",
}


def scheduler_config(share: str, actions: list[str]) -> str:
    """Return a Volcano configuration running `actions` with `share` as the queue-share plugin."""
    return (
        f"actions: {', '.join(actions)}\n"
        "tiers:\n- plugins:\n    - name: priority\n    - name: gang\n    - name: conformance\n"
        "- plugins:\n    - name: overcommit\n    - name: drf\n    - name: predicates\n"
        f"{SHARE_PLUGINS[share]}    - name: nodeorder\n    - name: binpack\n"
    )


def _cpu(cores: int) -> dict[str, str]:
    return {"cpu": str(cores), "memory": f"{cores}Gi"}


def _queue(draw: st.DrawFn, name: str, share: str, parent: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"weight": draw(st.integers(1, 4)), "reclaimable": draw(st.booleans())}
    capability = draw(st.none() | st.integers(1, 12))
    if capability is not None:
        spec["capability"] = _cpu(capability)
    if share != "proportion":
        deserved = draw(st.none() | st.integers(0, capability or 12))
        if deserved is not None:
            spec["deserved"] = _cpu(deserved)
            guarantee = draw(st.none() | st.integers(0, deserved))
            if guarantee:
                spec["guarantee"] = {"resource": _cpu(guarantee)}
    if parent is not None:
        spec["parent"] = parent
    return _object("scheduling.volcano.sh/v1beta1", "Queue", name, spec, status={"state": "Open"})


def _object(
    api_version: str, kind: str, name: str, spec: dict[str, Any], *, namespaced: bool = False, **extra: Any
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespaced:
        meta["namespace"] = NAMESPACE
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, "spec": spec, **extra}


@st.composite
def clusters(draw: st.DrawFn) -> dict[str, Any]:
    """Draw one cluster as a scenario dict named `gen-<digest>`."""
    share = draw(st.sampled_from(sorted(SHARE_PLUGINS)))
    actions = ["enqueue", "allocate", *draw(st.sampled_from([[], ["preempt"], ["reclaim"], ["preempt", "reclaim"]]))]
    objects: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}]
    for name, value in PRIORITIES.items():
        objects.append(
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}
        )
    free: dict[str, int] = {}
    nodes: dict[str, dict[str, str]] = {}
    for index in range(draw(st.integers(1, 3))):
        name, cpu = f"node-{index + 1}", draw(st.sampled_from(NODE_CPU))
        labels = {"zone": draw(st.sampled_from(ZONES))}
        spec: dict[str, Any] = {"taints": [TAINT]} if draw(st.integers(0, 4)) == 0 else {}
        allocatable = {**_cpu(cpu), "pods": "110"}
        node = _object("v1", "Node", name, spec, status={"allocatable": allocatable, "capacity": dict(allocatable)})
        node["metadata"]["labels"] = labels
        objects.append(node)
        free[name], nodes[name] = cpu, labels | ({"tainted": "yes"} if spec else {})
    parents: list[str | None] = [None]
    if share == "hierarchy":
        objects.append(
            _object("scheduling.volcano.sh/v1beta1", "Queue", "root", {"weight": 1}, status={"state": "Open"})
        )
        parents = [f"parent-{p}" for p in "ab"[: draw(st.integers(1, 2))]]
        objects.extend(_queue(draw, str(name), "capacity", "root") for name in parents)
    leaves = [f"queue-{i + 1}" for i in range(draw(st.integers(1, 3)))]
    objects.extend(_queue(draw, leaf, share, draw(st.sampled_from(parents))) for leaf in leaves)
    for job in range(draw(st.integers(1, 4))):
        objects.extend(_job(draw, f"job-{job + 1}", leaves, free, nodes))
    case = {
        "description": f"generated: {share}, actions {', '.join(actions)}",
        "schedulerConfig": scheduler_config(share, [*actions, "backfill"]),
        "cycles": draw(st.integers(1, 2)),
        "objects": objects,
        "expect": {},
    }
    digest = hashlib.sha256(json.dumps(case, sort_keys=True).encode()).hexdigest()[:10]
    return {"name": f"gen-{digest}", **case}


def _job(
    draw: st.DrawFn, name: str, queues: list[str], free: dict[str, int], nodes: dict[str, dict[str, str]]
) -> list[dict[str, Any]]:
    """Draw a PodGroup and its pods; a running job's pods are placed first-fit, else the job stays pending."""
    tasks, cpu = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    priority = draw(st.sampled_from(["", *PRIORITIES]))
    selector = draw(st.none() | st.sampled_from(ZONES))
    tolerates = draw(st.booleans())
    placement: list[str] = []
    if draw(st.booleans()):
        for _ in range(tasks):
            fits = [
                n
                for n, left in free.items()
                if left >= cpu
                and (selector is None or nodes[n]["zone"] == selector)
                and (tolerates or "tainted" not in nodes[n])
            ]
            if not fits:
                break
            placement.append(fits[0])
            free[fits[0]] -= cpu
        if len(placement) < tasks:
            for node in placement:
                free[node] += cpu
            placement = []
    group_spec: dict[str, Any] = {"minMember": draw(st.integers(1, tasks)), "queue": draw(st.sampled_from(queues))}
    if priority:
        group_spec["priorityClassName"] = priority
    phase = "Running" if placement else "Pending"
    group = _object(
        "scheduling.volcano.sh/v1beta1", "PodGroup", name, group_spec, namespaced=True, status={"phase": phase}
    )
    objects = [group]
    for task in range(tasks):
        pod_spec: dict[str, Any] = {
            "schedulerName": "py-volcano",
            "containers": [{"name": "main", "image": IMAGE, "resources": {"requests": _cpu(cpu)}}],
        }
        if priority:
            pod_spec["priorityClassName"] = priority
        if selector is not None:
            pod_spec["nodeSelector"] = {"zone": selector}
        if tolerates:
            pod_spec["tolerations"] = [{**TAINT, "operator": "Equal"}]
        if placement:
            pod_spec["nodeName"] = placement[task]
        pod = _object("v1", "Pod", f"{name}-{task}", pod_spec, namespaced=True, status={"phase": phase})
        pod["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": name}
        objects.append(pod)
    return objects
