"""The dry-run copy of the queue attributes that preempt works on (docs/semantics.md, "Capacity dry run").

Pre-predicate puts a `CapacityState` in the preemptor's CycleState; the simulate functions change
only that copy. The copy is taken lazily: a state copies the attributes when first read, or just
before the first real allocation or eviction after it was made (`QueueTree.before_change`), so it
always sees them as they were at pre-predicate time, while allocate, which calls pre-predicate for
every task and never simulates, copies nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

from py_volcano.api import JobID, JobInfo, QueueID, QueueInfo, TaskInfo
from py_volcano.framework import CycleState
from py_volcano.plugins.capacity import quota
from py_volcano.plugins.capacity.attrs import QueueAttr, QueueTree, propagate

__all__ = ["STATE_KEY", "CapacityState", "simulate_allocatable", "simulate_change"]

STATE_KEY = "capacity"


class CapacityState:
    """Every queue's attributes as they were when the preemptor's pre-predicate ran."""

    __slots__ = ("__weakref__", "_attrs", "_tree")

    def __init__(self, tree: QueueTree, attrs: dict[QueueID, QueueAttr] | None = None) -> None:
        self._tree = tree
        self._attrs = attrs
        if attrs is None:
            tree.watch(self)

    @property
    def attrs(self) -> dict[QueueID, QueueAttr]:
        """Return this state's own copy of the attributes."""
        if self._attrs is None:
            self.freeze()
        assert self._attrs is not None
        return self._attrs

    def freeze(self) -> None:
        """Copy the live attributes now, if not done yet."""
        if self._attrs is None:
            self._attrs = self._tree.clone_attrs()

    def clone(self) -> CapacityState:
        """Return an independent copy (CycleState clones it for every candidate node)."""
        if self._attrs is None:
            return CapacityState(self._tree)
        return CapacityState(self._tree, {queue_id: attr.clone() for queue_id, attr in self._attrs.items()})


def read_state(cycle_state: CycleState) -> CapacityState | None:
    """Return the capacity state pre-predicate stored, or None."""
    state = cycle_state.read(STATE_KEY)
    return state if isinstance(state, CapacityState) else None


def simulate_change(jobs: Mapping[JobID, JobInfo], cycle_state: CycleState, task: TaskInfo, *, add: bool) -> None:
    """Add (or remove) a task's request to its queue and ancestors in the dry-run copy only."""
    state = read_state(cycle_state)
    job = jobs.get(task.job) if task.job else None
    if state is None or job is None:
        return
    attr = state.attrs.get(job.queue)
    if attr is not None:
        propagate(state.attrs, attr, task.resreq, add=add)


def simulate_allocatable(tree: QueueTree, cycle_state: CycleState, queue: QueueInfo, task: TaskInfo) -> bool:
    """The allocatable check on the dry-run copy; False without a copy (pre-predicate did not run).

    docs/semantics.md, "Capacity allocatable".
    """
    state = read_state(cycle_state)
    if state is None or not tree.is_usable(queue.uid):
        return False
    attr = state.attrs.get(queue.uid)
    return attr is not None and quota.allocatable(state.attrs, attr, task.resreq)
