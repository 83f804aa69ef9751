"""overcommit: admit a job only while the cluster, scaled by an overcommit factor, has room for it."""

from __future__ import annotations

from dataclasses import dataclass

from py_volcano.api import JobInfo, PodGroupPhase, Resource, Vote
from py_volcano.framework import Arguments, Session

__all__ = ["NAME", "OvercommitArgs", "OvercommitPlugin", "new"]

NAME = "overcommit"
DEFAULT_FACTOR = 1.2


@dataclass(slots=True, frozen=True)
class OvercommitArgs:
    """overcommit's arguments."""

    factor: float = DEFAULT_FACTOR
    """`overcommit-factor`: how many times the cluster's total is admitted; below 1 means the default, as in
    Volcano."""

    @classmethod
    def parse(cls, args: Arguments) -> OvercommitArgs:
        """Read the arguments; ConfigError on a value that is not a number."""
        factor = args.get_float("overcommit-factor", DEFAULT_FACTOR)
        return cls(factor=factor if factor >= 1.0 else DEFAULT_FACTOR)


class OvercommitPlugin:
    """Idle = total x factor - used; a job is admitted while inqueue + its minResources fit idle."""

    name = NAME

    def __init__(self, args: OvercommitArgs) -> None:
        self.factor = args.factor
        self.idle = Resource()
        self.inqueue = Resource()

    def on_session_open(self, ssn: Session) -> None:
        """Compute the overcommitted idle resources and what admitted jobs already claim."""
        self.idle = ssn.total_resource.clone().multi(self.factor).sub_without_assert(ssn.used_resource)
        self.inqueue = Resource()
        backlog = ssn.backlog
        for job in ssn.jobs.values():
            if job.phase is PodGroupPhase.INQUEUE and job.min_resources is not None and job.uid not in backlog.entries:
                self.inqueue.add(job.min_resources)
        for _, sums in backlog.queues():
            self.inqueue.add(sums.inqueue)
        ssn.add_job_enqueueable_fn(NAME, self.enqueueable)
        ssn.add_job_enqueued_fn(NAME, self.enqueued)

    def on_session_close(self, ssn: Session) -> None:
        """Nothing to report."""

    def on_job_added(self, ssn: Session, job: JobInfo) -> None:
        """Count an admitted job's minResources as claimed, as the session's opening does."""
        if job.phase is PodGroupPhase.INQUEUE and job.min_resources is not None:
            self.inqueue.add(job.min_resources)

    def enqueueable(self, job: JobInfo) -> Vote:
        """Permit when inqueue plus the job's minResources fit the overcommitted idle resources."""
        if job.min_resources is None:
            return Vote.PERMIT
        wanted = self.inqueue.clone().add(job.min_resources)
        if wanted.less_equal_with_dimension(self.idle, job.min_resources):
            return Vote.PERMIT
        job.job_fit_error = "resource in cluster is overused"
        return Vote.REJECT

    def enqueued(self, job: JobInfo) -> None:
        """Count an admitted job's minResources as claimed."""
        if job.min_resources is not None:
            self.inqueue.add(job.min_resources)


def new(args: OvercommitArgs) -> OvercommitPlugin:
    """Build the plugin."""
    return OvercommitPlugin(args)
