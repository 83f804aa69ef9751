"""PredicatesPlugin: wires the static filters, host ports, inter-pod affinity and topology spread into a
session.

The batch predicate answers for every node at once: the static mask is cached per pod shape, and the
dynamic checks (host ports, inter-pod affinity, topology spread) run only when the task has host ports,
affinity terms or DoNotSchedule spread constraints, or some placed pod has required anti-affinity.
The per-node predicate gives the same verdict with a reason, for `explain` and for callers that ask
about one node.
"""

from __future__ import annotations

from collections.abc import Hashable

import structlog

from py_volcano.api import JobInfo, MaskArray, NodeInfo, TaskID, TaskInfo
from py_volcano.framework import CycleState, EventHandler, PredicateStatus, ReleasedTasks, Session, SpecState
from py_volcano.plugins.predicates.args import PredicatesArgs
from py_volcano.plugins.predicates.node_filters import StaticFilters, node_filter_failure
from py_volcano.plugins.predicates.placed import AffinityTerms, PlacedPods
from py_volcano.plugins.predicates.pod_affinity import AffinityCounts
from py_volcano.plugins.predicates.simulate import SimulatedPods, simulated_failure
from py_volcano.plugins.predicates.topology_spread import SpreadVerdict

__all__ = ["NAME", "NODE_PORTS", "PredicateState", "PredicatesPlugin", "new"]

NAME = "predicates"
#: The plugin memory's name for the `StaticFilters` kept while the node specs stay the same.
_STATIC = f"{NAME}/static"
NODE_PORTS = "node(s) didn't have free ports for the requested pod ports"
UNALLOCATED_CLAIMS = (
    "pod uses ResourceClaims ({claims}): py-volcano does not allocate Dynamic Resource Allocation claims "
    "(predicate.DynamicResourceAllocationEnable)"
)

log = structlog.get_logger(__name__)


class PredicateState:
    """One session's predicate state: static masks per shape, the placed pods, affinity counts per task.

    The placed pods are indexed only when some check first needs them (a task with host ports, affinity
    terms or spread constraints, or a placed pod with required anti-affinity): a cycle of plain pods in
    a large cluster does not index its 150,000 running pods (`ReleasedTasks`).
    """

    __slots__ = ("_counts", "_placed", "_placed_anti", "_released", "_spread", "_terms", "ssn", "static", "switches")

    def __init__(self, ssn: Session, switches: PredicatesArgs) -> None:
        self.ssn = ssn
        self.switches = switches
        nodes = ssn.node_list
        kept = ssn.memory.recall(_STATIC, SpecState)
        self.static = kept.take(nodes, switches, lambda: StaticFilters(nodes, switches)).forget_tasks()
        self._terms = AffinityTerms()
        self._placed: PlacedPods | None = None
        self._released = ReleasedTasks()
        #: Whether some placed pod may have required anti-affinity (then every task's check needs the index).
        self._placed_anti = any(
            task.affinity and self._terms.required(task)[1]
            for node in ssn.node_list
            if node.affine
            for task in node.tasks.values()
        )
        self._counts: dict[TaskID, tuple[int, AffinityCounts]] = {}
        self._spread: dict[TaskID, tuple[int, SpreadVerdict]] = {}

    @property
    def placed(self) -> PlacedPods:
        """The placed pods, indexed at first use."""
        if self._placed is None:
            placed = PlacedPods(self._terms, self.static.labels)
            for row, task, terminating in self._released.placed(self.ssn.node_list):
                placed.add(task, row, terminating=terminating)
            self._placed = placed
        return self._placed

    def allocated(self, task: TaskInfo) -> None:
        """Event handler: a task was allocated or pipelined onto `task.node_name`."""
        self._released.allocated(task)
        if task.affinity and self._terms.required(task)[1]:
            self._placed_anti = True
        node = self.ssn.nodes.get(task.node_name)
        if node is not None and self._placed is not None:
            self._placed.add(task, node.index)

    def deallocated(self, task: TaskInfo) -> None:
        """Event handler: a task was evicted or its allocation discarded."""
        self._released.deallocated(task)
        if self._placed is not None:
            self._placed.remove(task)

    def affinity_counts(self, task: TaskInfo) -> AffinityCounts:
        """Return the task's affinity counts, rebuilt only after placements changed."""
        cached = self._counts.get(task.uid)
        if cached is None or cached[0] != self.placed.generation:
            counts = AffinityCounts.build(task, self.placed)
            cached = self._counts[task.uid] = (self.placed.generation, counts)
        return cached[1]

    def affinity_check(self, task: TaskInfo) -> AffinityCounts | None:
        """The task's affinity counts when some inter-pod check can fail for it, else None."""
        if not self.switches.pod_affinity:
            return None
        affinity, anti = self._terms.required(task)
        if not (affinity or anti or (self._placed_anti and self.placed.anti_affinity)):
            return None
        counts = self.affinity_counts(task)
        return None if counts.is_empty else counts

    def spread_check(self, task: TaskInfo) -> SpreadVerdict | None:
        """The task's topology spread verdict when it has DoNotSchedule constraints, rebuilt only after
        placements changed; else None (Kubernetes skips the filter)."""
        if not (self.switches.pod_topology_spread and task.topology_spread):
            return None
        hard = tuple(c for c in task.topology_spread if c.hard)
        if not hard:
            return None
        cached = self._spread.get(task.uid)
        if cached is None or cached[0] != self.placed.generation:
            verdict = SpreadVerdict.build(task, hard, self.placed, self.static)
            cached = self._spread[task.uid] = (self.placed.generation, verdict)
        return cached[1]

    def batch_predicate(self, task: TaskInfo, for_preempt: bool) -> MaskArray:
        """Return, per node of `ssn.node_list`, whether the task passes every filter."""
        mask = self.static.mask(task)
        taken = None
        if self.switches.node_ports and not for_preempt and task.host_ports:
            taken = self.placed.port_conflicts(task.host_ports)
        counts = self.affinity_check(task)
        spread = self.spread_check(task)
        if taken is not None:
            mask = mask & ~taken
        if counts is not None:
            mask = mask & counts.mask(for_preempt=for_preempt)
        if spread is not None:
            mask = mask & spread.mask(for_preempt=for_preempt)
        return mask

    def mask_key(self, task: TaskInfo) -> Hashable | None:
        """The key of the task's static mask when `batch_predicate` (not for preemption) is that mask
        alone and stays so whatever is placed: no host ports, no inter-pod affinity of its own and none
        placed, no DoNotSchedule spread; else None."""
        switches = self.switches
        if switches.node_ports and task.host_ports:
            return None
        if switches.pod_affinity:
            affinity, anti = self._terms.required(task)
            if affinity or anti or self._placed_anti:
                return None
        if switches.pod_topology_spread and any(constraint.hard for constraint in task.topology_spread):
            return None
        return self.static.key(task)

    def predicate(self, task: TaskInfo, node: NodeInfo) -> PredicateStatus | None:
        """Return why the node does not suit the task, or None; an unresolvable reason wins."""
        reason = node_filter_failure(task, node, self.switches)
        if reason is not None:
            return PredicateStatus(reason)
        status = None
        ports = self.switches.node_ports and task.host_ports
        if ports and self.placed.has_port_conflict(task.host_ports, node.index):
            status = PredicateStatus(NODE_PORTS, resolvable=True)
        counts = self.affinity_check(task)
        spread = self.spread_check(task)
        for failure in (
            counts.failure(node.index) if counts is not None else None,
            spread.failure(node.index) if spread is not None else None,
        ):
            if failure is not None and (status is None or (status.resolvable and not failure[1])):
                status = PredicateStatus(failure[0], resolvable=failure[1])
        return status

    def simulate_remove(self, state: CycleState, task: TaskInfo, removed: TaskInfo, node: NodeInfo) -> None:
        """Dry-run hook: `removed` leaves `node` (a clone: found by name)."""
        SimulatedPods.of(state).change(removed, self.ssn.nodes[node.name].index, -1)

    def simulate_add(self, state: CycleState, task: TaskInfo, added: TaskInfo, node: NodeInfo) -> None:
        """Dry-run hook: `added` comes back to `node`."""
        SimulatedPods.of(state).change(added, self.ssn.nodes[node.name].index, 1)

    def simulate_predicate(self, state: CycleState, task: TaskInfo, node: NodeInfo) -> PredicateStatus | None:
        """Dry-run filter: inter-pod affinity of `task` on `node` once the dry run's changes are applied."""
        counts = self.affinity_check(task)
        if counts is None:
            return None
        row = self.ssn.nodes[node.name].index
        return simulated_failure(task, row, counts, SimulatedPods.of(state), self.placed)


class PredicatesPlugin:
    """Kubernetes' node filters as Volcano's predicates plugin runs them (resources and pod count aside)."""

    name = NAME

    def __init__(self, args: PredicatesArgs) -> None:
        self.args = args
        self.state: PredicateState | None = None
        if args.dynamic_resource_allocation:
            log.error(
                "dynamic_resource_allocation_unsupported",
                argument="predicate.DynamicResourceAllocationEnable",
                effect="pods with spec.resourceClaims are left pending",
            )

    def on_session_open(self, ssn: Session) -> None:
        """Build the session state, register both predicates and follow placements."""
        self.state = PredicateState(ssn, self.args)
        ssn.add_batch_predicate_fn(NAME, self.state.batch_predicate, self.state.mask_key)
        ssn.add_predicate_fn(NAME, self.state.predicate)
        ssn.add_event_handler(EventHandler(allocate=self.state.allocated, deallocate=self.state.deallocated))
        ssn.add_simulate_remove_task_fn(NAME, self.state.simulate_remove)
        ssn.add_simulate_add_task_fn(NAME, self.state.simulate_add)
        ssn.add_simulate_predicate_fn(NAME, self.state.simulate_predicate)
        if self.args.dynamic_resource_allocation:
            ssn.add_pre_predicate_fn(NAME, unallocated_claims)

    def on_session_close(self, ssn: Session) -> None:
        """Drop the session state."""
        self.state = None

    def on_job_added(self, ssn: Session, job: JobInfo) -> None:
        """Nothing to count: the state follows nodes and placements; a task's checks are made when asked."""


def unallocated_claims(task: TaskInfo, state: CycleState) -> str | None:
    """Pre-predicate with Dynamic Resource Allocation on: a pod naming ResourceClaims cannot be placed."""
    if not task.resource_claims:
        return None
    return UNALLOCATED_CLAIMS.format(claims=", ".join(task.resource_claims))


def new(args: PredicatesArgs) -> PredicatesPlugin:
    """Build the plugin."""
    return PredicatesPlugin(args)
