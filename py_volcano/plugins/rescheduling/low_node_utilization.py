"""The lowNodeUtilization strategy: move pods off over-used nodes while under-used nodes have room.

Utilisation is, per node and for CPU and memory, what its pods request over its allocatable, in percent
(Volcano reads measured usage from a metrics source; py-volcano reads none). A node is under-used when
it is schedulable and every dimension is below `thresholds`; over-used when it is not under-used and
some dimension is above `targetThresholds`. When some but not all nodes are under-used and some are
over-used, the room the under-used nodes have up to `targetThresholds` is counted, the over-used nodes
are taken fullest first (CPU% + memory%), and on each the offered tasks go lowest priority first,
best-effort first within a priority, while the node is still at or above a target and room is left.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from py_volcano.api import CPU, MEMORY, NodeInfo, TaskInfo
from py_volcano.framework import Arguments, Session

__all__ = ["NAME", "LowNodeUtilization"]

NAME = "lowNodeUtilization"
_MEASURED = (CPU, MEMORY)
#: Threshold keys Volcano's configuration names that no code reads (it measures CPU and memory only).
_UNREAD_THRESHOLDS = ("pods", "pod")
_UNREAD_PARAMS = ("numberOfNodes", "thresholdPriority", "thresholdPriorityClassName", "nodeFit")


def _full() -> Mapping[str, float]:
    return MappingProxyType({CPU: 100.0, MEMORY: 100.0})


@dataclass(slots=True, frozen=True)
class LowNodeUtilization:
    """The strategy's parameters, in percent of each node's allocatable."""

    thresholds: Mapping[str, float] = field(default_factory=_full)
    """Below these (every dimension) a node is under-used; default 100 each."""
    target_thresholds: Mapping[str, float] = field(default_factory=_full)
    """Above one of these a node is over-used; under-used nodes take pods up to them; default 100 each."""

    @classmethod
    def parse(cls, params: Mapping[str, object], args: Arguments, path: str) -> LowNodeUtilization:
        """Read `thresholds` and `targetThresholds` (maps of cpu and memory to percentages) of the strategy
        at argument `path`; ConfigError on a value that is not a number."""
        for key in params:
            if key in _UNREAD_PARAMS:
                warnings.warn(
                    f"{args.owner}: argument {path}.{key} has no effect (Volcano reads it nowhere)", stacklevel=5
                )
            elif key not in ("thresholds", "targetThresholds"):
                warnings.warn(f"{args.owner}: argument {path}.{key}: unknown parameter ignored", stacklevel=5)
        return cls(
            thresholds=_percentages(params.get("thresholds"), args, f"{path}.thresholds"),
            target_thresholds=_percentages(params.get("targetThresholds"), args, f"{path}.targetThresholds"),
        )

    def victims(self, ssn: Session, tasks: list[TaskInfo]) -> list[TaskInfo]:
        """Choose the tasks to move off over-used nodes (Volcano's victimsFnForLnu)."""
        low: list[_NodeUsage] = []
        high: list[_NodeUsage] = []
        for node in ssn.node_list:
            usage = _NodeUsage(node)
            if self._is_low(usage):
                low.append(usage)
            elif self._is_high(usage):
                high.append(usage)
        if not low or len(low) == len(ssn.node_list) or not high:
            return []
        room = {
            name: sum(usage.amount(self.target_thresholds[name] - usage.percent[name], name) for usage in low)
            for name in _MEASURED
        }
        offered = {task.uid: task for task in tasks}
        victims: list[TaskInfo] = []
        for source in sorted(high, key=lambda u: -(u.percent[CPU] + u.percent[MEMORY])):
            for held in sorted(source.node.tasks.values(), key=_eviction_order):
                if not self._keeps_evicting(source, room):
                    break
                task = offered.get(held.uid)
                if task is None:
                    continue
                for name in _MEASURED:
                    room[name] -= task.resreq.get(name)
                    source.percent[name] -= source.percent_of(task.resreq.get(name), name)
                victims.append(task)
        return victims

    def _is_low(self, usage: _NodeUsage) -> bool:
        if usage.node.unschedulable:
            return False
        return all(usage.percent[name] < self.thresholds[name] for name in _MEASURED)

    def _is_high(self, usage: _NodeUsage) -> bool:
        return any(usage.percent[name] > self.target_thresholds[name] for name in _MEASURED)

    def _keeps_evicting(self, usage: _NodeUsage, room: Mapping[str, float]) -> bool:
        """The node is still at or above a target, and the under-used nodes have room in every dimension.

        Volcano stops only when the room is exactly zero, so it goes on evicting once the room is
        overdrawn; py-volcano stops there, as the descheduler's LowNodeUtilization does."""
        if not any(usage.percent[name] >= self.target_thresholds[name] for name in _MEASURED):
            return False
        return all(amount > 0 for amount in room.values())


class _NodeUsage:
    """A node's requested share of its allocatable, per measured dimension, in percent (lowered as
    victims are chosen)."""

    __slots__ = ("node", "percent")

    def __init__(self, node: NodeInfo) -> None:
        self.node = node
        self.percent = {name: self.percent_of(node.used.get(name), name) for name in _MEASURED}

    def percent_of(self, amount: float, name: str) -> float:
        capacity = self.node.allocatable.get(name)
        return amount * 100.0 / capacity if capacity > 0 else 0.0

    def amount(self, percent: float, name: str) -> float:
        return percent * self.node.allocatable.get(name) / 100.0


def _eviction_order(task: TaskInfo) -> tuple[int, bool, float, str]:
    """Lowest priority first; best-effort first within a priority; then youngest first (Volcano's order
    among equals is unspecified)."""
    return (task.priority, not task.best_effort, -task.creation, task.uid)


def _percentages(value: object, args: Arguments, path: str) -> Mapping[str, float]:
    """Read a threshold map: cpu and memory in percent (100 when absent); pods is accepted and unused."""
    if value is None:
        return _full()
    if not isinstance(value, Mapping):
        raise args.error(path, f"{value!r} is not a map of resource to percentage")
    found = dict(_full())
    for key, number in value.items():
        if isinstance(number, bool) or not isinstance(number, int | float):
            raise args.error(f"{path}.{key}", f"{number!r} is not a number")
        if key in _MEASURED:
            found[key] = float(number)
        elif key not in _UNREAD_THRESHOLDS:
            warnings.warn(
                f"{args.owner}: argument {path}.{key}: only cpu and memory are measured; ignored", stacklevel=6
            )
    return MappingProxyType(found)
