"""allocate's hypernode path: a job whose PodGroup sets `networkTopology` is placed inside one hypernode.

As Volcano's allocateForJob: the hypernode search (the `hyper_node_gradient` plugins, `[[root]]` without
one) yields groups of candidate hypernodes, lowest tier first; the first group where some candidate can
hold the job wins, and among the candidates that can, the `hyper_node_order` plugins pick one. Each
candidate is tried in a statement of its own.
Hard mode spans at most `highestTierAllowed` (or the tier `highestTierName` names); soft mode may span
every tier, up to the virtual top that holds every node, so it only prefers the lowest tier that fits.

Volcano tries every candidate of the group, then scores those that held the job, picking at random among
equal scores. Here the candidates are scored once, before any trial (the trials are discarded, so the
scores see the state Volcano's see), and tried best first, ties by name: the first that holds the job
wins and its trial is kept, so a job usually costs one trial. A candidate that could not hold the job
is not tried (`_Search.may_hold`). `python -m bench network_topology` measures the cost.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from py_volcano.api import FloatArray, JobInfo, MaskArray, TaskInfo, TaskStatus
from py_volcano.framework import Session, Statement

__all__ = ["TaskRun", "allocate_in_hyper_nodes", "takes_hyper_node_path"]


class TaskRun:
    """A job's pending tasks in task order, popped from the front (one run per candidate hypernode)."""

    __slots__ = ("at", "tasks")

    def __init__(self, tasks: list[TaskInfo]) -> None:
        self.tasks = tasks
        self.at = 0

    def pop(self) -> TaskInfo:
        """Return the next task."""
        self.at += 1
        return self.tasks[self.at - 1]

    def empty(self) -> bool:
        """True when every task was taken."""
        return self.at >= len(self.tasks)

    def remaining(self) -> list[TaskInfo]:
        """The tasks not taken yet, in order."""
        return self.tasks[self.at :]


PlaceTasks = Callable[[Statement, TaskRun, "MaskArray | None"], None]
"""allocate's task loop for one job: (statement, tasks, nodes it may use, None for all)."""


def takes_hyper_node_path(ssn: Session, job: JobInfo) -> bool:
    """True when the job's PodGroup sets a network topology allocate must honour."""
    spec = job.pod_group.network_topology
    return spec is not None and ssn.hyper_nodes.highest_tier(spec) is not None


def allocate_in_hyper_nodes(
    ssn: Session, job: JobInfo, tasks: list[TaskInfo], place: PlaceTasks
) -> tuple[Statement | None, list[TaskInfo]]:
    """Place the job inside the best hypernode that can hold it; return the statement (None when no
    hypernode can) and the tasks left for a later turn. On None, the session is as before."""
    topology = ssn.hyper_nodes
    spec = job.pod_group.network_topology
    tier = topology.highest_tier(spec) if spec is not None else None
    if tier is None:
        return None, tasks
    if not topology.ready:
        job.job_fit_error = "the HyperNode topology is not usable: " + "; ".join(topology.problems)
        return None, tasks
    root = _search_root(ssn, job, tier)
    if root == -1:
        job.job_fit_error = f"its placed tasks already span more than tier {tier}"
        return None, tasks
    search = _Search(ssn, job, tasks, place)
    for gradient in ssn.hyper_node_gradients(job, root):
        found = search.first_holding([h for h in gradient if search.may_hold(h)])
        if found is not None:
            stmt, run = found
            return stmt, run.remaining()
    job.job_fit_error = f"no hypernode of tier <= {tier} can hold the job"
    return None, tasks


def _search_root(ssn: Session, job: JobInfo, tier: int) -> int:
    """Where the search starts: the top, or, once tasks are placed, the highest hypernode of tier <= `tier`
    above them (Volcano's getSearchRoot); -1 when the placed tasks already span more."""
    topology = ssn.hyper_nodes
    allocated = ssn.allocated_hyper_node(job)
    if allocated == -1:
        return topology.top
    return topology.highest_allowed(allocated, tier)


class _Search:
    """Trials of one job in candidate hypernodes."""

    __slots__ = ("job", "masks", "monotone", "need", "place", "reach", "reached", "room", "ssn", "tasks")

    def __init__(self, ssn: Session, job: JobInfo, tasks: list[TaskInfo], place: PlaceTasks) -> None:
        self.ssn = ssn
        self.job = job
        self.tasks = tasks
        self.place = place
        self.masks: dict[int, MaskArray | None] = {ssn.hyper_nodes.top: None}
        self.need, self.room = _room(ssn, job, tasks)
        self.reach: MaskArray = np.zeros(len(ssn.node_list), dtype=bool)
        self.reached = 0  # the tasks whose nodes `reach` holds, the first ones
        self.monotone = _stricter_as_placed(ssn, tasks)

    def may_hold(self, hyper_node: int) -> bool:
        """False when a trial in the hypernode is bound to fail: its nodes have room for fewer of the job's
        smallest tasks than the gang still needs (each node counts max(idle, future idle) // smallest
        request, in its scarcest dimension; only nodes some task passes the predicates of, when those only
        get stricter as the job's tasks are placed), or no task passes the predicates and fits on any of
        its nodes (then the trial places nothing, so nothing it places can change that). Called between
        trials, when the session is as the job's turn found it."""
        if hyper_node == self.ssn.hyper_nodes.top:
            return True
        rows = self.ssn.hyper_nodes.rows[hyper_node]
        if self.room is not None:
            room = self.room[rows]
            if self.monotone:
                while self.reached < len(self.tasks):
                    self._reach_next()
                room = room[self.reach[rows]]
            if int(room.sum()) < self.need:
                return False
        while not self.reach[rows].any():
            if self.reached == len(self.tasks):
                return False
            self._reach_next()
        return True

    def _reach_next(self) -> None:
        """Add the nodes the next task passes the predicates of and fits (idle or future idle) on."""
        task = self.tasks[self.reached]
        self.reach |= self.ssn.predicate_mask(task) & (self.ssn.fit_idle(task) | self.ssn.fit_future_idle(task))
        self.reached += 1

    def first_holding(self, candidates: list[int]) -> tuple[Statement, TaskRun] | None:
        """Try the candidates best scored first (ties by name); return the statement of the first that
        holds the job (ready, or pipelined), the others discarded; None when none does."""
        if not candidates:
            return None
        names = self.ssn.hyper_nodes.names
        scores = self.ssn.hyper_node_order(self.job, candidates)
        for k in sorted(range(len(candidates)), key=lambda k: (-scores[k], names[candidates[k]])):
            stmt, run = self.run(candidates[k])
            if stmt.operations and (self.ssn.job_ready(self.job) or self.ssn.job_pipelined(self.job)):
                return stmt, run
            stmt.discard()
        return None

    def run(self, hyper_node: int) -> tuple[Statement, TaskRun]:
        """Place the job's tasks on the hypernode's nodes in a new statement, from clean fit errors."""
        self.job.fit_errors.clear()
        stmt, run = Statement(self.ssn), TaskRun(self.tasks)
        self.place(stmt, run, self._mask(hyper_node))
        return stmt, run

    def _mask(self, hyper_node: int) -> MaskArray | None:
        if hyper_node not in self.masks:
            mask = np.zeros(len(self.ssn.node_list), dtype=bool)
            mask[self.ssn.hyper_nodes.rows[hyper_node]] = True
            self.masks[hyper_node] = mask
        return self.masks[hyper_node]


def _stricter_as_placed(ssn: Session, tasks: list[TaskInfo]) -> bool:
    """Whether placing the job's own tasks can only take nodes away from its other tasks: not with pod
    affinity or topology spread (a placed sibling can open a node), nor with an extender (anything)."""
    if "extender" in ssn.plugins:
        return False
    return not any(task.topology_spread or "podAffinity" in task.affinity for task in tasks)


def _room(ssn: Session, job: JobInfo, tasks: list[TaskInfo]) -> tuple[int, FloatArray | None]:
    """How many more tasks the gang needs, and per node how many of its smallest request fit there (an upper
    bound on the tasks the node can take); None when it needs no more (then any placement helps)."""
    needed = job.min_available - job.ready_task_num() - job.count(TaskStatus.PIPELINED)
    if needed <= 0 or needed > len(tasks):
        return needed, None
    arrays = ssn.arrays
    dims = len(arrays.dims)
    smallest = np.array([arrays.request(task.init_resreq)[:dims] for task in tasks]).min(axis=0)
    wanted = smallest > 0
    available = np.maximum(arrays.idle, arrays.future_idle())[:, wanted]
    room: FloatArray = np.floor(np.maximum(available, 0.0) / smallest[wanted]).min(axis=1, initial=np.inf)
    return needed, np.minimum(room, needed)
