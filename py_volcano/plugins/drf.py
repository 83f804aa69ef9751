"""drf: Dominant Resource Fairness between jobs (Volcano's drf plugin, flat mode).

The rules: docs/semantics.md, "DRF". A job's share is its dominant share: the largest allocated /
cluster total over the cluster's dimensions. Jobs with the lower share go first; a preemptor may take a
victim while its share after the new task stays at or below the victim job's share after losing the
victim. Event handlers keep the shares current as tasks are allocated, pipelined, evicted or discarded.

Hierarchical DRF (`enableHierarchy: true` on drf) is not implemented: the plugin reports it and
keeps to flat DRF. Volcano's flat mode registers no namespace order any more, so neither does this.
"""

from __future__ import annotations

from collections.abc import Mapping

from py_volcano.api import JobID, JobInfo, Resource, TaskInfo, Vote
from py_volcano.framework import EventHandler, NoArgs, Session

__all__ = ["NAME", "SHARE_DELTA", "DrfAttr", "DrfPlugin", "JobShares", "new"]

NAME = "drf"
SHARE_DELTA = 0.000001
"""Shares closer than this count as equal when choosing victims (Volcano's shareDelta)."""


class DrfAttr:
    """One job's allocated resources and dominant share."""

    __slots__ = ("allocated", "dominant", "share")

    def __init__(self, allocated: Resource) -> None:
        self.allocated = allocated
        self.share = 0.0
        self.dominant = ""

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
        """Compute every job's allocated resources and share."""
        shares = cls(ssn)
        for job in ssn.jobs.values():
            allocated = job.allocated.clone()  # the job keeps the sum over its allocated-status tasks
            attr = shares.attrs[job.uid] = DrfAttr(allocated)
            attr.dominant, attr.share = shares.calculate_share(allocated)
        return shares

    def calculate_share(self, allocated: Resource) -> tuple[str, float]:
        """Return (dominant dimension, dominant share) of `allocated` against the cluster total."""
        share, dominant = 0.0, ""
        for name, total in self.dims:
            value = allocated.get(name) / total
            if value > share:
                share, dominant = value, name
        return dominant, share

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
            attr.dominant, attr.share = self.calculate_share(attr.allocated)

    def on_deallocate(self, task: TaskInfo) -> None:
        """Stop counting an evicted or discarded task in its job's share."""
        attr = self.attrs.get(task.job) if task.job else None
        if attr is not None:
            attr.allocated.sub_without_assert(task.resreq)
            attr.dominant, attr.share = self.calculate_share(attr.allocated)


class DrfPlugin:
    """Dominant Resource Fairness: job order and preemption victims by dominant share."""

    name = NAME

    def __init__(self, args: NoArgs) -> None:
        self.args = args
        self.shares: JobShares | None = None

    def on_session_open(self, ssn: Session) -> None:
        """Compute the jobs' shares and register the job order, the victim filter and the event handlers."""
        if _hierarchy_requested(ssn):
            ssn.warn("plugin drf: enableHierarchy is not supported by py-volcano; flat DRF is used")
        shares = self.shares = JobShares.build(ssn)
        ssn.add_preemptable_fn(NAME, shares.preemptable)
        ssn.add_job_order_fn(NAME, shares.job_order)
        ssn.add_event_handler(EventHandler(allocate=shares.on_allocate, deallocate=shares.on_deallocate))

    def on_session_close(self, ssn: Session) -> None:
        """Drop the session's shares."""
        self.shares = None


def _hierarchy_requested(ssn: Session) -> bool:
    """Volcano enables hierarchical DRF only when the switch is written and true (unlike other switches)."""
    for tier in ssn.conf.tiers:
        for option in tier:
            if option.name == NAME:
                return option.switches.get("hierarchy") is True
    return False


def new(args: NoArgs) -> DrfPlugin:
    """Build the plugin."""
    return DrfPlugin(args)
