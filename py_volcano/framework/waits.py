"""Why each job the cycle did not place waits, and where it stands in line (what `py-volcano explain` shows).

Decided when the session closes, from what the cycle itself noted: the first refusal each job and
queue met (the action running and the plugin that refused, `ExtensionPoints`), the fit errors of its
pods, and the order in which enqueue and allocate took jobs up (`Session.record_turn`). Nothing here
re-runs a plugin. A job waits when its PodGroup stays Pending or Inqueue and the cycle did not place
its gang (its status sets no `Scheduled`).

Positions (docs/semantics.md, "Waiting jobs and their place in line"): admitted jobs first, in the
order allocate took them up, then jobs waiting for admission, in the order enqueue took them up;
counted among the waiting jobs of the job's queue and of the whole cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from py_volcano.api import (
    SCHEDULED,
    JobID,
    JobInfo,
    JobWait,
    PodGroupPhase,
    PodGroupStatus,
    QueueInfo,
    TaskStatus,
    WaitReason,
)

if TYPE_CHECKING:
    from py_volcano.framework.session import Session

__all__ = ["job_waits", "preemption_note"]

#: The actions that make room by evicting; their refusals explain less than a placing action's.
_EVICTING = frozenset({"preempt", "reclaim"})
#: The reason a refusal at each extension point gives.
_REASON_OF_POINT = {
    "job_enqueueable": WaitReason.ENQUEUE_REJECTED,
    "job_valid": WaitReason.JOB_INVALID,
    "allocatable": WaitReason.QUEUE_QUOTA,
    "pre_predicate": WaitReason.PRE_PREDICATE_FAILED,
}


def _is_waiting(status: PodGroupStatus) -> bool:
    if status.phase not in (PodGroupPhase.PENDING, PodGroupPhase.INQUEUE):
        return False
    return not any(c.type == SCHEDULED and c.status == "True" for c in status.conditions)


def _positions(ssn: Session, waiting: list[tuple[JobInfo, PodGroupStatus]]) -> dict[JobID, tuple[int, int]]:
    """Return (queue position, cluster position) of every waiting job some action took up."""
    allocate, enqueue = ssn.turns.get("allocate", {}), ssn.turns.get("enqueue", {})
    lines: list[tuple[int, int, JobInfo]] = []
    for job, status in waiting:
        admitted = status.phase is PodGroupPhase.INQUEUE
        turn = (allocate if admitted else enqueue).get(job.uid)
        if turn is not None:
            lines.append((0 if admitted else 1, turn, job))
    lines.sort(key=lambda line: (line[0], line[1]))
    per_queue: dict[str, int] = {}
    positions: dict[JobID, tuple[int, int]] = {}
    for cluster_position, (_, _, job) in enumerate(lines, start=1):
        queue_position = per_queue[job.queue] = per_queue.get(job.queue, 0) + 1
        positions[job.uid] = (queue_position, cluster_position)
    return positions


def _hold(ssn: Session, job: JobInfo, status: PodGroupStatus) -> tuple[WaitReason, str, str, str]:
    """Return (reason, message, action, plugin) of what held the job back."""
    queue = ssn.queues.get(job.queue)
    refusal = ssn.job_refusals.get(job.uid)
    detail = job.job_fit_error or status.unschedulable
    if queue is None:
        return WaitReason.QUEUE_NOT_FOUND, job.job_fit_error or f"queue {job.queue!r} does not exist", "", ""
    if not queue.is_open():
        state = f"queue {queue.name} is {queue.state.value}"
        if status.phase is PodGroupPhase.PENDING:
            return WaitReason.QUEUE_CLOSED, f"{state}: it admits no new jobs", "enqueue", ""
        if refusal is not None and refusal.point == "allocatable":
            return WaitReason.QUEUE_CLOSED, f"{state}: no more of its pods are placed", refusal.action, refusal.plugin
    if refusal is not None and refusal.action not in _EVICTING:
        reason = _REASON_OF_POINT.get(refusal.point, WaitReason.NOT_TAKEN_UP)
        return reason, detail or f"{refusal.plugin} refused at {refusal.point}", refusal.action, refusal.plugin
    if job.fit_errors:
        action = "backfill" if all(t.best_effort for t in job.tasks_with(TaskStatus.PENDING)) else "allocate"
        first = next(iter(job.fit_errors.values()))
        return WaitReason.NO_NODE_FITS, status.unschedulable or first.summary(), action, ""
    overused = ssn.queue_refusals.get(queue.uid)
    if overused is not None and status.phase is PodGroupPhase.INQUEUE:
        message = f"queue {queue.name} is overused (allocated reaches its deserved share): allocate skips it"
        return WaitReason.QUEUE_OVERUSED, message, overused.action, overused.plugin
    if refusal is not None:
        reason = _REASON_OF_POINT.get(refusal.point, WaitReason.NOT_TAKEN_UP)
        return reason, detail or f"{refusal.plugin} refused at {refusal.point}", refusal.action, refusal.plugin
    pipelined = job.count(TaskStatus.PIPELINED)
    if pipelined:
        message = f"{pipelined} pod(s) pipelined onto nodes whose resources are being released"
        return WaitReason.PIPELINED, message, "", ""
    return WaitReason.NOT_TAKEN_UP, detail or "no action took the job up this cycle", "", ""


def preemption_note(
    ssn: Session, job: JobInfo, *, status: PodGroupStatus, queue: QueueInfo | None, actions: frozenset[str]
) -> str:
    """Say whether preempt or reclaim can make room for a waiting job, and why (or why not); `actions` are
    the configured actions."""
    if not actions & _EVICTING:
        return "off: the configured actions include neither preempt nor reclaim"
    if status.phase is PodGroupPhase.PENDING:
        return "not yet: preempt and reclaim act only for jobs enqueue has admitted (Inqueue)"
    pending = list(job.tasks_with(TaskStatus.PENDING))
    if pending and all(task.preemption_never for task in pending):
        return "never: its pods' PriorityClass has preemptionPolicy Never"
    pipelined = job.count(TaskStatus.PIPELINED)
    if pipelined:
        return f"under way: {pipelined} pod(s) pipelined, waiting for evicted pods to leave"
    name = queue.name if queue is not None else job.queue
    rules = []
    if "preempt" in actions:
        rules.append(f"preempt evicts only lower-priority pods of queue {name}")
    if "reclaim" in actions:
        if queue is not None and queue.uid in ssn.queue_refusals:
            rules.append(f"reclaim takes nothing back for queue {name}: it is overused")
        else:
            rules.append("reclaim takes back only from other reclaimable queues above their deserved share")
    return "found no room this cycle: " + "; ".join(rules)


def _by_count(item: tuple[str, int]) -> tuple[int, str]:
    return -item[1], item[0]


def _nodes(job: JobInfo) -> tuple[tuple[str, int], ...]:
    """The nodes' reasons for the job's first pod that fits nowhere, most nodes first."""
    for uid, errors in job.fit_errors.items():
        if uid in job.tasks:
            return tuple(sorted(errors.nodes.items(), key=_by_count))
    return ()


def job_waits(ssn: Session, groups: Mapping[JobID, PodGroupStatus]) -> dict[JobID, JobWait]:
    """Return, for every job left waiting, why and where it stands; call before the session is released.

    Jobs the runner backed off (`ssn.skipped`) get none: no action took them up, so the cycle knows nothing
    new about them.
    """
    waiting = [
        (job, groups[job.uid])
        for job in ssn.jobs.values()
        if job.uid not in ssn.skipped and _is_waiting(groups[job.uid])
    ]
    positions = _positions(ssn, waiting)
    actions = frozenset(ssn.conf.actions)
    waits: dict[JobID, JobWait] = {}
    for job, status in waiting:
        reason, message, action, plugin = _hold(ssn, job, status)
        queue_position, cluster_position = positions.get(job.uid, (0, 0))
        queue = ssn.queues.get(job.queue)
        waits[job.uid] = JobWait(
            reason=reason,
            message=message,
            action=action,
            plugin=plugin,
            queue=str(job.queue),
            queue_position=queue_position,
            cluster_position=cluster_position,
            nodes=_nodes(job),
            min_member=job.min_available,
            ready=job.ready_task_num() + job.waiting_task_num(),
            valid=job.valid_task_num(),
            preemption=preemption_note(ssn, job, status=status, queue=queue, actions=actions),
        )
    return waits
