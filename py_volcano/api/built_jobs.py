"""BuiltJobs: the jobs one snapshot built, handed as they are to the next while nothing changed them.

A job follows from its PodGroup (or, for a pod without one, that pod and its group's phase), its
priority, and its pods in listing order. The store replaces a parsed object whenever anything in it
changes, so when the next snapshot finds the very same objects and priority it would build the same
job again; it takes the built one instead, unless a session changed it since: `JobInfo.version`
counts every change of its tasks, and `job_fingerprint` covers the fields a cycle sets on a job. Each
entry also keeps the PodGroup status a cycle decided for the job while it was unchanged (`status`,
under configuration `token`): a cycle that did not touch the job decides the same one.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace

from py_volcano.api.job_info import JobInfo, PodGroupSpec
from py_volcano.api.manifests import ParsedPod
from py_volcano.api.results import PodGroupStatus
from py_volcano.api.settled import whole
from py_volcano.api.types import TERMINATED, JobID, PodGroupPhase

__all__ = ["BuiltJob", "BuiltJobs", "job_fingerprint"]

Fingerprint = tuple[object, ...]


def job_fingerprint(job: JobInfo) -> Fingerprint:
    """What a cycle may change on a job besides its tasks' statuses (counted in `version`)."""
    return (
        job.version,
        job.phase,
        job.priority,
        job.queue,
        job.min_available,
        job.job_fit_error,
        len(job.fit_errors),
        id(job.min_resources),
        id(job.task_min_available),
    )


@dataclass(slots=True)
class BuiltJob:
    """One job as a snapshot built it: its inputs (`source`: the PodGroup, or the pod of a one-pod
    group with that group's phase), its pods, priority, its `job_fingerprint` then, and a decided status."""

    job: JobInfo
    source: PodGroupSpec | ParsedPod
    phase: PodGroupPhase | None
    pods: list[ParsedPod]
    priority: int
    fingerprint: Fingerprint
    nodes: frozenset[str] = frozenset()
    """The nodes its tasks held in the snapshot that built it (`BuiltNodes.build_changed`)."""
    status: PodGroupStatus | None = None
    token: object = None
    whole: bool = False
    """Whether every figure the job adds is a whole number (`api.settled.whole`)."""
    settled: bool = False
    """Whether the last snapshot left the job out of its session (`api.Settled`): no session changed it."""

    def unchanged(self, pods: list[ParsedPod], priority: int) -> bool:
        """Whether `pods` and `priority` build this job, which no session changed since."""
        return (
            priority == self.priority
            and pods == self.pods
            and (self.settled or job_fingerprint(self.job) == self.fingerprint)
        )

    def adopt(self, phase: PodGroupPhase | None) -> bool:
        """Give this unchanged one-pod group the Running `phase` the store recorded from the status a cycle
        decided for it (then Running too); return whether it did. Built afresh with that phase it would be
        the same job, and decide the same status: a placed group's Running does not follow its phase."""
        status = self.status
        if (
            phase is not PodGroupPhase.RUNNING
            or status is None
            or status.phase is not PodGroupPhase.RUNNING
            or job_fingerprint(self.job) != self.fingerprint
        ):
            return False
        job = self.job
        job.phase = phase
        job.pod_group = replace(job.pod_group, phase=phase)
        self.phase = phase
        self.fingerprint = job_fingerprint(job)
        return True

    def decided(self, token: object) -> PodGroupStatus | None:
        """The status a cycle under `token` decided for the job while it stayed unchanged, or None."""
        if self.status is None or token is not self.token or job_fingerprint(self.job) != self.fingerprint:
            return None
        return self.status


class BuiltJobs:
    """The jobs of the last snapshot, by id; the next snapshot takes the unchanged ones (`take`)."""

    __slots__ = ("_carried", "active", "jobs", "kept")

    def __init__(self) -> None:
        self.jobs: Mapping[JobID, BuiltJob] = {}
        """The last snapshot's jobs: those it took or built, then those it carried (not copied)."""
        self.kept: dict[JobID, BuiltJob] = {}
        self.active: list[JobID] = []
        """The last snapshot's jobs that were taken or built, not carried."""
        self._carried: dict[JobID, BuiltJob] = {}

    def take(
        self,
        key: JobID,
        source: PodGroupSpec | ParsedPod,
        phase: PodGroupPhase | None,
        pods: list[ParsedPod],
        priority: int,
    ) -> JobInfo | None:
        """Return the job the last snapshot built from these inputs if no session changed it, else None."""
        last = self.jobs.get(key)
        if last is None or last.source is not source or not last.unchanged(pods, priority):
            return None
        if last.phase != phase and not last.adopt(phase):
            return None
        last.settled = False  # a session may see it now
        self.kept[key] = last
        return last.job

    def carry(self, entries: Mapping[JobID, BuiltJob]) -> None:
        """Hand on the settled jobs a snapshot carries unlooked at (`api.Settled`), as they were: looked
        up behind the jobs taken or built, not copied among them (`seal`)."""
        self._carried = entries if isinstance(entries, dict) else dict(entries)

    def record(
        self, job: JobInfo, source: PodGroupSpec | ParsedPod, phase: PodGroupPhase | None, pods: list[ParsedPod]
    ) -> None:
        """Note a job the snapshot being built holds (taken or built)."""
        kept = self.kept.get(job.uid)
        if kept is not None and kept.job is job:
            return
        nodes = frozenset(
            task.node_name for task in job.tasks.values() if task.node_name and task.status not in TERMINATED
        )
        self.kept[job.uid] = BuiltJob(job, source, phase, pods, job.priority, (), nodes, whole=whole(job))

    def touched(
        self, taken: Collection[JobID], carried: Mapping[JobID, BuiltJob], dropped: Iterable[JobID] | None = None
    ) -> set[str]:
        """The nodes whose tasks the last snapshot's jobs held, of the jobs neither `taken` nor `carried`.

        `dropped`, when given, are the jobs the last snapshot carried or settled that `carried` leaves
        out (`Settled.dropped`): those and the last snapshot's other jobs (`active`) are then the only
        ones to look at."""
        jobs = self.jobs
        if dropped is None:
            keys: Iterable[JobID] = jobs.keys() - taken - carried.keys()
        else:
            keys = {key for key in (*self.active, *dropped) if key not in taken and key not in carried and key in jobs}
        return {node for key in keys for node in jobs[key].nodes}

    def seal(self) -> Mapping[JobID, BuiltJob]:
        """Close the snapshot: the jobs recorded become the ones the next takes from; return them."""
        for entry in self.kept.values():
            if not entry.fingerprint:  # a taken job's was checked as it was taken (a carried one too)
                entry.fingerprint = job_fingerprint(entry.job)
        self.active = list(self.kept)
        self.jobs = ChainMap(self.kept, self._carried) if self._carried else self.kept
        self.kept, self._carried = {}, {}
        return self.jobs
