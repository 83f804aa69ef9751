"""Settled: the jobs a snapshot leaves out of its session because nothing the cycle runs can change them.

Under a configuration that shares its backlog (`framework.shares_backlog`: enqueue, allocate and
backfill, with the plugins checked there), a job whose every task is bound or runs is taken up by no action
(enqueue reads Pending groups, allocate and backfill pending tasks) and changed by no plugin. A job
settles when the snapshot takes it unchanged from the one before (`BuiltJobs.take`) with the status a
cycle under this configuration decided for it then (`settles`), or as the snapshot builds it when no
cycle decided its status yet and none could decide anything but Running (`at_sight`: the next session
decides that status and reports it once), and when every figure of every job in the snapshot is a
whole number (milli-CPU, bytes, milli-units, `BuiltJob.whole`): sums over the settled jobs, kept as jobs
join and leave, then equal the sums a session would take job by job, in any order.

The session never sees a settled job. What plugins and the session read of every job they read per key
(a queue, a namespace) from `sums`; the cycle reports no status for a settled job but one that settled
at sight and is still `undecided`: the one decided before stands (`entries`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from py_volcano.api.job_info import JobInfo
from py_volcano.api.resource_info import Resource
from py_volcano.api.types import JobID, PodGroupPhase, QueueID, TaskStatus

if TYPE_CHECKING:
    from py_volcano.api.built_jobs import BuiltJob

__all__ = [
    "CarryChange",
    "Settled",
    "SettledFollower",
    "SettledSums",
    "SettledUpdate",
    "at_sight",
    "settles",
    "whole",
    "whole_resource",
]

#: Per job, the figures a sum adds (None: nothing).
Figures = Callable[[JobInfo], tuple[Resource | None, ...]]
#: Per job, the key its figures are summed under.
Key = Callable[[JobInfo], Hashable]


def whole(job: JobInfo) -> bool:
    """Whether every request of the job's tasks and its minResources are whole numbers."""
    for task in job.tasks.values():  # a loop, not all() over a generator: every job of a snapshot asks
        if not whole_resource(task.resreq):
            return False
    return job.min_resources is None or whole_resource(job.min_resources)


def whole_resource(resource: Resource) -> bool:
    """Whether every dimension of `resource` is a whole number."""
    if not (resource.milli_cpu.is_integer() and resource.memory.is_integer()):
        return False
    scalars = resource.scalars
    return not scalars or all(value.is_integer() for value in scalars.values())


def settles(job: JobInfo, entry: BuiltJob, token: object, queues: Mapping[QueueID, object]) -> bool:
    """Whether a job taken unchanged with `entry` settles under configuration `token`: a cycle under it
    decided the phase its group has with no Unschedulable message, and either that phase is Running and
    every task is bound to its node or runs, or it is Inqueue, the job has no minResources and every
    task is bound, runs or waits for its bind to be answered (Binding); there are at least minAvailable
    tasks, its queue exists, it has no network topology and no fit error. (A bound task that starts
    running, or a bind that is seen or refused, is a change of its pod: the job comes back for a cycle
    to decide its new status.)"""
    status = entry.status
    if status is None or entry.token is not token or status.phase is not job.phase:
        return False
    if job.phase is PodGroupPhase.INQUEUE and job.min_resources is None:
        binding = True
    elif job.phase is PodGroupPhase.RUNNING:
        binding = False
    else:
        return False
    return not status.unschedulable and _held_in_place(job, queues, binding=binding)


def at_sight(job: JobInfo, queues: Mapping[QueueID, object]) -> bool:
    """Whether a job no cycle decided a status for settles as the snapshot builds it: its PodGroup is
    Running, every task is bound to its node or runs, there are at least minAvailable of them and every
    role's minimum (gang's job-ready verdict, which reads nothing else, holds), its queue exists, and it
    has no network topology and no fit error. A cycle under a configuration that settles jobs would
    change nothing of it and decide it Running with no Unschedulable message, as `settles` asks; the
    next session decides that status (`Settled.undecided`)."""
    return (
        job.phase is PodGroupPhase.RUNNING
        and _held_in_place(job, queues, binding=False)
        and job.check_task_ready()
    )


def _held_in_place(job: JobInfo, queues: Mapping[QueueID, object], *, binding: bool) -> bool:
    """Whether every task of the job holds its node (bound or running; with `binding`, also waiting for
    its bind to be answered), there are at least minAvailable of them, its queue exists, and it has no
    network topology and no fit error."""
    tasks, placed = len(job.tasks), job.task_status_index
    held = len(placed.get(TaskStatus.RUNNING, ())) + len(placed.get(TaskStatus.BOUND, ()))
    if binding:
        held += len(placed.get(TaskStatus.BINDING, ()))
    return (
        0 < tasks >= job.min_available
        and held == tasks
        and job.queue in queues
        and job.pod_group.network_topology is None
        and not job.fit_errors
        and not job.job_fit_error
    )


class _Tally:
    """An exact sum of whole-number resources: per scalar name, how many of the added resources name it
    (a name none names any more is dropped, as a sum taken afresh would not hold it)."""

    __slots__ = ("cpu", "memory", "named", "scalars")

    def __init__(self) -> None:
        self.cpu = 0.0
        self.memory = 0.0
        self.scalars: dict[str, float] = {}
        self.named: dict[str, int] = {}

    def add_scalars(self, scalars: Mapping[str, float]) -> None:
        """Add scalar amounts (`SettledSums.join` adds CPU and memory itself)."""
        for name, value in scalars.items():
            self.scalars[name] = self.scalars.get(name, 0.0) + value
            self.named[name] = self.named.get(name, 0) + 1

    def sub(self, resource: Resource) -> None:
        self.cpu -= resource.milli_cpu
        self.memory -= resource.memory
        for name, value in resource.scalars.items():
            left = self.named[name] - 1
            if left:
                self.named[name] = left
                self.scalars[name] -= value
            else:
                del self.named[name], self.scalars[name]

    def resource(self) -> Resource:
        return Resource(self.cpu, self.memory, self.scalars)


class SettledSums:
    """Per key, how many settled jobs there are and the sums of each of their figures."""

    __slots__ = ("_cache", "_counts", "_jobs", "_key", "_tallies", "figures")

    def __init__(self, key: Key, figures: Figures, jobs: Iterable[JobInfo]) -> None:
        self._key, self.figures = key, figures
        self._jobs: dict[JobID, tuple[Hashable, tuple[Resource | None, ...]]] = {}
        self._counts: dict[Hashable, int] = {}
        self._tallies: dict[Hashable, list[_Tally]] = {}
        self._cache: dict[Hashable, tuple[int, tuple[Resource, ...]]] | None = None
        for job in jobs:
            self.join(job)

    def join(self, job: JobInfo) -> None:
        """Add a job that settled."""
        key, figures = self._key(job), self.figures(job)
        self._jobs[job.uid] = (key, figures)
        self._counts[key] = self._counts.get(key, 0) + 1
        tallies = self._tallies.get(key)
        if tallies is None:
            tallies = self._tallies[key] = [_Tally() for _ in figures]
        for tally, figure in zip(tallies, figures, strict=True):  # inlines `_Tally.add`: a restart joins every job
            if figure is not None:
                tally.cpu += figure.milli_cpu
                tally.memory += figure.memory
                if figure.scalars:
                    tally.add_scalars(figure.scalars)
        self._cache = None

    def leave(self, job: JobID) -> None:
        """Take away a job that left the settled ones."""
        key, figures = self._jobs.pop(job)
        left = self._counts[key] - 1
        if not left:
            del self._counts[key], self._tallies[key]
        else:
            self._counts[key] = left
            for tally, figure in zip(self._tallies[key], figures, strict=True):
                if figure is not None:
                    tally.sub(figure)
        self._cache = None

    def totals(self) -> Mapping[Hashable, tuple[int, tuple[Resource, ...]]]:
        """Per key: the number of settled jobs and the sum of each figure (read-only)."""
        if self._cache is None:
            self._cache = {
                key: (self._counts[key], tuple(tally.resource() for tally in tallies))
                for key, tallies in self._tallies.items()
            }
        return self._cache


@dataclass(frozen=True, slots=True)
class SettledUpdate:
    """The update of the settled jobs a cycle's snapshot made (`CycleResult.settled_update`): the set it
    updated (`source`, the store's `Settled`), its generation then, and the ids that left and joined
    (`Settled.changes`; None when not recorded)."""

    source: object = None
    generation: int = 0
    changes: tuple[list[JobID], list[JobID]] | None = None


class SettledFollower:
    """A reader of successive cycles that keeps a record per job (the status writer, the annotations, the
    metrics): `gone` finds the records to forget from the last cycle's jobs and those that left the
    settled ones, when exactly one update of the same set separates two cycles it read, else by
    comparing every record; `joined` are the jobs that joined the settled ones then (None: unknown)."""

    __slots__ = ("_generation", "_last", "_source", "joined")

    def __init__(self) -> None:
        self._source: object = None
        self._generation = 0
        self._last: list[JobID] = []
        self.joined: list[JobID] | None = None

    def gone(
        self,
        records: Mapping[JobID, object],
        jobs: Mapping[JobID, object],
        update: SettledUpdate,
        settled: Mapping[JobID, object],
    ) -> list[JobID]:
        """The keys of `records` neither among the cycle's `jobs` nor `settled`; remembers the cycle."""
        source, generation = self._source, self._generation
        self._source, self._generation = update.source, update.generation
        follows = source is not None and source is update.source and update.generation == generation + 1
        changes = update.changes if follows else None
        candidates: Iterable[JobID]
        if changes is None:
            candidates, self.joined = records.keys() - jobs.keys() - settled.keys(), None
        else:  # only the last cycle's jobs and those that left the settled ones (a job settled at sight
            # may be both) can have gone
            candidates, self.joined = dict.fromkeys((*self._last, *changes[0])), changes[1]
        self._last = list(jobs)
        return [key for key in candidates if key in records and key not in jobs and key not in settled]


@dataclass(frozen=True, slots=True)
class CarryChange:
    """How a carried mapping differs from the one carried before it (`previous`, which has since become
    the settled entries): the jobs it carries that `previous` did not, and the entries of those
    `previous` carried that it does not."""

    previous: Mapping[JobID, BuiltJob]
    entered: set[JobID]
    left: list[BuiltJob]


class Settled:
    """The settled jobs of one configuration (`token`), by id, as their `BuiltJob` entries (job and
    decided status), and the sums kept over them."""

    __slots__ = (
        "_carry",
        "_queues",
        "_scalars",
        "_settled",
        "_sums",
        "carry_change",
        "changes",
        "entries",
        "fractional",
        "generation",
        "token",
        "undecided",
    )

    def __init__(self, token: object = None) -> None:
        self.token = token
        self.fractional = False
        """Whether the last snapshot held a job that is not `whole` (then no job settled anew)."""
        self.entries: dict[JobID, BuiltJob] = {}
        self._sums: dict[str, SettledSums] = {}
        self._scalars: dict[str, int] = {}
        self._queues: dict[QueueID, int] = {}
        self._carry: tuple[dict[JobID, BuiltJob], list[JobID]] | None = None
        self.generation = 0
        """Counts `update` and `reset` calls: a reader that saw generation g and finds g + 1 with
        `changes` set may follow those changes instead of comparing every entry."""
        self.changes: tuple[list[JobID], list[JobID]] | None = None
        """The ids that left and that joined (or changed) in the last `update`; None after `reset`."""
        #: When the last update took back the mapping `carry` returned (it became the entries): the jobs
        #: that settled into it then, the same entry or not; else None.
        self._settled: list[JobID] | None = None
        self.carry_change: CarryChange | None = None
        """How the last `carry`'s mapping differs from the one before it, when `update` took that one
        back; None when unknown."""
        self.undecided: dict[JobID, None] = {}
        """The jobs that settled at sight (`at_sight`) whose status no session decided yet, in the order
        they settled: the next session decides and reports each, once."""

    def __len__(self) -> int:
        return len(self.entries)

    def reset(self, token: object) -> None:
        """Empty the set and its sums for configuration `token`."""
        self.token = token
        self.entries, self._sums, self._scalars, self._queues = {}, {}, {}, {}
        self.fractional = False
        self._carry, self.changes, self._settled, self.carry_change = None, None, None, None
        self.undecided = {}
        self.generation += 1

    def carry(self, dirty: Collection[JobID]) -> dict[JobID, BuiltJob]:
        """The entries less the jobs of `dirty`: those the next snapshot carries unlooked at. `update`
        takes that very mapping back knowing which entries it left out (`dropped`), so the cost of
        carrying follows the change, not the number of settled jobs; `carry_change` tells how it
        differs from the mapping the last `carry` returned."""
        entries = self.entries
        carried = entries.copy()
        pop = carried.pop
        dropped = [key for key in dirty if pop(key, None) is not None]
        self._carry = (carried, dropped)
        settled, self._settled, self.carry_change = self._settled, None, None
        if settled is not None:  # the last carried mapping became the entries, with these jobs
            joined = set(settled)
            gone = set(dropped)
            self.carry_change = CarryChange(
                entries,
                {key for key in joined if key not in gone},
                [entries[key] for key in dropped if key not in joined],
            )
        return carried

    def dropped(self, carried: Mapping[JobID, BuiltJob]) -> list[JobID] | None:
        """The entries the last `carry` left out when `carried` is what it returned; else None."""
        carry = self._carry
        return carry[1] if carry is not None and carry[0] is carried else None

    def update(
        self, kept: Mapping[JobID, BuiltJob], fresh: Mapping[JobID, BuiltJob], sighted: Iterable[JobID] = ()
    ) -> None:
        """Make `kept` (entries of this set, carried as they are: when it is what `carry` returned,
        it becomes the entries) and `fresh` the settled jobs, those of `sighted` settled at sight and
        undecided; every kept sum follows."""
        old = self.entries
        dropped = self.dropped(kept)
        self._carry = None
        if dropped is not None:  # kept is `old` less `dropped`: no need to compare every entry
            left = [key for key in dropped if key not in fresh]
            changed = [key for key, entry in fresh.items() if key in old and old[key] is not entry]
            new = [key for key in fresh if key not in old]
            entries = cast(dict[JobID, "BuiltJob"], kept)
            entries.update(fresh)
            self._settled = list(fresh)  # every job in `fresh` was not carried
        else:
            left = list(old.keys() - kept.keys() - fresh.keys())
            changed = [key for key in fresh.keys() & old.keys() if old[key] is not fresh[key]]
            new = list(fresh.keys() - old.keys())
            entries = {**kept, **fresh} if fresh else dict(kept)
            self._settled = None
        new.extend(changed)
        left.extend(changed)
        undecided = self.undecided
        if undecided:
            for key in left:
                undecided.pop(key, None)
        undecided.update(dict.fromkeys(sighted))
        self.entries = entries
        self.changes = (left, new)
        self.generation += 1
        joined = [fresh[key] for key in new]
        scalars, queues = self._scalars, self._queues
        for key in left:
            job = old[key].job
            for name in job.scalar_names():
                _count(scalars, name, -1)
            _count(queues, job.queue, -1)
        for entry in joined:
            for name in entry.job.scalar_names():
                _count(scalars, name, 1)
            _count(queues, entry.job.queue, 1)
        for sums in self._sums.values():
            for key in left:
                sums.leave(key)
            for entry in joined:
                sums.join(entry.job)

    def sums(self, name: str, key: Key, figures: Figures) -> Mapping[Hashable, tuple[int, tuple[Resource, ...]]]:
        """Per key, the number of settled jobs and the sums of their `figures`; kept under `name` from
        snapshot to snapshot (the first call's `key` stands; the last call's `figures` sums the jobs
        that settle next, as `update` takes them in: it must give what it gave for the same job)."""
        sums = self._sums.get(name)
        if sums is None:
            sums = self._sums[name] = SettledSums(key, figures, (entry.job for entry in self.entries.values()))
        sums.figures = figures
        return sums.totals()

    def last_update(self) -> SettledUpdate:
        """The last update, as a `SettledFollower` reads it."""
        return SettledUpdate(self, self.generation, self.changes)

    def scalar_names(self) -> Iterable[str]:
        """Return the scalar resources the settled jobs' tasks name in their init requests."""
        return self._scalars.keys()

    def queues(self) -> Iterable[QueueID]:
        """Return the queues of the settled jobs."""
        return self._queues.keys()


def _count(counts: dict[Any, int], key: object, step: int) -> None:
    """Add `step` to `counts[key]`, dropping a key whose count reaches zero."""
    count = counts.get(key, 0) + step
    if count:
        counts[key] = count
    else:
        del counts[key]
