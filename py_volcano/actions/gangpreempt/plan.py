"""The gang-aware eviction plan: evict a prefix of the ranked bundles, pipeline the whole gang, keep it only
when the job is then pipelined (Volcano's BuildNominationPlanInDomain, for a cluster without HyperNodes:
one domain, every node).

Bundles are added in rank order while the cluster's idle and releasing resources plus what the chosen
victims free still fall short of the gang's need; from the first prefix that covers it, each prefix is
tried in a statement of its own: the victims are evicted, then each pending task in task order must
pass the queue's allocatable check, the pre-predicates and the preempt-action predicates on some node
whose future idle resources hold it, and is pipelined on the best such node (idle fit first). The first
prefix that leaves the job pipelined is the plan; every other trial is discarded.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from py_volcano.actions.gangpreempt.bundles import Bundle
from py_volcano.api import ZERO, JobInfo, QueueInfo, Resource, TaskInfo, TaskStatus
from py_volcano.framework import CycleState, Operation, PriorityQueue, Session, Statement

__all__ = ["domain_room", "gang_need", "gang_pending", "plan_eviction"]


def gang_pending(ssn: Session, job: JobInfo) -> list[TaskInfo]:
    """The job's pending tasks that need room (not best-effort, not gated), in task order."""
    tasks = [t for t in job.tasks_with(TaskStatus.PENDING) if t.schedulable and not t.resreq.is_empty()]
    queue = PriorityQueue(ssn.task_order_fn, tasks)
    return [queue.pop() for _ in range(len(tasks))]


def gang_need(ssn: Session, job: JobInfo) -> Resource:
    """What the job's pending tasks ask for to start (their init requests)."""
    need = Resource()
    for task in gang_pending(ssn, job):
        need.add(task.init_resreq)
    return need


def domain_room(ssn: Session) -> Resource:
    """Idle plus releasing resources of every node."""
    room = Resource()
    for node in ssn.node_list:
        room.add(node.idle).add(node.releasing)
    return room


def plan_eviction(
    ssn: Session, queue: QueueInfo | None, job: JobInfo, bundles: Sequence[Bundle], *, reason: str
) -> Statement | None:
    """Return the statement of the first bundle prefix that gets the gang pipelined, or None (session unchanged)."""
    pending = gang_pending(ssn, job)
    if not pending:
        return None
    need = gang_need(ssn, job)
    room = domain_room(ssn)
    victims: list[TaskInfo] = []
    for bundle in bundles:
        victims += bundle.tasks
        room.add(bundle.local)
        if not need.less_equal(room, ZERO):
            continue
        stmt = _trial(ssn, queue, job, pending, victims, reason=reason)
        if stmt is not None:
            return stmt
    return None


def _trial(
    ssn: Session,
    queue: QueueInfo | None,
    job: JobInfo,
    pending: list[TaskInfo],
    victims: list[TaskInfo],
    *,
    reason: str,
) -> Statement | None:
    """Evict `victims` and pipeline `pending` in one statement; None (discarded) unless the job is pipelined."""
    stmt = Statement(ssn)
    for victim in victims:
        stmt.evict(victim, reason)
    if all(_pipeline(ssn, stmt, queue, task) for task in pending) and _pipelines(stmt) and ssn.job_pipelined(job):
        return stmt
    stmt.discard()
    return None


def _pipeline(ssn: Session, stmt: Statement, queue: QueueInfo | None, task: TaskInfo) -> bool:
    """Pipeline the task on its best node among those whose future idle resources hold it."""
    if queue is not None and not ssn.allocatable(queue, task):
        return False
    mask = ssn.predicate_mask(task, for_preempt=True)
    if not mask.any() or ssn.pre_predicate(task, CycleState()):
        return False
    mask = mask & ssn.fit_future_idle(task)
    if not mask.any():
        return False
    idle = mask & ssn.fit_idle(task)
    node = ssn.best_node(task, np.flatnonzero(idle if idle.any() else mask))
    if node is None:
        return False
    stmt.pipeline(task, node.name)
    return True


def _pipelines(stmt: Statement) -> bool:
    return any(op.kind is Operation.PIPELINE for op in stmt.operations)
