"""Flat DRF: every job's allocated resources and dominant share, the job order and the preemptable rule.

The rules: docs/semantics.md, "DRF". A job's share is its dominant share: the largest allocated /
cluster total over the cluster's dimensions. Jobs with the lower share go first; a preemptor may take a
victim while its share after the new task stays at or below the victim job's share after losing the
victim. Event handlers keep the shares current as tasks are allocated, pipelined, evicted or discarded.
"""

from __future__ import annotations

from collections.abc import Mapping

from py_volcano.api import JobID, JobInfo, Resource, TaskInfo, Vote
from py_volcano.framework import Session

__all__ = ["SHARE_DELTA", "DrfAttr", "JobShares"]

SHARE_DELTA = 0.000001
"""Shares closer than this count as equal when choosing victims (Volcano's shareDelta)."""


class DrfAttr:
    """One job's (or hierarchy node's) allocated resources and dominant share."""

    __slots__ = ("allocated", "dominant", "share")

    def __init__(self, allocated: Resource) -> None:
        self.allocated = allocated
        self.share = 0.0
        self.dominant = ""

    def clone(self) -> DrfAttr:
        """Return a copy whose allocated resources change independently."""
        copy = DrfAttr(self.allocated.clone())
        copy.share, copy.dominant = self.share, self.dominant
        return copy

    def __repr__(self) -> str:
        return f"DrfAttr(dominant {self.dominant or '-'} share {self.share:.6f})"


class JobShares:
    """Per-session DRF state: the cluster total, its dimensions, and every job's attr."""

    __slots__ = ("attrs", "dims", "jobs", "total")

    def __init__(self, ssn: Session) -> None:
        self.jobs: Mapping[JobID, JobInfo] = ssn.jobs
        self.total = ssn.total_resource.clone()
        self.dims = tuple((name, self.total.get(name)) for name in self.total.names())
        self.attrs: dict[JobID, DrfAttr] = {}

    @classmethod
    def build(cls, ssn: Session) -> JobShares:
        """Compute every job's allocated resources and share; the session's backlog jobs get none (they
        allocate nothing, and no walk orders them or takes victims from them)."""
        shares = cls(ssn)
        backlog = ssn.backlog.entries
        for job in ssn.jobs.values():
            if job.uid not in backlog:
                shares.add_job(job)
        return shares

    def add_job(self, job: JobInfo) -> DrfAttr:
        """Give the job its attr: its allocated resources (the sum over its allocated-status tasks) and share."""
        attr = self.attrs[job.uid] = DrfAttr(job.allocated.clone())
        attr.dominant, attr.share = self.calculate_share(attr.allocated)
        return attr

    def calculate_share(self, allocated: Resource) -> tuple[str, float]:
        """Return (dominant dimension, dominant share) of `allocated` against the cluster total."""
        share, dominant = 0.0, ""
        for name, total in self.dims:
            value = allocated.get(name) / total
            if value > share:
                share, dominant = value, name
        return dominant, share

    def update_share(self, attr: DrfAttr) -> None:
        """Recompute `attr`'s dominant share from its allocated resources."""
        attr.dominant, attr.share = self.calculate_share(attr.allocated)

    def job_order(self, l: JobInfo, r: JobInfo) -> int:
        """The job with the lower dominant share first."""
        l_attr, r_attr = self.attrs.get(l.uid), self.attrs.get(r.uid)
        if l_attr is None or r_attr is None or l_attr.share == r_attr.share:
            return 0
        return -1 if l_attr.share < r_attr.share else 1

    def preemptable(self, preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
        """Offer a victim while the preemptor's share with its task is <= the victim job's share without it.

        Victims of one job are taken in turn: each one lowers that job's share for the next.
        """
        preemptor_attr = self.attrs.get(preemptor.job) if preemptor.job else None
        if preemptor_attr is None:
            return [], Vote.PERMIT
        _, l_share = self.calculate_share(preemptor_attr.allocated.clone().add(preemptor.resreq))
        allocations: dict[JobID, Resource] = {}
        victims = []
        for preemptee in preemptees:
            job_id = preemptee.job
            attr = self.attrs.get(job_id) if job_id else None
            if job_id is None or attr is None:
                continue
            allocated = allocations.get(job_id)
            if allocated is None:
                allocated = allocations[job_id] = attr.allocated.clone()
            _, r_share = self.calculate_share(allocated.sub_without_assert(preemptee.resreq))
            if l_share < r_share or abs(l_share - r_share) <= SHARE_DELTA:
                victims.append(preemptee)
        return victims, Vote.PERMIT

    def on_allocate(self, task: TaskInfo) -> None:
        """Count an allocated or pipelined task in its job's share."""
        attr = self.attrs.get(task.job) if task.job else None
        if attr is not None:
            attr.allocated.add(task.resreq)
            self.update_share(attr)

    def on_deallocate(self, task: TaskInfo) -> None:
        """Stop counting an evicted or discarded task in its job's share."""
        attr = self.attrs.get(task.job) if task.job else None
        if attr is not None:
            attr.allocated.sub_without_assert(task.resreq)
            self.update_share(attr)
