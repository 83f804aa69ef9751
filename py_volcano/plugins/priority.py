"""priority: order jobs and tasks by PriorityClass value; only lower-priority tasks are preemptable."""

from __future__ import annotations

from py_volcano.api import JobInfo, TaskInfo, Vote
from py_volcano.framework import EvictionContext, EvictionKind, NoArgs, Session

__all__ = ["NAME", "PriorityPlugin", "new"]

NAME = "priority"


class PriorityPlugin:
    """Higher priority first; victims must have a lower priority than the preemptor."""

    name = NAME

    def __init__(self, args: NoArgs) -> None:
        self.args = args
        self.ssn: Session | None = None

    def on_session_open(self, ssn: Session) -> None:
        """Register the orderings, the preemptable filter and the starving check."""
        self.ssn = ssn
        ssn.add_task_order_fn(NAME, task_order)
        ssn.add_job_order_fn(NAME, job_order)
        ssn.add_preemptable_fn(NAME, self.preemptable)
        ssn.add_unified_evictable_fn(NAME, self.gang_evictable)
        ssn.add_job_starving_fn(NAME, job_starving)

    def on_session_close(self, ssn: Session) -> None:
        """Nothing to report."""
        self.ssn = None

    def on_job_added(self, ssn: Session, job: JobInfo) -> None:
        """Nothing to count: every function reads the jobs as they are."""

    def preemptable(self, preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
        """Across jobs compare job priorities; inside a job compare task priorities."""
        assert self.ssn is not None
        preemptor_job = self.ssn.jobs[preemptor.job] if preemptor.job else None
        victims = []
        for preemptee in preemptees:
            preemptee_job = self.ssn.jobs.get(preemptee.job) if preemptee.job else None
            if preemptor_job is None or preemptee_job is None:
                continue
            if preemptee_job.uid != preemptor_job.uid:
                if preemptee_job.priority >= preemptor_job.priority:
                    continue
            elif preemptee.priority >= preemptor.priority:
                continue
            victims.append(preemptee)
        return victims, Vote.PERMIT

    def gang_evictable(self, context: EvictionContext, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
        """gangpreempt: only tasks of jobs of a lower priority than the preemptor's; gangreclaim: every
        candidate (reclaim is about fair share, not priority)."""
        assert self.ssn is not None
        if context.kind is EvictionKind.GANG_RECLAIM:
            return candidates, Vote.PERMIT
        jobs = self.ssn.jobs
        lower = [t for t in candidates if t.job in jobs and jobs[t.job].priority < context.job.priority]
        return lower, Vote.PERMIT


def task_order(l: TaskInfo, r: TaskInfo) -> int:
    """Higher task priority first."""
    return -1 if l.priority > r.priority else 1 if l.priority < r.priority else 0


def job_order(l: JobInfo, r: JobInfo) -> int:
    """Higher job priority first."""
    return -1 if l.priority > r.priority else 1 if l.priority < r.priority else 0


def job_starving(job: JobInfo) -> bool:
    """A job is starving while some of its tasks are neither placed nor pipelined."""
    return job.ready_task_num() + job.waiting_task_num() < len(job.tasks)


def new(args: NoArgs) -> PriorityPlugin:
    """Build the plugin."""
    return PriorityPlugin(args)
