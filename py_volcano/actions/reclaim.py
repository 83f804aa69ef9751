"""reclaim: starving jobs of queues below their share take back resources lent to other queues.

Queues come in queue order; an overused queue reclaims nothing, any other reclaims for all its
starving jobs in job order, as Volcano's reclaim does since cdaaa97. For each pending task the queue
may reclaim for (`ssn.preemptive`), nodes that pass the preempt-action predicates are visited in node
order; on each, Running tasks of other, reclaimable queues are offered to `ssn.reclaimable` and the
victims are evicted in victim order until the task fits FutureIdle, where it is then pipelined. Each
node is tried in a statement of its own, merged into the job's only when the task is pipelined there;
the job's Statement is committed only if the job is then pipelined. Reclaim never binds
(docs/semantics.md, "Reclaim").
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import structlog

from py_volcano.actions.preempt import victims
from py_volcano.actions.preempt.disruption import DisruptionBudgets
from py_volcano.actions.preempt.preemptees import PreempteeIndex, Scope
from py_volcano.api import JobID, JobInfo, NodeInfo, QueueID, QueueInfo, TaskInfo, TaskStatus
from py_volcano.framework import CycleState, NoArgs, PriorityQueue, Session, Statement

__all__ = ["NAME", "ReclaimAction", "new"]

NAME = "reclaim"
log = structlog.get_logger(__name__)


class ReclaimAction:
    """Reclaim between queues."""

    name = NAME

    def __init__(self, args: NoArgs) -> None:
        self.args = args

    def execute(self, ssn: Session) -> None:
        """Pop the best queue that is not overused, reclaim for each of its starving jobs, commit or discard."""
        started = time.perf_counter()
        evictions = len(ssn.evictions)
        queues, jobs_by_queue = _starving_jobs(ssn)
        index = PreempteeIndex(ssn, _reclaimable(ssn))
        budgets = DisruptionBudgets.build(ssn)
        while not queues.empty():
            queue = queues.pop()
            if ssn.overused(queue):
                log.debug("queue_overused", action=NAME, queue=queue.name)
                continue
            jobs = jobs_by_queue.get(queue.uid)
            while jobs is not None and not jobs.empty():
                job = jobs.pop()
                stmt = Statement(ssn)
                self._reclaim_for_job(ssn, stmt, queue, job, Scope(index, _other_queue(ssn, job), budgets))
                if ssn.job_pipelined(job):
                    stmt.commit()
                else:
                    index.touch_statement(stmt)
                    stmt.discard()
        log.info(
            "reclaim_done",
            cycle=ssn.cycle,
            action=NAME,
            evictions=len(ssn.evictions) - evictions,
            duration_ms=round((time.perf_counter() - started) * 1000, 3),
        )

    def _reclaim_for_job(self, ssn: Session, stmt: Statement, queue: QueueInfo, job: JobInfo, scope: Scope) -> None:
        """Reclaim for the job's pending tasks, in task order, while it is starving."""
        tasks = PriorityQueue(ssn.task_order_fn, job.tasks_with(TaskStatus.PENDING))
        while ssn.job_starving(job) and not tasks.empty():
            task = tasks.pop()
            if task.preemption_never or not ssn.preemptive(queue, task):
                continue
            if ssn.pre_predicate(task, CycleState()):
                continue
            _reclaim_for_task(ssn, stmt, task, scope)


def _reclaim_for_task(ssn: Session, stmt: Statement, task: TaskInfo, scope: Scope) -> bool:
    """Evict victims on the first node (in node order) where that makes the task fit; pipeline it there."""
    mask = ssn.predicate_mask(task, for_preempt=True) & scope.index.screen(task)
    return any(_reclaim_on(ssn, stmt, task, scope, ssn.node_list[int(index)]) for index in np.flatnonzero(mask))


def _reclaim_on(ssn: Session, stmt: Statement, task: TaskInfo, scope: Scope, node: NodeInfo) -> bool:
    reclaimees = scope.preemptees(node)
    if not reclaimees:
        return False
    chosen = ssn.reclaimable(task, reclaimees)
    if not victims.validate_victims(task, node, chosen):
        return False
    order = victims.in_victim_order(ssn, chosen, task)
    attempt = Statement(ssn)
    # Fit is checked before each eviction: FutureIdle already holds the node's idle room and grows by each
    # victim's request, so no victim is taken beyond what the task needs.
    victims.evict_until(
        attempt, order, lambda: victims.fits_future_idle(task, node), budgets=scope.budgets, reason="reclaim"
    )
    scope.index.touch(node.name)
    if not victims.fits_future_idle(task, node):
        attempt.discard()
        return False
    attempt.pipeline(task, node.name)
    stmt.merge(attempt)
    return True


def _starving_jobs(ssn: Session) -> tuple[PriorityQueue[QueueInfo], dict[QueueID, PriorityQueue[JobInfo]]]:
    """Queues of admitted, valid jobs (in queue order) and, per queue, its starving jobs in job order."""
    queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn)
    seen: set[QueueID] = set()
    jobs: dict[QueueID, PriorityQueue[JobInfo]] = {}
    for job in ssn.jobs.values():
        if job.is_pending() or job.queue not in ssn.queues or ssn.job_valid(job) is not None:
            continue
        if job.queue not in seen:
            seen.add(job.queue)
            queues.push(ssn.queues[job.queue])
        if ssn.job_starving(job) and not ssn.is_backed_off(job):
            jobs.setdefault(job.queue, PriorityQueue(ssn.job_order_fn)).push(job)
    return queues, jobs


def _reclaimable(ssn: Session) -> Callable[[TaskInfo], bool]:
    """Base filter: Running, preemptable tasks of jobs whose queue is reclaimable."""

    def owner(task: TaskInfo) -> bool:
        if task.status is not TaskStatus.RUNNING or not task.preemptable or task.job is None:
            return False
        job = ssn.jobs.get(task.job)
        queue = ssn.queues.get(job.queue) if job is not None else None
        return queue is not None and queue.reclaimable

    return owner


def _other_queue(ssn: Session, reclaimer: JobInfo) -> Callable[[TaskInfo], bool]:
    """Per job: only tasks of other queues (docs/semantics.md, "Reclaim": other queues only)."""
    queue = reclaimer.queue

    def accept(task: TaskInfo) -> bool:
        job = ssn.jobs.get(JobID(task.job)) if task.job else None
        return job is not None and job.queue != queue

    return accept


def new(args: NoArgs) -> ReclaimAction:
    """Build the action."""
    return ReclaimAction(args)
