"""Dry runs for topology-aware preemption: inter-pod affinity on a node whose pods the preempt action
removes and adds back through the simulate hooks (Kubernetes' InterPodAffinity AddPod/RemovePod).

As in Volcano, only inter-pod affinity is re-checked in a dry run, and not at all when the preemptor's
PreFilter would skip it (no affinity terms and no placed pod's anti-affinity selecting it). The changes
live in the preemptor's CycleState, cloned per candidate node, never in the session.
"""

from __future__ import annotations

from py_volcano.api import TaskID, TaskInfo
from py_volcano.framework import CycleState, PredicateStatus
from py_volcano.plugins.predicates.placed import PlacedPods
from py_volcano.plugins.predicates.pod_affinity import AffinityCounts

__all__ = ["STATE_KEY", "SimulatedPods", "simulated_failure"]

STATE_KEY = "predicates"


class SimulatedPods:
    """Pods a dry run removed from or added to nodes: uid -> (node row, task, +1 added / -1 removed)."""

    __slots__ = ("changes",)

    def __init__(self) -> None:
        self.changes: dict[TaskID, tuple[int, TaskInfo, int]] = {}

    def clone(self) -> SimulatedPods:
        """Return an independent copy."""
        copy = SimulatedPods()
        copy.changes = dict(self.changes)
        return copy

    def change(self, task: TaskInfo, row: int, delta: int) -> None:
        """Record that `task` left (-1) or joined (+1) node row `row`; opposite changes cancel."""
        previous = self.changes.pop(task.uid, None)
        if previous is None or previous[2] == delta:
            self.changes[task.uid] = (row, task, delta)

    @staticmethod
    def of(state: CycleState) -> SimulatedPods:
        """Return the dry-run changes kept in `state`, creating them on first use."""
        pods = state.read(STATE_KEY)
        if not isinstance(pods, SimulatedPods):
            pods = SimulatedPods()
            state.write(STATE_KEY, pods)
        return pods


def simulated_failure(
    task: TaskInfo, node_row: int, base: AffinityCounts, pods: SimulatedPods, placed: PlacedPods
) -> PredicateStatus | None:
    """Return the inter-pod affinity failure of `task` on node row `node_row` after the dry run, or None."""
    counts = base.copy()
    for row, pod, delta in pods.changes.values():
        for term in placed.terms.required(pod)[1]:
            if term.matches(task.labels, task.namespace):
                counts.shift(counts.existing_anti, term.topology_key, row, delta)
        if counts.affinity_terms and all(t.matches(pod.labels, pod.namespace) for t in counts.affinity_terms):
            for key in {t.topology_key for t in counts.affinity_terms}:
                counts.shift(counts.affinity, key, row, delta)
        for term in counts.anti_terms:
            if term.matches(pod.labels, pod.namespace):
                counts.shift(counts.anti_affinity, term.topology_key, row, delta)
    counts.matched_affinity = any(bool(array.any()) for array in counts.affinity.values())
    failure = counts.failure(node_row)
    return PredicateStatus(failure[0], resolvable=failure[1]) if failure is not None else None
