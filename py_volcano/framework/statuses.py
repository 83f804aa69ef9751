"""What a cycle says about each PodGroup, waiting pod and Queue, decided when its session closes.

As in Volcano, where the gang plugin and the job updater set PodGroup conditions and phases at
session close, the scheduling side decides here: a group's phase and counts, whether its gang is
placed, why it or a pod cannot be placed, and the Queues' PodGroup counts. The cache's status
writer only diffs the result against what it last wrote. Phases follow docs/semantics.md, "PodGroup phases".
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import cast

from py_volcano.api import (
    EXPLAIN_ANNOTATION,
    GANG_READY,
    NOT_ENOUGH_PODS,
    NOT_ENOUGH_RESOURCES,
    SCHEDULED,
    UNSCHEDULABLE,
    ConditionUpdate,
    JobID,
    JobInfo,
    PodGroupPhase,
    PodGroupStatus,
    PodWait,
    QueueFigures,
    QueueInfo,
    QueueStatus,
    TaskID,
    TaskStatus,
)

__all__ = [
    "pipelined_message",
    "pod_group_conditions",
    "pod_group_status",
    "pod_waits",
    "queue_statuses",
    "unplaced_pods",
]

#: Volcano's ScheduledStatus: tasks that are, or were, on a node.
_SCHEDULED = (TaskStatus.RUNNING, TaskStatus.BOUND, TaskStatus.FAILED, TaskStatus.SUCCEEDED)
_UNPLACED = (TaskStatus.PENDING, TaskStatus.PIPELINED)
#: A placed gang is Scheduled, and an Unschedulable condition still True turns False (Volcano leaves it
#: True; a stale True misleads `kubectl wait` and dashboards).
_PLACED = (ConditionUpdate(SCHEDULED, "True", GANG_READY), ConditionUpdate(UNSCHEDULABLE, "False", SCHEDULED))


def _is_gang_ready(job: JobInfo) -> bool:
    """Volcano's gang check at session close: ready tasks (incl. this cycle's) reach every minimum."""
    return job.check_task_ready() and job.is_ready()


def _unschedulable_reason(job: JobInfo) -> str:
    """Return why an unschedulable gang waits: too few pods to ever form it, else too few resources."""
    if not job.check_task_valid() or job.valid_task_num() < job.min_available:
        return NOT_ENOUGH_PODS
    return NOT_ENOUGH_RESOURCES


def _unschedulable_message(job: JobInfo) -> str:
    """Return `n/m tasks unschedulable: <first fit error>` (after the job's own error, if any); "" when
    the cycle found no reason."""
    if job.fit_errors:
        unschedulable = sum(1 for uid in job.fit_errors if uid in job.tasks)
        first = next(iter(job.fit_errors.values()))
        message = f"{unschedulable}/{len(job.tasks)} tasks unschedulable: {first.summary()}"
        return f"{job.job_fit_error}; {message}" if job.job_fit_error else message
    waiting = job.count(TaskStatus.PENDING)
    if job.job_fit_error and waiting:
        return f"{waiting}/{len(job.tasks)} tasks unschedulable: {job.job_fit_error}"
    return ""


def pod_group_conditions(*, unschedulable: str, reason: str, placed: bool) -> tuple[ConditionUpdate, ...]:
    """Return the conditions a cycle sets on a PodGroup (Volcano's gang plugin, at session close).

    A placed gang is Scheduled (and retracts Unschedulable); a gang that is not placed and has a
    message is Unschedulable with `reason`; otherwise the cycle sets none.
    """
    if placed:
        return _PLACED
    if unschedulable:
        return (ConditionUpdate(UNSCHEDULABLE, "True", reason, unschedulable),)
    return ()


def _phase(job: JobInfo, counts: Mapping[TaskStatus, int], *, ready: bool) -> PodGroupPhase:
    """Volcano's getPodGroupPhase, at the end of the cycle (docs/semantics.md, "PodGroup phases"); `counts`
    are the job's tasks per status."""
    releasing = (
        sum(1 for task in job.tasks_with(TaskStatus.RELEASING) if task.node_name)
        if TaskStatus.RELEASING in counts
        else 0
    )
    scheduled = sum(counts.get(status, 0) for status in _SCHEDULED) + releasing
    if counts.get(TaskStatus.RUNNING) and not ready and not _ready_but_releasing(job, counts, releasing, scheduled):
        return PodGroupPhase.UNKNOWN
    if scheduled >= job.min_available and job.tasks:
        completed = counts.get(TaskStatus.SUCCEEDED, 0) + counts.get(TaskStatus.FAILED, 0)
        return PodGroupPhase.COMPLETED if scheduled == completed else PodGroupPhase.RUNNING
    return job.phase if job.phase is PodGroupPhase.INQUEUE else PodGroupPhase.PENDING


def _ready_but_releasing(job: JobInfo, counts: Mapping[TaskStatus, int], releasing: int, scheduled: int) -> bool:
    """Volcano's gang skips the Unschedulable condition of a job whose placed tasks (`scheduled`, its
    `releasing` terminating ones included) reach minMember while nothing of it waits."""
    if not releasing or counts.get(TaskStatus.PENDING) or counts.get(TaskStatus.PIPELINED):
        return False
    return scheduled >= job.min_available


def pod_group_status(job: JobInfo, *, ready: bool, bound: bool) -> PodGroupStatus:
    """Return a job's PodGroup status after the cycle.

    `ready` is the plugins' job-ready verdict, `bound` whether the cycle bound any of its tasks.
    """
    counts = {status: len(bucket) for status, bucket in job.task_status_index.items()}
    phase = _phase(job, counts, ready=ready)
    pending = len(job.tasks) - job.ready_task_num() - counts.get(TaskStatus.PIPELINED, 0)
    message = _unschedulable_message(job) if job.fit_errors or job.job_fit_error else ""
    placed = phase is PodGroupPhase.RUNNING or (bound and _is_gang_ready(job))
    reason = _unschedulable_reason(job) if message and not placed else NOT_ENOUGH_RESOURCES
    spec = job.pod_group
    return PodGroupStatus(
        phase=phase,
        running=counts.get(TaskStatus.RUNNING, 0),
        succeeded=counts.get(TaskStatus.SUCCEEDED, 0),
        failed=counts.get(TaskStatus.FAILED, 0),
        pending=max(pending, 0),
        unschedulable=message,
        queue=str(job.queue),
        shadow=spec.shadow,
        conditions=pod_group_conditions(unschedulable=message, reason=reason, placed=placed),
        namespace=spec.namespace,
        name=spec.name,
        uid=spec.uid,
        observed_conditions=spec.conditions,
        observed_explanation=spec.annotations.get(EXPLAIN_ANNOTATION, ""),
    )


def pipelined_message(task_key: str, node: str) -> str:
    """Return Volcano's PodScheduled message for a task pipelined onto `node`."""
    return f"Pod {task_key} can possibly be assigned to {node}, once resource is released"


def pod_waits(jobs: Iterable[JobInfo], statuses: Mapping[JobID, PodGroupStatus]) -> dict[TaskID, PodWait]:
    """Return why each waiting pod waits: a pending pod of an unschedulable group its own fit error,
    else the group's message; a pipelined pod the node it waits for. Other pods get none.

    Pending pods come first, in job order, then pipelined ones.
    """
    waits: dict[TaskID, PodWait] = {}
    pipelined: dict[TaskID, PodWait] = {}
    for job in jobs:
        status = statuses.get(job.uid)
        if status is not None and status.unschedulable:
            for task in job.tasks_with(TaskStatus.PENDING):
                own = job.fit_errors.get(task.uid)
                message = own.summary() if own is not None else status.unschedulable
                waits[task.uid] = PodWait(task.namespace, task.name, message)
        for task in job.task_status_index.get(TaskStatus.PIPELINED, {}).values():
            pipelined[task.uid] = PodWait(task.namespace, task.name, pipelined_message(task.key, task.node_name))
    waits.update(pipelined)
    return waits


def unplaced_pods(jobs: Iterable[JobInfo]) -> set[TaskID]:
    """Return every pod still pending or pipelined after the cycle."""
    unplaced: set[TaskID] = set()
    for job in jobs:
        index = job.task_status_index
        for status in _UNPLACED:
            tasks = index.get(status)
            if tasks:
                unplaced.update(tasks)
    return unplaced


def queue_statuses(
    queues: Iterable[QueueInfo],
    figures: Mapping[str, QueueFigures],
    groups: Iterable[PodGroupStatus],
    settled: Mapping[Hashable, int],
) -> dict[str, QueueStatus]:
    """Return each queue's status: its state, its PodGroups per phase (shadow groups count; `settled`:
    per (queue name, phase), the groups of the jobs left out of the cycle), allocated."""
    counts: dict[str, dict[PodGroupPhase, int]] = {}
    for key, number in settled.items():
        name, phase = cast(tuple[str, PodGroupPhase], key)
        tally = counts.get(name)
        if tally is None:
            tally = counts[name] = dict.fromkeys(PodGroupPhase, 0)
        tally[phase] += number
    for group in groups:
        tally = counts.get(group.queue)
        if tally is None:
            tally = counts[group.queue] = dict.fromkeys(PodGroupPhase, 0)
        tally[group.phase] += 1
    statuses: dict[str, QueueStatus] = {}
    for queue in queues:
        tally = counts.get(queue.name) or dict.fromkeys(PodGroupPhase, 0)
        statuses[queue.name] = QueueStatus(
            state=queue.state,
            state_set=queue.state_set,
            resource_version=queue.resource_version,
            pending=tally[PodGroupPhase.PENDING],
            inqueue=tally[PodGroupPhase.INQUEUE],
            running=tally[PodGroupPhase.RUNNING],
            unknown=tally[PodGroupPhase.UNKNOWN],
            completed=tally[PodGroupPhase.COMPLETED],
            allocated=figures[queue.name].allocated,
        )
    return statuses
