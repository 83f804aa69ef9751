"""The fast path: single-pod jobs that arrive between cycles are placed in the last cycle's session, kept
open, instead of waiting for the next whole-cluster cycle.

Volcano gives such workloads a scheduler of their own (its agent scheduler); here they take allocate's
own path over the kept session, so every placement passes the same plugins' checks: queue order and
overuse, quota (`allocatable`), predicates, node order, and the job's queue counted again with the new
request (`Session.add_job`). What the fast path does not take waits for the next cycle: gangs, jobs whose
admission a plugin decides (a PodGroup with minResources still Pending), best-effort pods (backfill's),
jobs with a network topology. docs/semantics.md, "The fast path".

Under hard sharding the other shard instances bind pods of this scheduler too: `take_in_binds` counts
each where it was bound, as the next snapshot will, so the kept session stays the store's; the arrivals
another instance owns join the session counted, and are left to it (`place_arrivals`' `leave`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from py_volcano.actions.allocate import NAME as ALLOCATE
from py_volcano.actions.allocate import AllocateAction
from py_volcano.actions.enqueue import NAME as ENQUEUE
from py_volcano.api import JobID, JobInfo, PodGroupPhase, TaskStatus
from py_volcano.framework import NoArgs, Session, Statement, overcommitted_in

__all__ = ["place_arrivals", "take_in_binds", "takes"]


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


def take_in_binds(ssn: Session, bound: Iterable[tuple[JobInfo, str]]) -> bool:
    """Count in the kept session each one-pod job someone else bound (`Store.take_bound_elsewhere`: the
    job built with its task bound, and the node), as the next snapshot counts it: a job the session holds
    pending gets its task Bound on that node, a job it does not hold joins it so. Return False when one
    cannot be taken in (a node the session lacks, its task there no longer pending, or a node its pods
    now overcommit, which changes the cluster total the share plugins divide): the session no longer
    shows the store and must end."""
    for job, node_name in bound:
        if node_name not in ssn.nodes:
            return False
        held = ssn.jobs.get(job.uid)
        if held is None:
            (task,) = job.tasks.values()
            job.update_task_status(task, TaskStatus.PENDING)  # counted on joining, then placed below
            task.node_name = ""
            ssn.add_job(job)
            held = job
        tasks = list(held.tasks.values())
        if len(tasks) != 1 or tasks[0].status is not TaskStatus.PENDING:
            return False
        Statement(ssn).take_in(tasks[0], node_name)
        if overcommitted_in(ssn.nodes[node_name]):
            return False
    return True


def place_arrivals(ssn: Session, jobs: Iterable[JobInfo], *, leave: Collection[JobID] = ()) -> list[JobInfo]:
    """Add the jobs to the kept session (counted as the next cycle will count them), admit the Pending
    ones the fast path takes as enqueue would (no minResources: no plugin is asked), and run allocate
    over those alone; the binds go to the session's `on_binds` as each statement commits. The jobs in
    `leave` (another shard instance's) are added and counted only. Return the jobs left for the next
    cycle: those not taken and those allocate could not place (none of `leave`)."""
    left: list[JobInfo] = []
    taken: list[JobID] = []
    for job in jobs:
        if job.uid in ssn.jobs:
            left.append(job)
            continue
        ssn.add_job(job)
        if job.uid in leave:
            continue
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
