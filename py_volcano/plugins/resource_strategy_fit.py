"""resource-strategy-fit: per-resource least/most-allocated node scores, scarce-resource avoidance and a
proportional-reservation filter (Volcano's resource-strategy-fit).

Score, per node (docs/plugins.md, "resource-strategy-fit"): for each resource the task requests that
has a strategy (the pod's annotations `volcano.sh/resource-strategy-scoring-type` and
`volcano.sh/resource-strategy-weight`, else the `resources` argument: an exact name, else the longest
`prefix/*` pattern), LeastAllocated adds (allocatable - used - request) x weight / allocatable and
MostAllocated (used + request) x weight / allocatable; the sum over the weights, times 100 and
`resourceStrategyFitWeight`. A node the request would overflow in a weighed resource scores 0.
`sra` adds, on nodes that have every requested resource, 100 x `sra.weight` x (1 - the share of the
`sra.resources` weights the node has): nodes without scarce resources are preferred for tasks that do
not need them. `proportional` refuses a node whose idle CPU or memory, after a task that asks for none
of the listed resources, would fall below what the node's idle units of those resources reserve.
Scores are vectorised over the candidate rows with the session's `NodeArrays` (used = allocatable - idle).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from py_volcano.api import CPU, MEMORY, NodeArrays, NodeInfo, TaskID, TaskInfo
from py_volcano.framework import Arguments, IndexArray, PredicateStatus, Session

__all__ = [
    "LEAST_ALLOCATED",
    "MOST_ALLOCATED",
    "NAME",
    "ResourceStrategy",
    "ResourceStrategyFitArgs",
    "ResourceStrategyFitPlugin",
    "new",
]

NAME = "resource-strategy-fit"
LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
SCORING_TYPE = "volcano.sh/resource-strategy-scoring-type"
SCORING_WEIGHT = "volcano.sh/resource-strategy-weight"
MAX_NODE_SCORE = 100.0

FloatArray = npt.NDArray[np.float64]


@dataclass(slots=True, frozen=True)
class ResourceStrategy:
    """How one resource is scored: `type` (LeastAllocated or MostAllocated) and `weight`."""

    kind: str = LEAST_ALLOCATED
    weight: int = 1


_DEFAULT_RESOURCES = MappingProxyType({CPU: ResourceStrategy(), MEMORY: ResourceStrategy()})


@dataclass(slots=True, frozen=True)
class ResourceStrategyFitArgs:
    """resource-strategy-fit's arguments, read as Volcano reads them."""

    weight: int = 10
    """`resourceStrategyFitWeight`: multiplies the strategy score; negative becomes 10, 0 drops it."""
    resources: Mapping[str, ResourceStrategy] = field(default_factory=lambda: _DEFAULT_RESOURCES)
    """`resources`: name (or `prefix/*`) -> `{type, weight}`; a weight <= 0 becomes 1, an unknown type
    LeastAllocated, a pattern other than one trailing `*` is dropped. Unset: cpu and memory,
    LeastAllocated, weight 1."""
    sra_weight: int = 0
    """`sra.weight` when `sra.enable` is true (else 0, no sra score)."""
    sra_resources: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    """`sra.resources` (comma list), each weighted by `sra.resourceWeight.<name>` (1; negative becomes 1)."""
    proportional: Mapping[str, tuple[float, float]] | None = None
    """When `proportional.enable`: for each of `proportional.resources`, the CPU (cores) and memory (GB,
    10^9 bytes) one unit of it reserves: `proportional.resourceProportion.<name>.cpu` and `.memory` (1;
    negative becomes 1)."""

    @classmethod
    def parse(cls, args: Arguments) -> ResourceStrategyFitArgs:
        """Read the arguments; ConfigError on a value of the wrong type."""
        weight = args.get_int("resourceStrategyFitWeight", 10)
        sra = _section(args, "sra")
        proportional = _section(args, "proportional")
        sra_weight, sra_resources = 0, dict[str, int]()
        if sra.get_bool("enable", False):
            sra_weight = sra.get_int("weight", 0)
            weights = _section(sra, "resourceWeight")
            for name in _names(sra.get_str("resources", "")):
                resource_weight = weights.get_int(name, 1)
                sra_resources[name] = resource_weight if resource_weight >= 0 else 1
        rates: dict[str, tuple[float, float]] | None = None
        if proportional.get_bool("enable", False):
            rates = {}
            proportion = _section(proportional, "resourceProportion")
            for name in _names(proportional.get_str("resources", "")):
                rates[name] = (
                    _at_least_zero(proportion.get_float(f"{name}.cpu", 1.0), 1.0),
                    _at_least_zero(proportion.get_float(f"{name}.memory", 1.0), 1.0),
                )
        return cls(
            weight=weight if weight >= 0 else 10,
            resources=_resources(args),
            sra_weight=sra_weight,
            sra_resources=MappingProxyType(sra_resources),
            proportional=MappingProxyType(rates) if rates is not None else None,
        )


def _section(args: Arguments, key: str) -> Arguments:
    """The map under `key` as Arguments of its own (empty when absent); ConfigError when not a map."""
    value = args.get_value(key)
    if value is not None and not isinstance(value, Mapping):
        raise args.error(key, f"{value!r} is not a map")
    return Arguments(value or {}, owner=f"{args.owner}: argument {key}")


def _names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def _at_least_zero(value: float, fallback: float) -> float:
    return value if value >= 0 else fallback


def _resources(args: Arguments) -> Mapping[str, ResourceStrategy]:
    """The `resources` map, Volcano's corrections applied; the default when unset or empty."""
    section = _section(args, "resources")
    resources: dict[str, ResourceStrategy] = {}
    written = section.keys()
    for name in written:
        entry = _section(section, name)
        if "*" in name and (name == "*" or not name.endswith("*") or name.count("*") != 1):
            warnings.warn(
                f"{section.owner}: pattern {name!r} ignored: only one trailing asterisk is supported (`vendor.com/*`)",
                stacklevel=3,
            )
            continue
        kind = entry.get_str("type", LEAST_ALLOCATED)
        weight = entry.get_int("weight", 1)
        resources[name] = ResourceStrategy(
            kind=kind if kind in (LEAST_ALLOCATED, MOST_ALLOCATED) else LEAST_ALLOCATED,
            weight=weight if weight > 0 else 1,
        )
    if not written:
        return _DEFAULT_RESOURCES
    return MappingProxyType(resources)


def strategy_for(name: str, resources: Mapping[str, ResourceStrategy]) -> ResourceStrategy | None:
    """The strategy of a resource: its exact entry, else the `prefix*` pattern with the longest prefix."""
    exact = resources.get(name)
    if exact is not None:
        return exact
    best: tuple[int, ResourceStrategy] | None = None
    for pattern, strategy in resources.items():
        prefix = pattern[:-1]
        if pattern.endswith("*") and name.startswith(prefix) and (best is None or len(prefix) > best[0]):
            best = (len(prefix), strategy)
    return best[1] if best is not None else None


class ResourceStrategyFitPlugin:
    """Node scores by resource strategy and sra; the proportional filter."""

    name = NAME

    def __init__(self, args: ResourceStrategyFitArgs) -> None:
        self.args = args
        self.arrays: NodeArrays | None = None
        self.strategies: dict[TaskID, list[tuple[str, ResourceStrategy]] | None] = {}

    def on_session_open(self, ssn: Session) -> None:
        """Register the proportional filter when enabled, and the score unless both weights are <= 0."""
        self.arrays = ssn.arrays
        self.strategies = {}
        if self.args.proportional is not None:
            ssn.add_predicate_fn(NAME, self.proportional)
        if self.args.weight > 0 or self.args.sra_weight > 0:
            ssn.add_batch_node_order_fn(NAME, self.score)

    def on_session_close(self, ssn: Session) -> None:
        """Drop the session state."""
        self.arrays = None
        self.strategies = {}

    def task_strategies(self, task: TaskInfo) -> list[tuple[str, ResourceStrategy]] | None:
        """The (resource, strategy) pairs scored for the task; None when its annotations are unusable (score 0)."""
        if task.uid not in self.strategies:
            self.strategies[task.uid] = _task_strategies(task, self.args.resources)
        return self.strategies[task.uid]

    def score(self, task: TaskInfo, rows: IndexArray) -> FloatArray:
        """The strategy score plus the sra score of each candidate row."""
        assert self.arrays is not None
        total: FloatArray = np.zeros(len(rows))
        if self.args.weight > 0:
            total += self._strategy_score(task, rows, self.arrays)
        if self.args.sra_weight > 0:
            total += self._sra_score(task, rows, self.arrays)
        return total

    def _strategy_score(self, task: TaskInfo, rows: IndexArray, arrays: NodeArrays) -> FloatArray:
        score: FloatArray = np.zeros(len(rows))
        strategies = self.task_strategies(task)
        if strategies is None:
            return score
        overflow = np.zeros(len(rows), dtype=bool)
        weight_sum = 0
        for name, strategy in strategies:
            weight_sum += strategy.weight
            column = arrays.columns.get(name)
            if strategy.weight == 0 or column is None:
                continue
            capacity = arrays.allocatable[rows, column]
            used_finally = capacity - arrays.idle[rows, column] + task.resreq.get(name)
            if strategy.kind not in (MOST_ALLOCATED, LEAST_ALLOCATED):
                continue  # a pod's unknown scoring type scores 0 but keeps its weight, as in Volcano
            has = capacity != 0
            safe = np.where(has, capacity, 1.0)
            overflow |= has & (used_finally > capacity)
            counted = used_finally if strategy.kind == MOST_ALLOCATED else capacity - used_finally
            score += np.where(has, counted * strategy.weight / safe, 0.0)
        if weight_sum > 0:
            score /= weight_sum
        score *= MAX_NODE_SCORE * self.args.weight
        score[overflow] = 0.0
        return score

    def _sra_score(self, task: TaskInfo, rows: IndexArray, arrays: NodeArrays) -> FloatArray:
        has_all = np.ones(len(rows), dtype=bool)
        for name in task.resreq.names():
            column = arrays.columns.get(name)
            has_all &= arrays.allocatable[rows, column] != 0 if column is not None else False
        held: FloatArray = np.zeros(len(rows))
        for name, weight in self.args.sra_resources.items():
            column = arrays.columns.get(name)
            if column is not None:
                held += np.where(arrays.allocatable[rows, column] > 0, float(weight), 0.0)
        weight_sum = sum(self.args.sra_resources.values())
        score = 1.0 - held / weight_sum if weight_sum > 0 else held
        return np.where(has_all, score * MAX_NODE_SCORE * self.args.sra_weight, 0.0)

    def proportional(self, task: TaskInfo, node: NodeInfo) -> PredicateStatus | None:
        """Refuse the node when, after a task asking for none of the listed resources, its idle CPU or
        memory would fall below what its idle units of a listed resource reserve."""
        rates = self.args.proportional or {}
        if any(task.resreq.scalars.get(name, 0.0) > 0 for name in rates):
            return None
        idle = node.idle
        for name, (cpu, memory) in rates.items():
            units = idle.scalars.get(name)
            if units is None:
                continue
            if idle.milli_cpu - task.resreq.milli_cpu < units * cpu or idle.memory - task.resreq.memory < (
                units * memory * 1e6
            ):
                return PredicateStatus(f"proportional of resource {name} check failed")
        return None


def _task_strategies(
    task: TaskInfo, resources: Mapping[str, ResourceStrategy]
) -> list[tuple[str, ResourceStrategy]] | None:
    """The pod's own strategy (annotations) or the configured ones, for each resource it requests."""
    kind = task.annotations.get(SCORING_TYPE, "")
    if not kind:
        found = ((name, strategy_for(name, resources)) for name in task.resreq.names())
        return [(name, strategy) for name, strategy in found if strategy is not None]
    try:
        weights = json.loads(task.annotations.get(SCORING_WEIGHT, ""))
    except ValueError:
        return None
    if not isinstance(weights, dict) or not all(type(w) is int for w in weights.values()):
        return None
    return [(name, ResourceStrategy(kind, weights[name])) for name in task.resreq.names() if name in weights]


def new(args: ResourceStrategyFitArgs) -> ResourceStrategyFitPlugin:
    """Build the plugin."""
    return ResourceStrategyFitPlugin(args)
