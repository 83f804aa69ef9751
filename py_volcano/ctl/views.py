"""The rows `queues` and `jobs` show, built from the objects as read: plain dicts, one shape for tables,
JSON and YAML.

A Queue's figures are its spec, its status as the scheduler writes it, and the scheduler's
`QUEUE_FIGURES_ANNOTATION` (deserved, capability after inheritance, real capability, share); a figure
the scheduler has not written (another scheduler, or none running) is None.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from py_volcano.api import DEFAULT_QUEUE, EXPLAIN_ANNOTATION, GROUP_NAME_ANNOTATION, QUEUE_FIGURES_ANNOTATION

__all__ = ["age", "annotation_json", "job_rows", "queue_rows"]

_PHASES = ("pending", "inqueue", "running", "unknown", "completed")
_FIGURES = ("deserved", "capability", "realCapability", "guarantee")


def _map(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def annotation_json(obj: Mapping[str, Any], key: str) -> dict[str, Any]:
    """Return a JSON annotation of `obj` as a dict ({} when absent or not a JSON object)."""
    text = _map(_map(obj.get("metadata")).get("annotations")).get(key)
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def age(timestamp: object, now: datetime) -> str:
    """Return kubectl's short age of an RFC 3339 time (`45s`, `12m`, `5h`, `3d`); `?` when unreadable."""
    try:
        then = datetime.strptime(str(timestamp), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return "?"
    seconds = max(int((now - then).total_seconds()), 0)
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _resource_order(name: str) -> tuple[bool, bool, str]:
    """cpu, memory, then the others by name."""
    return name != "cpu", name != "memory", name


def _resources(spec: Mapping[str, Any], status: Mapping[str, Any], figures: Mapping[str, Any]) -> dict[str, Any]:
    """Per resource name: allocated (status), then each figure (annotation; capability falls back on the spec)."""
    sources = {
        "allocated": _map(status.get("allocated")),
        **{name: _map(figures.get(name)) for name in _FIGURES},
    }
    if not sources["capability"]:
        sources["capability"] = _map(spec.get("capability"))
    names = sorted({name for source in sources.values() for name in source}, key=_resource_order)
    return {name: {kind: source.get(name) for kind, source in sources.items()} for name in names}


def queue_rows(queues: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Return one row per Queue, by name: state, weight, parent, share, PodGroups per phase, resources."""
    rows = []
    for queue in queues:
        spec, status = _map(queue.get("spec")), _map(queue.get("status"))
        figures = annotation_json(queue, QUEUE_FIGURES_ANNOTATION)
        share = figures.get("share")
        rows.append({
            "name": str(_map(queue.get("metadata")).get("name") or ""),
            "state": str(status.get("state") or "Open"),
            "weight": spec.get("weight", 1),
            "parent": str(spec.get("parent") or ""),
            "share": share if isinstance(share, int | float) else None,
            "overused": figures.get("overused"),
            "podGroups": {phase: int(status.get(phase) or 0) for phase in _PHASES},
            "resources": _resources(spec, status, figures),
        })
    return sorted(rows, key=lambda row: row["name"])


def _pending_pods(pods: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], int]:
    """Count Pending pods by (namespace, PodGroup name)."""
    counts: dict[tuple[str, str], int] = {}
    for pod in pods:
        meta = _map(pod.get("metadata"))
        group = _map(meta.get("annotations")).get(GROUP_NAME_ANNOTATION)
        if group:
            key = (str(meta.get("namespace") or ""), str(group))
            counts[key] = counts.get(key, 0) + 1
    return counts


def job_rows(
    groups: Iterable[Mapping[str, Any]], pending_pods: Iterable[Mapping[str, Any]], *, now: datetime, queue: str | None
) -> list[dict[str, Any]]:
    """Return one row per PodGroup (of `queue` only, when given), by namespace and name: phase, minMember,
    running and pending pods, age, and why it waits (the scheduler's explain annotation)."""
    pending = _pending_pods(pending_pods)
    rows = []
    for group in groups:
        meta, spec, status = _map(group.get("metadata")), _map(group.get("spec")), _map(group.get("status"))
        group_queue = str(spec.get("queue") or DEFAULT_QUEUE)
        if queue is not None and group_queue != queue:
            continue
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        rows.append({
            "namespace": namespace,
            "name": name,
            "queue": group_queue,
            "phase": str(status.get("phase") or "Pending"),
            "minMember": int(spec.get("minMember") or 1),
            "running": int(status.get("running") or 0),
            "pending": pending.get((namespace, name), 0),
            "succeeded": int(status.get("succeeded") or 0),
            "failed": int(status.get("failed") or 0),
            "age": age(meta.get("creationTimestamp"), now),
            "waiting": str(annotation_json(group, EXPLAIN_ANNOTATION).get("reason") or ""),
        })
    return sorted(rows, key=lambda row: (row["namespace"], row["name"]))
