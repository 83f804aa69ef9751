"""enqueue: admit Pending PodGroups (phase Inqueue) queue by queue while the plugins permit."""

from __future__ import annotations

from scheduler.api import JobInfo, PodGroupPhase, QueueID
from scheduler.framework import Arguments, PriorityQueue, Session

__all__ = ["NAME", "EnqueueAction", "new"]

NAME = "enqueue"


class EnqueueAction:
    """Visit queues in queue order, one job at a time in job order, admitting what may run."""

    name = NAME

    def __init__(self, args: Arguments) -> None:
        self.args = args

    def execute(self, ssn: Session) -> None:
        """Admit jobs; a group without minResources is admitted without asking any plugin."""
        queues, jobs = _pending_jobs_by_queue(ssn)
        while not queues.empty():
            queue = queues.pop()
            pending = jobs.get(queue.uid)
            if pending is None or pending.empty():
                continue
            job = pending.pop()
            if job.min_resources is None or ssn.job_enqueueable(job):
                ssn.job_enqueued(job)
                job.phase = PodGroupPhase.INQUEUE
            queues.push(queue)


def _pending_jobs_by_queue(ssn: Session) -> tuple[PriorityQueue, dict[QueueID, PriorityQueue[JobInfo]]]:  # type: ignore[type-arg]
    queues = PriorityQueue(ssn.queue_order_fn)
    jobs: dict[QueueID, PriorityQueue[JobInfo]] = {}
    for job in ssn.jobs.values():
        queue = ssn.queues.get(job.queue)
        if queue is None or not job.is_pending():
            continue
        if not queue.is_open():
            ssn.warn(
                f"PodGroup {job.uid}: field spec.queue: queue {queue.name!r} is {queue.state.value}; the job waits"
            )
            continue
        if queue.uid not in jobs:
            jobs[queue.uid] = PriorityQueue(ssn.job_order_fn)
            queues.push(queue)
        jobs[queue.uid].push(job)
    return queues, jobs


def new(args: Arguments) -> EnqueueAction:
    """Build the action."""
    return EnqueueAction(args)
