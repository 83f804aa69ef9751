"""enqueue: admit Pending PodGroups (phase Inqueue) queue by queue while the plugins permit."""

from __future__ import annotations

from collections.abc import Callable

from py_volcano.api import JobInfo, PodGroupPhase, QueueInfo
from py_volcano.framework import NoArgs, Session

__all__ = ["NAME", "EnqueueAction", "new"]

NAME = "enqueue"


class EnqueueAction:
    """Visit queues in queue order, one job at a time in job order, admitting what may run."""

    name = NAME

    def __init__(self, args: NoArgs) -> None:
        self.args = args

    def execute(self, ssn: Session) -> None:
        """Admit jobs; a group without minResources is admitted without asking any plugin."""
        queues, jobs = ssn.jobs_by_queue(_admissible(ssn))
        while not queues.empty():
            queue = queues.pop()
            pending = jobs.get(queue.uid)
            if pending is None or pending.empty():
                continue
            job = pending.pop()
            ssn.record_turn(job)
            if job.min_resources is None or ssn.job_enqueueable(job):
                ssn.job_enqueued(job)
                job.phase = PodGroupPhase.INQUEUE
            queues.push(queue)


def _admissible(ssn: Session) -> Callable[[JobInfo, QueueInfo], bool]:
    def include(job: JobInfo, queue: QueueInfo) -> bool:
        if not job.is_pending():
            return False
        if not queue.is_open():
            ssn.warn(
                f"PodGroup {job.uid}: field spec.queue: queue {queue.name!r} is {queue.state.value}; the job waits"
            )
            return False
        return True

    return include


def new(args: NoArgs) -> EnqueueAction:
    """Build the action."""
    return EnqueueAction(args)
