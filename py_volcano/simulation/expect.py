"""Check a scenario's `expect` block against what the simulated cycles did; one line per failure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from py_volcano.api import CPU, MEMORY, QueueFigures, Resource
from py_volcano.api.quantity import parse_quantity
from py_volcano.simulation.cluster import InMemoryCluster
from py_volcano.simulation.scenario import Expect

__all__ = ["Outcome", "check"]

_RESOURCE_FIELDS = {
    "deserved": "deserved",
    "allocated": "allocated",
    "request": "request",
    "realCapability": "real_capability",
}


@dataclass(slots=True)
class Outcome:
    """What the cycles did, as the expectations see it."""

    binds: dict[str, str] = field(default_factory=dict)
    evictions: list[str] = field(default_factory=list)
    pod_groups: dict[str, str] = field(default_factory=dict)
    queues: dict[str, QueueFigures] = field(default_factory=dict)


def _node_of(cluster: InMemoryCluster, key: str) -> str:
    pod = cluster.pod(key)
    return str((pod or {}).get("spec", {}).get("nodeName") or "")


def _check_pods(expect: Expect, outcome: Outcome, cluster: InMemoryCluster) -> list[str]:
    failures = []
    for key, node in (expect.bound or {}).items():
        actual = _node_of(cluster, key)
        if not actual:
            failures.append(f"bound: {key} expected on {node}, but it is not bound")
        elif node != "*" and actual != node:
            failures.append(f"bound: {key} expected on {node}, but it is on {actual}")
    for key in expect.unbound or []:
        actual = _node_of(cluster, key)
        if actual:
            failures.append(f"unbound: {key} expected unbound, but it is on {actual}")
    if expect.bound_count is not None and len(outcome.binds) != expect.bound_count:
        failures.append(
            f"boundCount: expected {expect.bound_count}, got {len(outcome.binds)} ({sorted(outcome.binds)})"
        )
    evicted = set(outcome.evictions)
    if expect.evicted is not None:
        wanted = set(expect.evicted)
        if missing := sorted(wanted - evicted):
            failures.append(f"evicted: expected {missing} evicted, they were not")
        if expect.evicted_at_least is None and (extra := sorted(evicted - wanted)):
            failures.append(f"evicted: unexpected evictions {extra}")
    if missing := sorted(set(expect.evicted_at_least or ()) - evicted):
        failures.append(f"evictedAtLeast: expected {missing} evicted, they were not")
    if expect.evicted_count is not None and len(evicted) != expect.evicted_count:
        failures.append(f"evictedCount: expected {expect.evicted_count}, got {len(evicted)} ({sorted(evicted)})")
    for key, phase in (expect.pod_group_phase or {}).items():
        actual = outcome.pod_groups.get(key, "<no such PodGroup>")
        if actual != phase:
            failures.append(f"podGroupPhase: {key} expected {phase}, got {actual}")
    return failures


def _tolerance(name: str, expected: float) -> float:
    floor = {CPU: 1.0, MEMORY: float(2**20)}.get(name, 1.0)
    return max(abs(expected) * 0.01, floor)


def _expected_value(name: str, quantity: object) -> float:
    value = parse_quantity(quantity)
    return value if name == MEMORY else value * 1000


def _check_resource(queue: str, field_name: str, expected: Mapping[str, Any], actual: Resource | None) -> list[str]:
    failures = []
    for name, quantity in expected.items():
        want = _expected_value(name, quantity)
        have = actual.get(name) if actual is not None else 0.0
        if abs(have - want) > _tolerance(name, want):
            shown = actual.to_quantities().get(name, "0") if actual is not None else "unset"
            failures.append(f"queues: {queue}.{field_name}.{name} expected {quantity}, got {shown}")
    return failures


def _check_queues(expect: Expect, outcome: Outcome) -> list[str]:
    failures = []
    for queue, fields in (expect.queues or {}).items():
        figures = outcome.queues.get(queue)
        if figures is None:
            failures.append(f"queues: {queue} does not exist")
            continue
        for field_name, value in fields.items():
            if field_name in _RESOURCE_FIELDS:
                actual = getattr(figures, _RESOURCE_FIELDS[field_name])
                failures += _check_resource(queue, field_name, value or {}, actual)
            elif field_name == "share":
                if abs(figures.share - float(value)) > 0.01:
                    failures.append(f"queues: {queue}.share expected {value}, got {figures.share:.4f}")
            elif field_name == "overused":
                if figures.overused != bool(value):
                    failures.append(f"queues: {queue}.overused expected {value}, got {figures.overused}")
            else:
                failures.append(f"queues: {queue}.{field_name} is not a queue figure")
    return failures


def check(expect: Expect, outcome: Outcome, cluster: InMemoryCluster) -> list[str]:
    """Return one human-readable line per expectation that does not hold."""
    return _check_pods(expect, outcome, cluster) + _check_queues(expect, outcome)
