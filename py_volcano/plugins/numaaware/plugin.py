"""The numa-aware plugin: a node filter by the node's topology manager policy, a node score by the NUMA
nodes a task's CPUs would span, and the CPUs tasks placed in the cycle take, followed through events."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from py_volcano.api import NUMA_POLICY_ANNOTATION, NodeInfo, NumaTopology, TaskID, TaskInfo
from py_volcano.framework import Arguments, EventHandler, IndexArray, PredicateStatus, Session
from py_volcano.plugins.numaaware import policy
from py_volcano.plugins.numaaware.cpu_assignment import take_by_topology

__all__ = ["NAME", "NumaAwareArgs", "NumaAwarePlugin", "NumaState"]

NAME = "numa-aware"
MAX_NODE_SCORE = 100
STATIC = "static"


@dataclass(slots=True, frozen=True)
class NumaAwareArgs:
    """numa-aware's arguments."""

    weight: int = 1
    """`weight`: multiplies the node score (Volcano reads the bare key, not `numa-aware.weight`)."""

    @classmethod
    def parse(cls, args: Arguments) -> NumaAwareArgs:
        """Read the arguments; ConfigError on a weight that is not an integer."""
        return cls(weight=args.get_int("weight", 1))


def _task_policy(task: TaskInfo) -> str:
    """The topology policy the pod asks for; empty or `none` when it asks for none."""
    return task.annotations.get(NUMA_POLICY_ANNOTATION, "")


def _asks_policy(task: TaskInfo) -> bool:
    return _task_policy(task) not in ("", policy.NONE)


class NumaState:
    """Free CPUs per node for one session, and each task's CPUs per node as the filter chose them."""

    __slots__ = ("_pass_all", "assigned", "free", "node_list", "reserved", "weight")

    def __init__(self, node_list: list[NodeInfo], weight: int) -> None:
        self.node_list = node_list
        self.weight = weight
        self.free: dict[str, frozenset[int] | None] = {}
        """Per node with a Numatopology: its free CPUs (None when it reports no `cpu` in `numares`)."""
        self.reserved: dict[str, frozenset[int]] = {}
        self.assigned: dict[TaskID, dict[str, frozenset[int]]] = {}
        self._pass_all = np.ones(len(node_list), dtype=bool)
        for node in node_list:
            numa = node.numa
            if numa is None:
                continue
            cpu = numa.resources.get("cpu")
            self.free[node.name] = cpu.allocatable if cpu is not None else None
            taken = (
                take_by_topology(numa.cpus, frozenset(numa.cpus), numa.reserved_cpus) if numa.reserved_cpus else None
            )
            self.reserved[node.name] = taken or frozenset()

    # Filter -------------------------------------------------------------------------------------

    def batch_predicate(self, task: TaskInfo, for_preempt: bool) -> npt.NDArray[np.bool_]:
        """Per node of the session, whether the node suits the task (all do for a pod no CPU is pinned for)."""
        if task.pinned_cpus is None:
            return self._pass_all
        return np.fromiter((self.predicate(task, node) is None for node in self.node_list), bool, len(self.node_list))

    def predicate(self, task: TaskInfo, node: NodeInfo) -> PredicateStatus | None:
        """Volcano's numa-aware filter: the node's policies must suit the task, and under its topology
        manager policy every container must be admitted; the CPUs chosen are kept for the score and
        for the allocation."""
        if task.pinned_cpus is None:
            return None
        numa = node.numa
        refusal = self._policy_refusal(task, node.name, numa)
        if refusal is not None:
            return None if refusal == "" else PredicateStatus(refusal)
        assert numa is not None
        free = self.free.get(node.name)
        available = (free or frozenset()) - self.reserved.get(node.name, frozenset())
        numa_nodes = numa.numa_nodes()
        taken: set[int] = set()
        for container in task.pinned_cpus:
            hints = (
                None if container.cpus == 0 or free is None else policy.cpu_hints(numa.cpus, available, container.cpus)
            )
            best, admitted = policy.admit(numa.topology_manager_policy, numa_nodes, hints)
            if not admitted:
                return PredicateStatus(f"container {container.name} cannot be assigned by numa")
            assigned = _allocate(numa, best, available, container.cpus)
            taken |= assigned
            available -= assigned
        self.assigned.setdefault(task.uid, {})[node.name] = frozenset(taken)
        return None

    def _policy_refusal(self, task: TaskInfo, node: str, numa: NumaTopology | None) -> str | None:
        """Why the node's policies do not suit the task; "" when the filter lets the node pass unchecked;
        None when the containers are to be checked."""
        if not _asks_policy(task):
            if numa is None or numa.cpu_manager_policy != STATIC:
                return ""
            return "" if numa.topology_manager_policy in ("", policy.NONE) else None
        if numa is None:
            return "numa info is empty"
        if numa.cpu_manager_policy != STATIC:
            return "cpu manager policy isn't static"
        if _task_policy(task) != numa.topology_manager_policy:
            return f"task topology policy[{_task_policy(task)}] is different with node[{numa.topology_manager_policy}]"
        if not self.free.get(node):
            return "cpu allocatable map is empty"
        return None

    # Score --------------------------------------------------------------------------------------

    def score(self, task: TaskInfo, candidates: IndexArray) -> npt.NDArray[np.float64]:
        """Fewer NUMA nodes spanned scores higher: 100 less 100 x spanned / the most any candidate spans,
        times the weight; 0 everywhere for a task that asks no topology policy."""
        scores = np.zeros(len(candidates))
        assigned = self.assigned.get(task.uid)
        if assigned is None or not _asks_policy(task):
            return scores
        spans = [_span(self.node_list[int(row)], assigned) for row in candidates]
        most = max(spans, default=0)
        for i, span in enumerate(spans):
            normalised = MAX_NODE_SCORE if most == 0 else MAX_NODE_SCORE - MAX_NODE_SCORE * span // most
            scores[i] = normalised * self.weight
        return scores

    # Events -------------------------------------------------------------------------------------

    def allocated(self, task: TaskInfo) -> None:
        """A task was placed: its CPUs on the node are no longer free."""
        cpus = self.assigned.get(task.uid, {}).get(task.node_name)
        free = self.free.get(task.node_name)
        if cpus is not None and free is not None:
            self.free[task.node_name] = free - cpus

    def deallocated(self, task: TaskInfo) -> None:
        """A placement was undone (or the task evicted): its CPUs are free again."""
        cpus = self.assigned.get(task.uid, {}).get(task.node_name)
        free = self.free.get(task.node_name)
        if cpus is not None and free is not None:
            self.free[task.node_name] = free | cpus


def _allocate(numa: NumaTopology, best: policy.TopologyHint, available: frozenset[int], request: int) -> frozenset[int]:
    """The CPUs a container takes: first those on the best hint's NUMA nodes, then any; none when the
    request cannot be met (Volcano's cpu manager provider)."""
    result: frozenset[int] = frozenset()
    if best.affinity is not None:
        aligned = available & numa.cpus_in_numa(policy.nodes_of(best.affinity))
        taken = take_by_topology(numa.cpus, aligned, min(request, len(aligned)))
        if taken is None:
            return frozenset()
        result = taken
    rest = take_by_topology(numa.cpus, available - result, request - len(result))
    return frozenset() if rest is None else result | rest


def _span(node: NodeInfo, assigned: dict[str, frozenset[int]]) -> int:
    """How many NUMA nodes the task's CPUs on `node` span."""
    numa = node.numa
    cpus = assigned.get(node.name, frozenset())
    if numa is None:
        return 0
    return len({numa.cpus[cpu].numa if cpu in numa.cpus else 0 for cpu in cpus})


class NumaAwarePlugin:
    """Filters and scores nodes by NUMA topology for pods whose CPUs the static CPU manager pins."""

    name = NAME

    def __init__(self, args: NumaAwareArgs) -> None:
        self.args = args
        self.state: NumaState | None = None

    def on_session_open(self, ssn: Session) -> None:
        """Take every node's free CPUs; register the filter, the score and the event handlers."""
        self.state = state = NumaState(ssn.node_list, self.args.weight)
        ssn.add_batch_predicate_fn(NAME, state.batch_predicate)
        ssn.add_predicate_fn(NAME, state.predicate)
        ssn.add_batch_node_order_fn(NAME, state.score)
        ssn.add_event_handler(EventHandler(allocate=state.allocated, deallocate=state.deallocated))

    def on_session_close(self, ssn: Session) -> None:
        """Drop the session state."""
        self.state = None
