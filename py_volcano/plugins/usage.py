"""usage: keep tasks off nodes whose measured load is over a threshold, and prefer the least loaded node
(Volcano's usage plugin).

The load is what the cache's poller last read from Prometheus (`NodeInfo.usage`: CPU and memory percent
averaged over 10 minutes). Usage older than five minutes, or never measured, is stale: the node passes
the filter and scores 0.

* Filter: a node whose CPU usage is above `thresholds.cpu`, or memory usage above `thresholds.mem`
  (percent, 80 each), is unschedulable for every task, and no eviction helps.
* Score: (real usage + the session's shadow estimate) / capacity gives a composite utilisation per
  dimension, capped at 1; the score is the weighted mean of (1 - utilisation) with `cpu.weight` and
  `memory.weight`, times 100 and `usage.weight`.
* Shadow estimates cover pods the metrics cannot show yet: at session open, every task on a node that
  is Allocated, Binding or Bound, or Running for less than `metrics.interval`; then every task the
  session allocates (and removes it again on deallocate). A pod is estimated as
  (request x `estimator.request_ratio` + (limit - request) x `estimator.burst_ratio`) x risk, capped at
  its limit; a best-effort pod as `estimator.be_cpu` / `estimator.be_mem` x risk. Risk is
  `estimator.risk_factor` once the node's weighted composite load reaches `estimator.risk_threshold`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeVar

from py_volcano.api import NodeInfo, TaskID, TaskInfo, TaskStatus, parse_quantity
from py_volcano.framework import Arguments, EventHandler, PredicateStatus, Session

__all__ = ["NAME", "UsageArgs", "UsagePlugin", "UsageState", "composite", "estimate", "new"]

N = TypeVar("N", int, float)

NAME = "usage"
MAX_NODE_SCORE = 100.0
METRICS_ACTIVE = timedelta(minutes=5)
"""Usage older than this is stale (Volcano's MetricsActiveTime)."""
CPU_OVER = "the CPU load of the node exceeds the upper limit."
MEMORY_OVER = "the memory load of the node exceeds the upper limit."
MI = 1024 * 1024
_TRACKED = frozenset({TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND})


@dataclass(slots=True, frozen=True)
class UsageArgs:
    """usage's arguments, read as Volcano reads them: a value out of range keeps the default."""

    usage_weight: int = 5
    """`usage.weight`: multiplies the score; a negative value keeps 5."""
    cpu_weight: int = 1
    """`cpu.weight`: the CPU share of the score; a negative value keeps 1."""
    memory_weight: int = 1
    """`memory.weight`: the memory share of the score; a negative value keeps 1."""
    cpu_threshold: float = 80.0
    """`thresholds.cpu`: CPU percent above which the node takes no task (an integer 0-100)."""
    memory_threshold: float = 80.0
    """`thresholds.mem`: memory percent above which the node takes no task (an integer 0-100)."""
    request_ratio: float = 0.7
    """`estimator.request_ratio` (0-1): the share of a pod's request its shadow estimate counts."""
    burst_ratio: float = 0.0
    """`estimator.burst_ratio` (0-1): the share of limit - request counted."""
    risk_threshold: float = 0.6
    """`estimator.risk_threshold` (0-1): the composite load from which `risk_factor` applies."""
    risk_factor: float = 1.2
    """`estimator.risk_factor` (>= 1): multiplies estimates on a node past `risk_threshold`."""
    be_cpu: float = 250.0
    """`estimator.be_cpu`: a best-effort pod's CPU estimate, milli-CPU (a quantity, or an int in milli)."""
    be_memory: float = 200.0 * MI
    """`estimator.be_mem`: a best-effort pod's memory estimate, bytes (a quantity, or an int in MiB)."""

    @classmethod
    def parse(cls, args: Arguments) -> UsageArgs:
        """Read the arguments; ConfigError on a value of the wrong type, the defaults for one out of range."""
        thresholds = _section(args, "thresholds")
        estimator = _section(args, "estimator")
        base = cls()
        parsed = cls(
            usage_weight=_at_least(args.get_int("usage.weight", base.usage_weight), 0, base.usage_weight),
            cpu_weight=_at_least(args.get_int("cpu.weight", base.cpu_weight), 0, base.cpu_weight),
            memory_weight=_at_least(args.get_int("memory.weight", base.memory_weight), 0, base.memory_weight),
            cpu_threshold=_within(thresholds.get_int("cpu", 80), 0, 100, base.cpu_threshold),
            memory_threshold=_within(thresholds.get_int("mem", 80), 0, 100, base.memory_threshold),
            request_ratio=_within(estimator.get_float("request_ratio", 0.7), 0, 1, base.request_ratio),
            burst_ratio=_within(estimator.get_float("burst_ratio", 0.0), 0, 1, base.burst_ratio),
            risk_threshold=_within(estimator.get_float("risk_threshold", 0.6), 0, 1, base.risk_threshold),
            risk_factor=_at_least(estimator.get_float("risk_factor", 1.2), 1, base.risk_factor),
            be_cpu=_best_effort(estimator, "be_cpu", base.be_cpu, milli=True),
            be_memory=_best_effort(estimator, "be_mem", base.be_memory, milli=False),
        )
        for section in (thresholds, estimator):
            for key in section.unread():
                warnings.warn(f"{section.owner}: unknown argument {key!r} ignored", stacklevel=6)
        return parsed


def _section(args: Arguments, key: str) -> Arguments:
    value = args.get_value(key)
    if value is not None and not isinstance(value, dict):
        raise args.error(key, f"{value!r} is not a map")
    return Arguments(value or {}, owner=f"{args.owner}: argument {key}")


def _at_least(value: N, low: float, default: N) -> N:
    return value if value >= low else default


def _within(value: float, low: float, high: float, default: float) -> float:
    return float(value) if low <= value <= high else default


def _best_effort(section: Arguments, key: str, default: float, *, milli: bool) -> float:
    """A quantity string (`250m`, `200Mi`), or a bare integer in milli-CPU or MiB, as Volcano reads it."""
    value = section.get_value(key)
    if value is None:
        return default
    if isinstance(value, int) and not isinstance(value, bool):
        return default if value < 0 else float(value) * (1 if milli else MI)
    try:
        amount = parse_quantity(value) if isinstance(value, str) else -1.0
    except ValueError:
        raise section.error(key, f"{value!r} is not a quantity") from None
    if amount < 0:
        return default
    return amount * 1000 if milli else amount


def composite(real_percent: float, shadow: float, capacity: float) -> float:
    """Return (real load + shadow estimate) / capacity, within [0, 1]; 0 for a node without capacity."""
    if capacity <= 0:
        return 0.0
    return min(1.0, max(0.0, (real_percent / 100.0 * capacity + shadow) / capacity))


def estimate(request: float, limit: float, request_ratio: float, burst_ratio: float, risk: float) -> float:
    """Return one dimension of a pod's estimate, within [0, limit] (limit is the request when absent or lower)."""
    request = max(request, 0.0)
    ceiling = request if limit <= 0 or limit < request else limit
    return min(ceiling, max(0.0, (request * request_ratio + (ceiling - request) * burst_ratio) * risk))


class UsageState:
    """One session's view: the cycle's time, the thresholds, and the shadow estimates per node and task."""

    __slots__ = ("args", "cpu_shadow", "interval", "memory_shadow", "nodes", "now", "snapshots")

    def __init__(
        self, args: UsageArgs, nodes: Mapping[str, NodeInfo], *, now: datetime | None, interval: timedelta
    ) -> None:
        self.args = args
        self.nodes = nodes
        self.now = now
        self.interval = interval
        self.cpu_shadow: dict[str, float] = {}
        self.memory_shadow: dict[str, float] = {}
        self.snapshots: dict[TaskID, tuple[str, float, float]] = {}

    def is_fresh(self, node: NodeInfo) -> bool:
        """Whether the node's usage was measured within the last five minutes."""
        usage = node.usage
        return usage is not None and self.now is not None and self.now - usage.metrics_time <= METRICS_ACTIVE

    def predicate(self, task: TaskInfo, node: NodeInfo) -> PredicateStatus | None:
        """Refuse a node whose fresh usage is above a threshold; stale usage passes."""
        if node.usage is None or not self.is_fresh(node):
            return None
        if node.usage.cpu > self.args.cpu_threshold:
            return PredicateStatus(CPU_OVER)
        if node.usage.memory > self.args.memory_threshold:
            return PredicateStatus(MEMORY_OVER)
        return None

    def score(self, task: TaskInfo, node: NodeInfo) -> float:
        """Volcano's usage score of the node; 0 when its usage is stale."""
        if not self.is_fresh(node):
            return 0.0
        args = self.args
        total = args.cpu_weight + args.memory_weight
        if total == 0:
            return 0.0
        cpu, memory = self._composites(node)
        mean = ((1.0 - cpu) * args.cpu_weight + (1.0 - memory) * args.memory_weight) / total
        return mean * MAX_NODE_SCORE * args.usage_weight

    def _composites(self, node: NodeInfo) -> tuple[float, float]:
        usage = node.usage
        cpu, memory = (usage.cpu, usage.memory) if usage is not None else (0.0, 0.0)
        # A Node without status.capacity (a hand-written manifest) is measured against its allocatable.
        cpu_capacity = node.capacity.milli_cpu or node.allocatable.milli_cpu
        memory_capacity = node.capacity.memory or node.allocatable.memory
        return (
            composite(cpu, self.cpu_shadow.get(node.name, 0.0), cpu_capacity),
            composite(memory, self.memory_shadow.get(node.name, 0.0), memory_capacity),
        )

    def _risk(self, node: NodeInfo) -> float:
        args = self.args
        total = args.cpu_weight + args.memory_weight
        cpu, memory = self._composites(node)
        load = (cpu * args.cpu_weight + memory * args.memory_weight) / total if total else 0.0
        return args.risk_factor if load >= args.risk_threshold else 1.0

    def add(self, task: TaskInfo, node: NodeInfo) -> None:
        """Count the task's estimate on the node (replacing an earlier one of the same task)."""
        self.remove(task)
        risk = self._risk(node)
        args = self.args
        if task.best_effort:
            cpu, memory = args.be_cpu * risk, args.be_memory * risk
        else:
            # TaskInfo carries requests only: the limit is taken as the request (burst_ratio adds nothing).
            request = task.resreq
            cpu = estimate(request.milli_cpu, 0.0, args.request_ratio, args.burst_ratio, risk)
            memory = estimate(request.memory, 0.0, args.request_ratio, args.burst_ratio, risk)
        self.cpu_shadow[node.name] = self.cpu_shadow.get(node.name, 0.0) + cpu
        self.memory_shadow[node.name] = self.memory_shadow.get(node.name, 0.0) + memory
        self.snapshots[task.uid] = (node.name, cpu, memory)

    def allocated(self, task: TaskInfo) -> None:
        """Count a task the session just placed (allocated or pipelined) on its node."""
        node = self.nodes.get(task.node_name)
        if node is not None:
            self.add(task, node)

    def remove(self, task: TaskInfo) -> None:
        """Take back exactly what `add` counted for the task; a task not counted is ignored."""
        held = self.snapshots.pop(task.uid, None)
        if held is None:
            return
        name, cpu, memory = held
        self.cpu_shadow[name] = max(0.0, self.cpu_shadow[name] - cpu)
        self.memory_shadow[name] = max(0.0, self.memory_shadow[name] - memory)

    def is_unseen(self, task: TaskInfo) -> bool:
        """Whether the task holds the node but its load may not show in the metrics yet."""
        if not task.node_name:
            return False
        if task.status in _TRACKED:
            return True
        if task.status is not TaskStatus.RUNNING:
            return False
        if task.scheduled_at is None or self.now is None:
            return True
        return self.now.timestamp() - task.scheduled_at < self.interval.total_seconds()


class UsagePlugin:
    """Filter and score nodes by their measured load."""

    name = NAME

    def __init__(self, args: UsageArgs) -> None:
        self.args = args
        self.state: UsageState | None = None

    def on_session_open(self, ssn: Session) -> None:
        """Warm the shadow estimates from the snapshot, then register the filter, the score and the events."""
        measured = any(node.usage is not None for node in ssn.nodes.values())
        self.state = state = UsageState(
            self.args,
            ssn.nodes,
            now=ssn.now if measured else None,
            interval=timedelta(seconds=ssn.conf.metrics.interval),
        )
        for node in ssn.nodes.values():
            for task in node.tasks.values():
                if state.is_unseen(task):
                    state.add(task, node)
        ssn.add_event_handler(EventHandler(allocate=state.allocated, deallocate=state.remove))
        ssn.add_predicate_fn(NAME, state.predicate)
        ssn.add_node_order_fn(NAME, state.score)

    def on_session_close(self, ssn: Session) -> None:
        """Drop the session state."""
        self.state = None


def new(args: UsageArgs) -> UsagePlugin:
    """Build the plugin."""
    return UsagePlugin(args)

