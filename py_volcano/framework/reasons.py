"""Why a job or a pod waits, in words, where the actions' own failures do not say it: decided when the
session closes, written by the status writer as PodGroup Unschedulable and pod PodScheduled=False
conditions and events (docs/semantics.md, "Why a pod waits").

* A pod no node could hold even empty is told so, with the nodes counted by reason, though its
  queue's quota refused it first (a pod too big for every node also exceeds any share of them).
* A pod its queue's quota refused is told which limit: the queue's capability, or its deserved
  share, with the amounts on the dimensions that do not fit, as the queue plugin computed them.
* A job whose Queue is missing, invalid (with the parse error) or not open is told so; so is a pod
  whose PodGroup is missing or invalid, and a pod of this scheduler that cannot be parsed.
* The jobs the cycle took up and could not place are the ones the runner backs off.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping

from py_volcano.api import (
    FitErrors,
    JobID,
    JobInfo,
    PodGroupStatus,
    PodWait,
    QueueFigures,
    QueueID,
    QueueInfo,
    Resource,
    SkippedPod,
    TaskID,
    TaskInfo,
    TaskStatus,
)

__all__ = [
    "explain_quota_refusals",
    "note_queue_blockers",
    "quota_message",
    "skipped_pod_waits",
    "unschedulable_jobs",
]


def _amounts(resource: Resource, names: Iterable[str]) -> str:
    quantities = resource.to_quantities()
    return ", ".join(f"{name} {quantities.get(name, '0')}" for name in names)


def quota_message(queue: QueueInfo, task: TaskInfo, figures: QueueFigures | None) -> str:
    """Say which limit of `queue` refused `task`: closed, its (real) capability, else its deserved share."""
    if not queue.is_open():
        return f"queue {queue.name} is {queue.state.value}: no more of its pods are placed"
    if figures is None:
        return f"queue {queue.name} has no quota left for pod {task.key}"
    wanted = figures.allocated.clone().add(task.resreq)
    limit = figures.real_capability
    if limit is not None:
        fits, short = wanted.less_equal_with_dimension_and_resources_name(limit, task.resreq)
        if not fits:
            capability = figures.capability
            lowered = capability is not None and any(0 < limit.get(name) < capability.get(name) for name in short)
            return (
                f"queue {queue.name} is over its capability: allocated + pod {task.key} "
                f"= {_amounts(wanted, short)} > {_amounts(limit, short)}"
                + (" (what other queues' guarantees leave of it)" if lowered else "")
            )
    deserved = figures.deserved if figures.deserved is not None else Resource()
    _, short = wanted.less_equal_with_dimension_and_resources_name(deserved, task.resreq)
    names = short or list(task.resreq.names())
    return (
        f"queue {queue.name} is over its deserved share: allocated + pod {task.key} "
        f"= {_amounts(wanted, names)} > deserved {_amounts(deserved, names)}"
    )


def explain_quota_refusals(
    jobs: Mapping[JobID, JobInfo],
    refusals: Mapping[JobID, tuple[QueueInfo, TaskInfo, str]],
    figures: Mapping[str, QueueFigures],
    unholdable: Callable[[TaskInfo], FitErrors | None],
) -> None:
    """Replace each job's quota refusal (still its fit error) with the words of `quota_message`, or with
    "no node can hold" when `unholdable` says no node could hold the refused pod even empty."""
    for job_id, (queue, task, written) in refusals.items():
        job = jobs.get(job_id)
        if job is None or job.job_fit_error != written:
            continue
        nowhere = unholdable(task) if queue.is_open() else None
        if nowhere is not None:
            job.job_fit_error = f"no node can hold pod {task.key}: {nowhere.summary()}"
        else:
            job.job_fit_error = quota_message(queue, task, figures.get(queue.name))


def _queue_blocker(job: JobInfo, queue: QueueInfo | None, invalid: Mapping[str, str]) -> str:
    name = str(job.queue)
    if queue is None:
        error = invalid.get(name)
        return f"queue {name} is invalid: {error}" if error else f"queue {name} not found"
    if not queue.is_open() and job.is_pending():
        return f"queue {name} is {queue.state.value}: it admits no new jobs"
    return ""


def note_queue_blockers(
    jobs: Iterable[JobInfo],
    queues: Mapping[QueueID, QueueInfo],
    invalid: Mapping[str, str],
    skipped: frozenset[JobID],
) -> None:
    """Give every job the cycle could not take up for its Queue (missing, invalid, not open) that reason,
    unless the cycle recorded another or backed the job off."""
    for job in jobs:
        if TaskStatus.PENDING not in job.task_status_index or job.job_fit_error or job.fit_errors or job.uid in skipped:
            continue
        blocker = _queue_blocker(job, queues.get(job.queue), invalid)
        if blocker:
            job.job_fit_error = blocker


def skipped_pod_waits(skipped: Iterable[SkippedPod]) -> dict[TaskID, PodWait]:
    """Return the PodScheduled=False of each pod the snapshot left out (no job holds it)."""
    return {TaskID(pod.uid): PodWait(pod.namespace, pod.name, pod.message, pod.reason) for pod in skipped}


def unschedulable_jobs(
    jobs: Iterable[JobInfo],
    statuses: Mapping[JobID, PodGroupStatus],
    bound: Collection[JobID | None],
    skipped: frozenset[JobID],
) -> set[JobID]:
    """Return the jobs the cycle took up and could not place: a pending pod, a reason, nothing bound or
    pipelined, and not backed off already."""
    return {
        job.uid
        for job in jobs
        if TaskStatus.PENDING in job.task_status_index
        and job.uid not in skipped
        and job.uid not in bound
        and statuses[job.uid].unschedulable
        and TaskStatus.PIPELINED not in job.task_status_index
    }

