"""A queue's accounting under proportion, and the weighted iterative split of `deserved`.

The rules: docs/semantics.md, "Proportion". `QueueAttr` holds what one queue allocated and requests,
what its admitted jobs reserve (inqueue) and could give back (elastic), its guarantee and real
capability. `split_deserved` hands the cluster out among the queues that have jobs; `update_share` keeps
share = max(allocated / deserved).
"""

from __future__ import annotations

from collections.abc import Iterable

from py_volcano.api import (
    INFINITY,
    ZERO,
    JobID,
    JobInfo,
    PodGroupPhase,
    QueueID,
    QueueInfo,
    Resource,
    TaskStatus,
    is_allocated_status,
    job_fingerprint,
    whole_resource,
)

__all__ = [
    "JobSums",
    "KeptJobSums",
    "QueueAttr",
    "effective_capability",
    "real_capability",
    "settled_queue",
    "split_deserved",
]

_INF = float("inf")
_NOTHING = Resource()  # read only: what a job without minResources holds back
_ALLOCATED = (TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING)


class QueueAttr:
    """One queue's accounting for a session; `deserved` and `dims` are final once `split_deserved` ran."""

    __slots__ = (
        "allocated",
        "capability",
        "deserved",
        "dims",
        "elastic",
        "guarantee",
        "inqueue",
        "name",
        "queue_id",
        "real_capability",
        "request",
        "share",
        "weight",
    )

    def __init__(self, queue: QueueInfo, *, total: Resource, total_guarantee: Resource) -> None:
        self.queue_id: QueueID = queue.uid
        self.name = queue.name
        self.weight = queue.weight
        self.share = 0.0
        self.deserved = Resource()
        self.allocated = Resource()
        self.request = Resource()
        self.elastic = Resource()
        self.inqueue = Resource()
        self.guarantee = queue.guarantee.clone() if queue.guarantee is not None else Resource()
        self.capability = effective_capability(queue.capability)
        self.real_capability = real_capability(
            total=total, total_guarantee=total_guarantee, guarantee=self.guarantee, capability=self.capability
        )
        self.dims: tuple[str, ...] = ()

    def add_job(self, job: JobInfo) -> None:
        """Count a job: its placed and pending tasks, its admission reservation and its elastic part."""
        _add_tasks(job, self.allocated, self.request)
        self.inqueue.add(_reserved(job))
        self.elastic.add(job.allocated.exceeded_part(job.min_resources or Resource()))

    def add_sums(self, sums: JobSums) -> None:
        """Count a job through its `JobSums` (the same figures as `add_job`)."""
        self.allocated.add(sums.allocated)
        self.request.add(sums.request)
        if sums.inqueue is not None:
            self.inqueue.add(sums.inqueue)
        if sums.elastic is not None:
            self.elastic.add(sums.elastic)

    def add_totals(self, allocated: Resource, request: Resource, inqueue: Resource, elastic: Resource) -> None:
        """Count jobs through the totals of their `JobSums` (`settled_figures`)."""
        self.allocated.add(allocated)
        self.request.add(request)
        self.inqueue.add(inqueue)
        self.elastic.add(elastic)

    def update_share(self) -> None:
        """Recompute share: the largest allocated / deserved over the dimensions deserved holds."""
        share = 0.0
        allocated, deserved = self.allocated, self.deserved
        for name in self.dims:
            value = allocated.get(name) / deserved.get(name)
            if value > share:
                share = value
        self.share = share

    def is_overused(self) -> bool:
        """True when deserved <= allocated in every dimension (docs/semantics.md, "Overused": equal counts)."""
        return self.deserved.less_equal(self.allocated, ZERO)

    def __repr__(self) -> str:
        return f"QueueAttr({self.name} deserved <{self.deserved}> allocated <{self.allocated}> share {self.share:.3f})"


def _add_tasks(job: JobInfo, allocated: Resource, request: Resource) -> bool:
    """Add the job's placed tasks to `allocated` and `request` and its pending ones to `request`, task by
    task in status-index order (Volcano's order); return whether a task is pending."""
    pending = False
    for status, tasks in job.task_status_index.items():
        if is_allocated_status(status):
            for task in tasks.values():
                allocated.add(task.resreq)
                request.add(task.resreq)
        elif status is TaskStatus.PENDING:
            pending = True
            for task in tasks.values():
                request.add(task.resreq)
    return pending


def _reserved(job: JobInfo) -> Resource:
    """What the job reserves beyond its allocated tasks: an Inqueue group the part of its minResources
    they do not hold yet (they already count in allocated); a Running group too, but only while its
    allocated tasks reach minMember (Volcano: a finished Spark driver must not reserve again)."""
    min_resources = job.min_resources
    if min_resources is not None and (
        job.phase is PodGroupPhase.INQUEUE
        or (job.phase is PodGroupPhase.RUNNING and job.count(*_ALLOCATED) >= job.pod_group.min_member)
    ):
        return min_resources.exceeded_part(job.allocated)
    return Resource()


class JobSums:
    """What one job adds to its queue's accounting (`QueueAttr.add_job`), summed over its tasks."""

    __slots__ = ("allocated", "elastic", "inqueue", "request", "whole")

    def __init__(self, job: JobInfo) -> None:
        self.allocated = Resource()
        self.request = Resource()
        if not _add_tasks(job, self.allocated, self.request):  # the same additions: one object for both
            self.request = self.allocated
        self.inqueue = _unless_empty(_reserved(job)) if job.min_resources is not None else None
        self.elastic = _unless_empty(job.allocated.exceeded_part(job.min_resources or _NOTHING))
        self.whole = self._integral()
        """Whether every figure is a whole number: then adding the sums equals adding task by task (in
        any order, below 2**53), and a queue may count the job through them."""

    def _integral(self) -> bool:
        request, inqueue, elastic = self.request, self.inqueue, self.elastic
        return (
            whole_resource(self.allocated)
            and (request is self.allocated or whole_resource(request))
            and (inqueue is None or whole_resource(inqueue))
            and (elastic is None or whole_resource(elastic))
        )


def settled_queue(job: JobInfo) -> QueueID:
    """The key a settled job's sums go under: its queue."""
    return job.queue


def _unless_empty(resource: Resource) -> Resource | None:
    """None for a resource with no dimension at all (adding it changes nothing), else the resource."""
    return None if resource.milli_cpu == 0 and resource.memory == 0 and not resource.scalars else resource


class KeptJobSums:
    """Each job's `JobSums`, kept from one session to the next while the job is the same object and no
    session changed it (`job_fingerprint`)."""

    __slots__ = ("jobs",)

    def __init__(self) -> None:
        self.jobs: dict[JobID, tuple[JobInfo, tuple[object, ...], JobSums]] = {}

    def take(self, jobs: Iterable[JobInfo]) -> list[JobSums] | None:
        """Return the sums of `jobs`, in order, and keep them; None when one is not integral."""
        kept, fresh = self.jobs, {}
        sums = []
        whole = True
        for job in jobs:
            fingerprint = job_fingerprint(job)
            entry = kept.get(job.uid)
            if entry is None or entry[0] is not job or entry[1] != fingerprint:
                entry = (job, fingerprint, JobSums(job))
            whole = whole and entry[2].whole
            fresh[job.uid] = entry
            sums.append(entry[2])
        self.jobs = fresh
        return sums if whole else None

    def settled_figures(self, job: JobInfo) -> tuple[Resource | None, ...]:
        """What a job that settled adds to its queue (`api.Settled.sums`), in `QueueAttr.add_totals`
        order: its kept `JobSums` while it is the job kept and no session changed it, else summed now."""
        entry = self.jobs.get(job.uid)
        if entry is not None and entry[0] is job and entry[1] == job_fingerprint(job):
            sums = entry[2]
        else:
            placed = _placed_figures(job)
            if placed is not None:
                return placed
            sums = JobSums(job)
        return sums.allocated, sums.request, sums.inqueue, sums.elastic


def _placed_figures(job: JobInfo) -> tuple[Resource | None, ...] | None:
    """A job's `JobSums` figures read from what it keeps when it has no minResources and no pending task
    (as every settled job): allocated, request and elastic are then each the sum of its allocated tasks
    (`JobInfo.allocated`) and it reserves nothing; None for any other job, and for one with a scalar
    that sums to zero or less (elastic leaves such a scalar out)."""
    if job.min_resources is not None or TaskStatus.PENDING in job.task_status_index:
        return None
    allocated = job.allocated.clone()
    scalars = allocated.scalars
    if scalars and min(scalars.values()) <= 0:
        return None
    elastic = allocated if allocated.milli_cpu or allocated.memory or scalars else None
    return allocated, allocated, None, elastic


def effective_capability(capability: Resource | None) -> Resource | None:
    """Return the capability with an unset (or zero) CPU or memory read as unlimited, as Volcano does."""
    if capability is None:
        return None
    result = capability.clone()
    if result.milli_cpu <= 0:
        result.milli_cpu = _INF
    if result.memory <= 0:
        result.memory = _INF
    return result


def real_capability(
    *, total: Resource, total_guarantee: Resource, guarantee: Resource, capability: Resource | None
) -> Resource:
    """Return the cluster minus every queue's guarantee plus this queue's own, capped by its capability."""
    result = total.exceeded_part(total_guarantee).add(guarantee)
    if capability is not None:
        result.min_dimension_resource(capability, INFINITY)
    return result


def _same(left: Resource, right: Resource) -> bool:
    """Exact equality per dimension, a missing scalar being 0 (Volcano compares with DeepEqual)."""
    if left.milli_cpu != right.milli_cpu or left.memory != right.memory:
        return False
    names = left.scalars.keys() | right.scalars.keys()
    return all(left.scalars.get(name, 0.0) == right.scalars.get(name, 0.0) for name in names)


def split_deserved(attrs: Iterable[QueueAttr], total: Resource) -> None:
    """Hand `total` out among the queues by weight, round by round, until all are met or nothing is left.

    In a round every queue not yet met adds remaining x weight / total weight, is capped by its real
    capability (missing dimensions unlimited) and by its request (missing dimensions 0), then raised
    to its guarantee. It is met once its request fits its deserved or its deserved stops changing.
    `remaining` loses what the round handed out and regains what it took back
    (docs/semantics.md, "Deserved: weighted water-filling").
    """
    queues = list(attrs)
    remaining = total.clone()
    meet: set[QueueID] = set()
    while True:
        total_weight = sum(attr.weight for attr in queues if attr.queue_id not in meet)
        if total_weight == 0:
            break
        old_remaining = remaining.clone()
        increased, decreased = Resource(), Resource()
        for attr in queues:
            if attr.queue_id in meet:
                continue
            old = attr.deserved.clone()
            attr.deserved.add(remaining.clone().multi(attr.weight / total_weight))
            attr.deserved.min_dimension_resource(attr.real_capability, INFINITY)
            attr.deserved.min_dimension_resource(attr.request, ZERO)
            attr.deserved.set_max_resource(attr.guarantee)
            if attr.request.less_equal(attr.deserved, ZERO) or _same(attr.deserved, old):
                meet.add(attr.queue_id)
            up, down = attr.deserved.diff(old, ZERO)
            increased.add(up)
            decreased.add(down)
        remaining = remaining.add(decreased).exceeded_part(increased)
        if remaining.is_empty() or _same(remaining, old_remaining):
            break
    for attr in queues:
        attr.dims = tuple(attr.deserved.names())
        attr.update_share()
