"""The fast path: single-pod jobs that arrive between cycles are placed in the last cycle's session, kept
open, instead of waiting for the next whole-cluster cycle.

Volcano gives such workloads a scheduler of their own (its agent scheduler); here they take allocate's
own path over the kept session, so every placement passes the same plugins' checks: queue order and
overuse, quota (`allocatable`), predicates, node order, and the job's queue counted again with the new
request (`Session.add_job`). What the fast path does not take waits for the next cycle: gangs, jobs whose
admission a plugin decides (a PodGroup with minResources still Pending), best-effort pods (backfill's),
jobs with a network topology. docs/semantics.md, "The fast path".
"""

from __future__ import annotations

from collections.abc import Iterable

from py_volcano.actions.allocate import NAME as ALLOCATE
from py_volcano.actions.allocate import AllocateAction
from py_volcano.actions.enqueue import NAME as ENQUEUE
from py_volcano.api import JobID, JobInfo, PodGroupPhase, TaskStatus
from py_volcano.framework import NoArgs, Session

__all__ = ["place_arrivals", "takes"]


def takes(ssn: Session, job: JobInfo) -> bool:
    """Whether the fast path may place `job`: one pending pod that requests resources, no gang and no
    network topology, in an open queue, admitted already or admitted without asking a plugin."""
    if len(job.tasks) != 1 or job.min_available > 1 or job.pod_group.network_topology:
        return False
    queue = ssn.queues.get(job.queue)
    if queue is None or not queue.is_open():
        return False
    if any(task.best_effort or task.status is not TaskStatus.PENDING for task in job.tasks.values()):
        return False
    return not (job.is_pending() and ENQUEUE in ssn.conf.actions and job.min_resources is not None)


def place_arrivals(ssn: Session, jobs: Iterable[JobInfo]) -> list[JobInfo]:
    """Add the jobs to the kept session (counted as the next cycle will count them), admit the Pending
    ones the fast path takes as enqueue would (no minResources: no plugin is asked), and run allocate
    over those alone; the binds go to the session's `on_binds` as each statement commits. Return the
    jobs left for the next cycle: those not taken and those allocate could not place."""
    left: list[JobInfo] = []
    taken: list[JobID] = []
    for job in jobs:
        if job.uid in ssn.jobs:
            left.append(job)
            continue
        ssn.add_job(job)
        if not takes(ssn, job):
            left.append(job)
            continue
        if job.is_pending():
            if ENQUEUE in ssn.conf.actions:
                ssn.job_enqueued(job)
            job.phase = PodGroupPhase.INQUEUE
        taken.append(job.uid)
    if taken:
        ssn.action = ALLOCATE
        AllocateAction(NoArgs()).execute(ssn, only=taken)
        ssn.action = ""
        left.extend(job for uid in taken if (job := ssn.jobs[uid]).count(TaskStatus.PENDING))
    return left
