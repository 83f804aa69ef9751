"""Keyword-only builders of plain manifests for tests, one per kind, with defaults."""

from __future__ import annotations

from typing import Any

from py_volcano.api import (
    ClusterInfo,
    NodeArrays,
    parse_node,
    parse_pod,
    parse_pod_group,
    parse_priority_class,
    parse_queue,
)


def node(*, name: str, cpu: str = "4", memory: str = "8Gi", pods: str = "110", labels: dict[str, str] | None = None,
         taints: list[dict[str, str]] | None = None, unschedulable: bool = False,
         scalars: dict[str, str] | None = None) -> dict[str, Any]:
    """A Node manifest."""
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods, **(scalars or {})}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"taints": taints or [], "unschedulable": unschedulable},
        "status": {"allocatable": allocatable, "capacity": dict(allocatable)},
    }


def pod(*, name: str, namespace: str = "default", cpu: str = "1", memory: str = "1Gi", group: str = "",
        queue: str = "", node_name: str = "", phase: str = "", priority: int | None = None,
        scheduler: str = "py-volcano", labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None, spec: dict[str, Any] | None = None) -> dict[str, Any]:
    """A Pod manifest; Running when it has a node unless `phase` says otherwise."""
    notes = dict(annotations or {})
    if group:
        notes["scheduling.k8s.io/group-name"] = group
    if queue:
        notes["scheduling.volcano.sh/queue-name"] = queue
    requests = {key: value for key, value in (("cpu", cpu), ("memory", memory)) if value}
    body: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [{"name": "main", "image": "pause", "resources": {"requests": requests}}],
        **(spec or {}),
    }
    if node_name:
        body["nodeName"] = node_name
    if priority is not None:
        body["priority"] = priority
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}, "annotations": notes},
        "spec": body,
        "status": {"phase": phase or ("Running" if node_name else "Pending")},
    }


def pod_group(*, name: str, namespace: str = "default", queue: str = "default", min_member: int = 1,
              phase: str = "Pending", min_resources: dict[str, str] | None = None,
              priority_class: str = "") -> dict[str, Any]:
    """A PodGroup manifest."""
    spec: dict[str, Any] = {"minMember": min_member, "queue": queue}
    if min_resources is not None:
        spec["minResources"] = min_resources
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
        "status": {"phase": phase},
    }


def queue(*, name: str, weight: int = 1, **spec: Any) -> dict[str, Any]:
    """A Queue manifest."""
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": weight, **spec},
        "status": {"state": "Open"},
    }


def priority_class(*, name: str, value: int) -> dict[str, Any]:
    """A PriorityClass manifest."""
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def cluster(*objects: dict[str, Any], scheduler_name: str = "py-volcano") -> ClusterInfo:
    """Parse manifests into a snapshot, creation time following listing order."""
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for obj in objects:
        by_kind.setdefault(obj["kind"], []).append(obj)
    classes = {pc.name: pc for pc in (parse_priority_class(o) for o in by_kind.get("PriorityClass", []))}
    order = {id(obj): float(i) for i, obj in enumerate(objects)}
    return ClusterInfo.build(
        nodes=[parse_node(o) for o in by_kind.get("Node", [])],
        pods=[parse_pod(o, priority_classes=classes, creation=order[id(o)]) for o in by_kind.get("Pod", [])],
        queues=[parse_queue(o, creation=order[id(o)]) for o in by_kind.get("Queue", [])],
        pod_groups=[parse_pod_group(o, creation=order[id(o)]) for o in by_kind.get("PodGroup", [])],
        priority_classes=classes,
        scheduler_name=scheduler_name,
    )


def node_arrays(count: int) -> NodeArrays:
    """The node arrays of `count` default nodes `n0`, `n1`, ..., with no scalar resource."""
    return NodeArrays(list(cluster(*(node(name=f"n{i}") for i in range(count))).nodes.values()), ())
