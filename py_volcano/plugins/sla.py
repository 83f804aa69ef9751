"""sla: a job past its SLA waiting time is admitted and keeps what allocate places for it (Volcano's sla).

A job's waiting time is its PodGroup's annotation `volcano.sh/sla-waiting-time`, else `sla-waiting-time`,
else the plugin argument `sla-waiting-time`; each is a Go duration (`1h2m3s`). Its deadline is the
PodGroup's creation plus that time. Job order puts jobs with a deadline first, the earliest deadline
first; past its deadline a job votes permit at enqueue (admitted even if a later tier would reject) and
at job pipelined (allocate keeps its partial placements reserved instead of discarding them).
docs/plugins.md, "sla".
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

from py_volcano.api import JobID, JobInfo, Vote, parse_duration
from py_volcano.framework import Arguments, Session

__all__ = ["ANNOTATIONS", "NAME", "SlaArgs", "SlaPlugin", "new"]

NAME = "sla"
WAITING_TIME = "sla-waiting-time"
#: The PodGroup annotations read, in order: the first one that holds a positive duration wins.
ANNOTATIONS = ("volcano.sh/sla-waiting-time", WAITING_TIME)


@dataclass(slots=True, frozen=True)
class SlaArgs:
    """sla's arguments."""

    waiting_time: float | None = None
    """`sla-waiting-time` (a Go duration, in seconds here): the waiting time of jobs whose PodGroup names
    none. Unset, or not positive (Volcano warns and ignores it), means such jobs have no SLA."""

    @classmethod
    def parse(cls, args: Arguments) -> SlaArgs:
        """Read the arguments; ConfigError when `sla-waiting-time` is not a duration."""
        written = args.keys()
        if WAITING_TIME not in written:
            return cls()
        seconds = args.get_duration(WAITING_TIME, 0.0)
        if seconds <= 0:
            warnings.warn(f"{args.owner}: argument {WAITING_TIME}: not positive; no cluster-wide SLA", stacklevel=2)
            return cls()
        return cls(waiting_time=seconds)


class SlaPlugin:
    """Order jobs by SLA deadline; permit enqueue and pipelining once a job is past it."""

    name = NAME

    def __init__(self, args: SlaArgs) -> None:
        self.args = args
        self.deadlines: dict[JobID, float] = {}
        self.ssn: Session | None = None

    def on_session_open(self, ssn: Session) -> None:
        """Compute each job's deadline and register job order, enqueueable and pipelined."""
        self.ssn = ssn
        self.deadlines = {}
        for job in ssn.jobs.values():
            waiting = self._waiting_time(ssn, job)
            if waiting is not None:
                self.deadlines[job.uid] = job.creation + waiting
        ssn.add_job_order_fn(NAME, self.job_order)
        ssn.add_job_enqueueable_fn(NAME, self.permit_when_overdue)
        ssn.add_job_pipelined_fn(NAME, self.permit_when_overdue)

    def on_session_close(self, ssn: Session) -> None:
        """Drop the session state."""
        self.deadlines = {}
        self.ssn = None

    def _waiting_time(self, ssn: Session, job: JobInfo) -> float | None:
        annotations = job.pod_group.annotations
        for key in ANNOTATIONS:
            text = annotations.get(key)
            if text is None:
                continue
            try:
                seconds = parse_duration(text)
            except ValueError:
                seconds = 0.0
            if seconds > 0:
                return seconds
            ssn.warn(f"PodGroup {job.uid}: field metadata.annotations[{key}]: {text!r} is not a positive duration")
        return self.args.waiting_time

    def job_order(self, l: JobInfo, r: JobInfo) -> int:
        """Jobs with a deadline first, the earlier deadline first."""
        left, right = self.deadlines.get(l.uid), self.deadlines.get(r.uid)
        if left is None:
            return 0 if right is None else 1
        if right is None or left < right:
            return -1
        return 1 if left > right else 0

    def permit_when_overdue(self, job: JobInfo) -> Vote:
        """Permit once the job has waited its SLA waiting time since its PodGroup was created; else abstain."""
        deadline = self.deadlines.get(job.uid)
        if deadline is None or self.ssn is None:
            return Vote.ABSTAIN
        return Vote.PERMIT if self.ssn.now.timestamp() >= deadline else Vote.ABSTAIN


def new(args: SlaArgs) -> SlaPlugin:
    """Build the plugin."""
    return SlaPlugin(args)
