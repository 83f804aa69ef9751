"""Backlog: the backed-off jobs whose every task is pending, shared unchanged from snapshot to snapshot.

A job the runner backed off is left out of every job walk of the cycle (docs/semantics.md, "Backoff of
unschedulable jobs"), and a job whose every task is pending sits on no node: no action and no plugin of
a configuration that `framework.backlog.shares_backlog` accepts changes it. The store therefore builds
such a job once and hands the same `JobInfo` to each snapshot while its inputs (its pods and PodGroup,
as parsed objects) stay the same objects, and the session reads what it needs from them in bulk:

- per queue, the sum of their requests and of the minResources of the Inqueue ones (what proportion
  and overcommit count of every job), recomputed when a queue's members change;
- per job, the PodGroup status the session decided the first time (the same inputs and configuration
  decide the same status), kept in its `BacklogJob`.

The sums add integer quantities (milli-CPU, bytes, milli-units): in any order they equal the sums
taken job by job.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from py_volcano.api.job_info import JobInfo
from py_volcano.api.resource_info import Resource
from py_volcano.api.results import PodGroupStatus
from py_volcano.api.types import JobID, PodGroupPhase, QueueID, TaskID, TaskStatus

__all__ = ["Backlog", "BacklogJob", "QueueBacklog"]


@dataclass(slots=True)
class BacklogJob:
    """One backlog job: the shared `job`, the parsed objects it was built from (`inputs`, compared by
    identity), its pending task ids, and the status the first session that read it decided."""

    job: JobInfo
    inputs: tuple[object, ...]
    task_ids: frozenset[TaskID]
    status: PodGroupStatus | None = None


@dataclass(slots=True)
class QueueBacklog:
    """What a queue's backlog jobs add up to: their requests, and the minResources of the Inqueue ones."""

    request: Resource = field(default_factory=Resource)
    inqueue: Resource = field(default_factory=Resource)
    jobs: int = 0


class Backlog:
    """The backlog jobs by id, and their sums per queue (recomputed lazily for the queues that changed)."""

    __slots__ = ("_dirty", "_queues", "_scalars", "entries", "token")

    def __init__(self, token: object = None) -> None:
        """`token` names what the entries' statuses were decided under (the configuration)."""
        self.token = token
        self.entries: dict[JobID, BacklogJob] = {}
        self._queues: dict[QueueID, QueueBacklog] = {}
        self._dirty: set[QueueID] = set()
        self._scalars: frozenset[str] | None = None

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, job: object) -> bool:
        return job in self.entries

    def get(self, job: JobID) -> BacklogJob | None:
        """Return the entry of `job`, or None."""
        return self.entries.get(job)

    @staticmethod
    def admits(job: JobInfo) -> bool:
        """Whether `job` may join: it has tasks, every one pending, and an Inqueue or Pending phase."""
        return bool(job.tasks) and job.count(TaskStatus.PENDING) == len(job.tasks) and job.phase in _PHASES

    def add(self, job: JobInfo, inputs: tuple[object, ...]) -> None:
        """Add (or replace) the entry of `job`, built from `inputs`."""
        self.drop(job.uid)
        self.entries[job.uid] = BacklogJob(job, inputs, frozenset(job.tasks))
        self._dirty.add(job.queue)
        self._scalars = None

    def drop(self, job: JobID) -> None:
        """Remove the entry of `job` if there is one."""
        entry = self.entries.pop(job, None)
        if entry is not None:
            self._dirty.add(entry.job.queue)
            self._scalars = None

    def keep_only(self, jobs: frozenset[JobID] | set[JobID]) -> None:
        """Remove every entry whose job is not in `jobs`."""
        for job in [job for job in self.entries if job not in jobs]:
            self.drop(job)

    def queues(self) -> Iterator[tuple[QueueID, QueueBacklog]]:
        """Yield each queue holding backlog jobs with its sums."""
        if self._dirty:
            self._recount()
        yield from self._queues.items()

    def scalar_names(self) -> frozenset[str]:
        """Return the scalar resources the backlog's tasks name in their init requests."""
        if self._scalars is None:
            self._scalars = frozenset().union(*(entry.job.scalar_names() for entry in self.entries.values()))
        return self._scalars

    def _recount(self) -> None:
        dirty, self._dirty = self._dirty, set()
        fresh = {queue: QueueBacklog() for queue in dirty}
        for entry in self.entries.values():
            sums = fresh.get(entry.job.queue)
            if sums is not None:
                _count(sums, entry.job)
        for queue, sums in fresh.items():
            if sums.jobs:
                self._queues[queue] = sums
            else:
                self._queues.pop(queue, None)


_PHASES = frozenset({PodGroupPhase.PENDING, PodGroupPhase.INQUEUE})


def _count(sums: QueueBacklog, job: JobInfo) -> None:
    sums.jobs += 1
    sums.request.add(job.total_request)
    if job.phase is PodGroupPhase.INQUEUE and job.min_resources is not None:
        sums.inqueue.add(job.min_resources)
