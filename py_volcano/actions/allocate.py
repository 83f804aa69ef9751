"""allocate: place pending tasks queue by queue, job by job, committing a job only when its gang is ready.

Nodes come in two gradients (Volcano): those where the task fits idle resources now, and, only when
none does, those where it fits future idle resources; a task placed on the second is pipelined. A task
that fits nowhere stops its job only when the job's other tasks can no longer make its gang
(`JobInfo.need_continue_allocating`); the other tasks of its role are then skipped for the action.
A job whose PodGroup sets `networkTopology` takes the hypernode path (`allocate_hypernodes.py`) instead.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Protocol

from py_volcano.actions import allocate_hypernodes
from py_volcano.api import FitErrors, JobID, JobInfo, MaskArray, QueueInfo, TaskInfo, TaskStatus
from py_volcano.framework import CycleState, NoArgs, PriorityQueue, Session, Statement, ordered

__all__ = ["NAME", "AllocateAction", "new"]

NAME = "allocate"


class _Tasks(Protocol):
    """A job's pending tasks as the task loop takes them: a priority queue, or a hypernode trial's run."""

    def pop(self) -> TaskInfo: ...

    def empty(self) -> bool: ...


class AllocateAction:
    """Allocate pending, resource-requesting tasks of admitted jobs."""

    name = NAME

    def __init__(self, args: NoArgs) -> None:
        self.args = args

    def execute(self, ssn: Session, only: Collection[JobID] | None = None) -> None:
        """Pop the best queue, then its best job, allocate that job's tasks, commit or discard; only the
        jobs of `only` when given (the fast path's arrivals: `actions.arrivals`)."""
        among = None if only is None else [ssn.jobs[uid] for uid in only if uid in ssn.jobs]
        queues, jobs_by_queue = ssn.jobs_by_queue(_schedulable(ssn), among)
        pending: dict[JobID, allocate_hypernodes.TaskRun] = {}
        in_hyper_nodes: dict[JobID, list[TaskInfo]] = {}
        failed_roles: dict[JobID, set[str]] = {}
        while not queues.empty():
            queue = queues.pop()
            if ssn.overused(queue):
                continue
            jobs = jobs_by_queue.get(queue.uid)
            if jobs is None or jobs.empty():
                continue
            job = jobs.pop()
            ssn.record_turn(job)
            if job.pod_group.network_topology is not None and allocate_hypernodes.takes_hyper_node_path(ssn, job):
                self._allocate_in_hyper_nodes(ssn, queue, job, jobs, in_hyper_nodes)
                queues.push(queue)
                continue
            tasks = pending.get(job.uid)
            if tasks is None:
                tasks = pending[job.uid] = _pending_tasks(ssn, job)
            stmt = Statement(ssn)
            self._allocate_tasks(ssn, stmt, queue, job, tasks, jobs, failed_roles.setdefault(job.uid, set()))
            if ssn.job_ready(job):
                stmt.commit()
            elif not ssn.job_pipelined(job):
                stmt.discard()
            queues.push(queue)

    def _allocate_in_hyper_nodes(
        self,
        ssn: Session,
        queue: QueueInfo,
        job: JobInfo,
        jobs: PriorityQueue[JobInfo],
        in_hyper_nodes: dict[JobID, list[TaskInfo]],
    ) -> None:
        """Place the job inside one hypernode; commit when it is ready (and take it up again later when
        tasks are left), keep a pipelined job's statement, as the task path does."""
        tasks = in_hyper_nodes.get(job.uid)
        if tasks is None:
            tasks = in_hyper_nodes[job.uid] = ordered(ssn.task_order_fn, _requesting(job))

        def place(stmt: Statement, run: allocate_hypernodes.TaskRun, within: MaskArray | None) -> None:
            self._allocate_tasks(ssn, stmt, queue, job, run, None, set(), within=within)

        stmt, in_hyper_nodes[job.uid] = allocate_hypernodes.allocate_in_hyper_nodes(ssn, job, tasks, place)
        if stmt is None:
            return
        if ssn.job_ready(job):
            stmt.commit()
            if in_hyper_nodes[job.uid]:
                jobs.push(job)
        elif not ssn.job_pipelined(job):
            stmt.discard()

    def _allocate_tasks(
        self,
        ssn: Session,
        stmt: Statement,
        queue: QueueInfo,
        job: JobInfo,
        tasks: _Tasks,
        jobs: PriorityQueue[JobInfo] | None,
        failed_roles: set[str],
        *,
        within: MaskArray | None = None,
    ) -> None:
        """Place the job's tasks in task order until it is ready; a task that fits nowhere stops the job
        unless its other tasks can still make the gang (docs/semantics.md, "Allocate"). `within`: the
        nodes the job may use (a hypernode's), None for all; `jobs`: where a ready job with tasks left
        goes back (None: the caller decides)."""
        while not tasks.empty():
            task = tasks.pop()
            if not ssn.allocatable(queue, task):
                ssn.refuse_quota(job, queue, task)
                continue
            if task.role and task.role in failed_roles:
                # Volcano's TaskHasFitErrors: the tasks of a role are alike, so one that failed speaks for all.
                reason = f"task {task.name}: a task of the same role ({task.role}) fits no node; skipped"
                job.fit_errors[task.uid] = FitErrors(reason=reason)
                continue
            if _place(ssn, stmt, job, task, within):
                if ssn.job_ready(job):
                    if jobs is not None and not tasks.empty():
                        jobs.push(job)
                    break
                continue
            failed_roles.add(task.role)
            if not job.need_continue_allocating(failed_roles):
                break


def _place(ssn: Session, stmt: Statement, job: JobInfo, task: TaskInfo, within: MaskArray | None) -> bool:
    """Allocate the task on the best node with idle room, else pipeline it on the best with future room;
    False, the reason kept on the job, when its pre-predicate fails or no node (of `within`) suits it."""
    failure = ssn.pre_predicate(task, CycleState())
    if failure:
        job.job_fit_error = failure
        return False
    picked = ssn.pick_node(task, within)
    if picked is None:
        # Explaining node by node is the slow path: a hypernode trial, tried many times, only says where.
        job.fit_errors[task.uid] = (
            ssn.explain(task) if within is None else FitErrors(reason=f"no node of the hypernode suits {task.key}")
        )
        return False
    node, idle_room = picked
    if idle_room:
        stmt.allocate(task, node.name)
    else:
        stmt.pipeline(task, node.name)
    return True


def _schedulable(ssn: Session) -> Callable[[JobInfo, QueueInfo], bool]:
    def include(job: JobInfo, queue: QueueInfo) -> bool:
        if job.is_pending() or not job.count(TaskStatus.PENDING):
            return False
        verdict = ssn.job_valid(job)
        if verdict is not None:
            job.job_fit_error = verdict.message
            return False
        return True

    return include


def _pending_tasks(ssn: Session, job: JobInfo) -> allocate_hypernodes.TaskRun:
    """Pending tasks that request resources (best-effort ones are backfill's), in task order: sorted once
    (tasks already in order cost a comparison each), the order a heap of them would pop, as no two tie."""
    return allocate_hypernodes.TaskRun(ordered(ssn.task_order_fn, _requesting(job), strict=True))


def _requesting(job: JobInfo) -> list[TaskInfo]:
    return [task for task in job.tasks_with(TaskStatus.PENDING) if not task.best_effort]


def new(args: NoArgs) -> AllocateAction:
    """Build the action."""
    return AllocateAction(args)
