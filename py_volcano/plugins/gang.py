"""gang: all-or-nothing scheduling of a PodGroup's minMember (and per-role minTaskMember)."""

from __future__ import annotations

from py_volcano.api import JobID, JobInfo, TaskInfo, Vote
from py_volcano.framework import EvictionContext, NoArgs, Session, ValidateResult

__all__ = ["NAME", "GangPlugin", "new"]

NAME = "gang"
NOT_ENOUGH_PODS = "NotEnoughPods"
NOT_ENOUGH_PODS_OF_TASK = "NotEnoughPodsOfTask"


class GangPlugin:
    """Jobs are valid, ready, pipelined and starving by their gang; victims only above minMember."""

    name = NAME

    def __init__(self, args: NoArgs) -> None:
        self.args = args
        self.ssn: Session | None = None

    def on_session_open(self, ssn: Session) -> None:
        """Register the gang checks and the victim filter for preempt and reclaim."""
        self.ssn = ssn
        ssn.add_job_valid_fn(NAME, job_valid)
        ssn.add_preemptable_fn(NAME, self.preemptable)
        ssn.add_reclaimable_fn(NAME, self.preemptable)
        ssn.add_unified_evictable_fn(NAME, gang_evictable)
        ssn.add_job_order_fn(NAME, job_order)
        ssn.add_job_ready_fn(NAME, job_ready)
        ssn.add_job_pipelined_fn(NAME, job_pipelined)
        ssn.add_job_starving_fn(NAME, job_starving)

    def on_session_close(self, ssn: Session) -> None:
        """Nothing to report: the session writes PodGroup conditions from the jobs' fit errors."""
        self.ssn = None

    def on_job_added(self, ssn: Session, job: JobInfo) -> None:
        """Nothing to count: every function reads the jobs as they are."""

    def preemptable(self, preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
        """Offer only tasks above each victim job's minMember."""
        assert self.ssn is not None
        occupied: dict[JobID, int] = {}
        victims = []
        for preemptee in preemptees:
            job = self.ssn.jobs.get(preemptee.job) if preemptee.job else None
            if job is None:
                continue
            if job.uid not in occupied:
                occupied[job.uid] = job.ready_task_num()
            if occupied[job.uid] > job.min_available:
                occupied[job.uid] -= 1
                victims.append(preemptee)
        return victims, Vote.PERMIT


def gang_evictable(context: EvictionContext, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
    """Permit every candidate: the gang-aware actions keep gangs whole through their bundles."""
    return candidates, Vote.PERMIT


def job_valid(job: JobInfo) -> ValidateResult | None:
    """A job needs enough valid tasks overall and per role."""
    if not job.check_task_valid():
        return ValidateResult(False, NOT_ENOUGH_PODS_OF_TASK, "Not enough valid pods of each task for gang-scheduling")
    valid = job.valid_task_num()
    if valid < job.min_available:
        return ValidateResult(
            False,
            NOT_ENOUGH_PODS,
            f"Not enough valid tasks for gang-scheduling, valid: {valid}, min: {job.min_available}",
        )
    return None


def job_order(l: JobInfo, r: JobInfo) -> int:
    """Jobs that are not ready yet go first."""
    l_ready, r_ready = l.is_ready(), r.is_ready()
    if l_ready == r_ready:
        return 0
    return 1 if l_ready else -1


def job_ready(job: JobInfo) -> bool:
    """Ready tasks reach minMember and every role's minimum."""
    return job.check_task_ready() and job.is_ready()


def job_pipelined(job: JobInfo) -> Vote:
    """Permit when ready, pipelined and pending best-effort tasks reach minMember and every role's minimum."""
    return Vote.PERMIT if job.check_task_pipelined() and job.is_pipelined() else Vote.REJECT


def job_starving(job: JobInfo) -> bool:
    """Starving while ready plus pipelined tasks are below minMember."""
    return job.is_starving()


def new(args: NoArgs) -> GangPlugin:
    """Build the plugin."""
    return GangPlugin(args)
