"""allocate: place pending tasks queue by queue, job by job, committing a job only when its gang is ready.

Nodes come in two gradients (Volcano): those where the task fits idle resources now, and, only when
none does, those where it fits future idle resources; a task placed on the second is pipelined.
"""

from __future__ import annotations

from collections.abc import Callable

from py_volcano.api import JobID, JobInfo, QueueInfo, TaskInfo, TaskStatus
from py_volcano.framework import CycleState, NoArgs, PriorityQueue, Session, Statement

__all__ = ["NAME", "AllocateAction", "new"]

NAME = "allocate"


class AllocateAction:
    """Allocate pending, resource-requesting tasks of admitted jobs."""

    name = NAME

    def __init__(self, args: NoArgs) -> None:
        self.args = args

    def execute(self, ssn: Session) -> None:
        """Pop the best queue, then its best job, allocate that job's tasks, commit or discard."""
        queues, jobs_by_queue = ssn.jobs_by_queue(_schedulable(ssn))
        pending: dict[JobID, PriorityQueue[TaskInfo]] = {}
        while not queues.empty():
            queue = queues.pop()
            if ssn.overused(queue):
                continue
            jobs = jobs_by_queue.get(queue.uid)
            if jobs is None or jobs.empty():
                continue
            job = jobs.pop()
            tasks = pending.get(job.uid)
            if tasks is None:
                tasks = pending[job.uid] = _pending_tasks(ssn, job)
            stmt = Statement(ssn)
            self._allocate_tasks(ssn, stmt, queue, job, tasks, jobs)
            if ssn.job_ready(job):
                stmt.commit()
            elif not ssn.job_pipelined(job):
                stmt.discard()
            queues.push(queue)

    def _allocate_tasks(
        self,
        ssn: Session,
        stmt: Statement,
        queue: QueueInfo,
        job: JobInfo,
        tasks: PriorityQueue[TaskInfo],
        jobs: PriorityQueue[JobInfo],
    ) -> None:
        while not tasks.empty():
            task = tasks.pop()
            if not ssn.allocatable(queue, task):
                job.job_fit_error = f"queue {queue.name} has no quota left for the task (allocated + request > limit)"
                continue
            failure = ssn.pre_predicate(task, CycleState())
            if failure:
                job.job_fit_error = failure
                break
            idle, future = ssn.candidate_nodes(task)
            if len(idle) == 0 and len(future) == 0:
                job.fit_errors[task.uid] = ssn.explain(task)
                break
            if len(idle):
                node = ssn.best_node(task, idle)
                assert node is not None
                stmt.allocate(task, node.name)
            else:
                node = ssn.best_node(task, future)
                assert node is not None
                stmt.pipeline(task, node.name)
            if ssn.job_ready(job) and not tasks.empty():
                jobs.push(job)
                break


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


def _pending_tasks(ssn: Session, job: JobInfo) -> PriorityQueue[TaskInfo]:
    """Pending tasks that request resources (best-effort ones are backfill's)."""
    return PriorityQueue(
        ssn.task_order_fn, (task for task in job.tasks_with(TaskStatus.PENDING) if not task.best_effort)
    )


def new(args: NoArgs) -> AllocateAction:
    """Build the action."""
    return AllocateAction(args)
