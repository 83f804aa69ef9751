"""Per-queue accounting of the capacity plugin and the per-session tree that holds it.

The figures: docs/semantics.md, "Capacity accounting". A `QueueAttr` exists for every queue (and, with
hierarchy, for the root). Its `ancestors` run from the root to the parent (empty in flat mode), so
`lineage` yields the queue and then each ancestor up to the root: the levels every allocatable and
enqueueable check walks, and every usage change is added to.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from py_volcano.api import JobInfo, PodGroupPhase, QueueID, QueueInfo, Resource, TaskStatus

if TYPE_CHECKING:
    from py_volcano.plugins.capacity.state import CapacityState

__all__ = [
    "QueueAttr",
    "QueueTree",
    "add_job_usage",
    "ancestor_at",
    "ancestors_within",
    "inqueue_resource",
    "lineage",
    "propagate",
]

_ALLOCATED = (TaskStatus.BOUND, TaskStatus.BINDING, TaskStatus.RUNNING, TaskStatus.ALLOCATED)


class QueueAttr:
    """One queue's deserved, allocated, request, elastic, inqueue, capability, realCapability, guarantee."""

    __slots__ = (
        "allocated",
        "ancestors",
        "capability",
        "children",
        "deserved",
        "elastic",
        "guarantee",
        "inqueue",
        "name",
        "queue_id",
        "real_capability",
        "request",
        "share",
    )

    def __init__(
        self,
        queue_id: QueueID,
        *,
        deserved: Resource | None = None,
        capability: Resource | None = None,
        guarantee: Resource | None = None,
    ) -> None:
        self.queue_id = queue_id
        self.name = str(queue_id)
        self.share = 0.0
        self.ancestors: tuple[QueueID, ...] = ()
        self.children: list[QueueID] = []
        self.deserved = deserved.clone() if deserved is not None else Resource()
        self.capability = capability.clone() if capability is not None else None
        self.guarantee = guarantee.clone() if guarantee is not None else Resource()
        self.real_capability: Resource | None = None
        self.allocated = Resource()
        self.request = Resource()
        self.elastic = Resource()
        self.inqueue = Resource()

    @classmethod
    def from_queue(cls, queue: QueueInfo) -> QueueAttr:
        """Start from the queue's spec: deserved, capability (None when unset) and guarantee."""
        return cls(queue.uid, deserved=queue.deserved, capability=queue.capability, guarantee=queue.guarantee)

    def clone(self) -> QueueAttr:
        """Return a deep copy (children and ancestors are ids, so nothing is shared that changes)."""
        copy = QueueAttr.__new__(QueueAttr)
        copy.queue_id = self.queue_id
        copy.name = self.name
        copy.share = self.share
        copy.ancestors = self.ancestors
        copy.children = list(self.children)
        copy.deserved = self.deserved.clone()
        copy.capability = self.capability.clone() if self.capability is not None else None
        copy.guarantee = self.guarantee.clone()
        copy.real_capability = self.real_capability.clone() if self.real_capability is not None else None
        copy.allocated = self.allocated.clone()
        copy.request = self.request.clone()
        copy.elastic = self.elastic.clone()
        copy.inqueue = self.inqueue.clone()
        return copy

    def has_deserved(self) -> bool:
        """False for a best-effort queue (no deserved in any dimension)."""
        return not self.deserved.is_empty()

    def update_share(self) -> None:
        """Store the current share (`current_share`): the share queue order reads."""
        self.share = self.current_share()

    def current_share(self) -> float:
        """Share = max of allocated / deserved over deserved's dimensions; 1 when best-effort."""
        if not self.has_deserved():
            return 1.0
        share = 0.0
        for name in self.deserved.names():
            share = max(share, self.allocated.get(name) / self.deserved.get(name))
        return share

    def __repr__(self) -> str:
        return f"QueueAttr({self.name} share={self.share:.3f})"


def lineage(attrs: Mapping[QueueID, QueueAttr], attr: QueueAttr) -> Iterator[QueueAttr]:
    """Yield the queue, then its ancestors from the parent up to the root."""
    yield attr
    for ancestor in reversed(attr.ancestors):
        yield attrs[ancestor]


def ancestor_at(attr: QueueAttr, depth: int) -> QueueID | None:
    """Return the ancestor `depth` levels up (1 is the parent, the root included), or None above the root."""
    if depth <= 0 or len(attr.ancestors) < depth:
        return None
    return attr.ancestors[-depth]


def ancestors_within(attr: QueueAttr, levels: int) -> set[QueueID]:
    """Return the ancestors 1 to `levels` levels up."""
    return set(attr.ancestors[-levels:]) if levels > 0 else set()


def propagate(attrs: Mapping[QueueID, QueueAttr], attr: QueueAttr, resreq: Resource, *, add: bool) -> None:
    """Add (or take away) a task's request to the allocated of the queue and its ancestors; refresh the
    queue's own share only: as in Volcano, an ancestor's share keeps its session-open value, so the
    hierarchical queue order between subtrees does not change within a cycle."""
    for level in lineage(attrs, attr):
        if add:
            level.allocated.add(resreq)
        else:
            level.allocated.sub_without_assert(resreq)
    attr.update_share()


def inqueue_resource(job: JobInfo, min_resources: Resource) -> Resource:
    """What an admitted job still reserves: minResources less what it already holds, per dimension (>= 0)."""
    allocated = job.allocated
    reserved = Resource(
        max(min_resources.milli_cpu - allocated.milli_cpu, 0.0),
        max(min_resources.memory - allocated.memory, 0.0),
    )
    for name, quantity in min_resources.scalars.items():
        held = allocated.scalars.get(name)
        if held is None:
            reserved.scalars[name] = quantity
        elif quantity > held:
            reserved.scalars[name] = quantity - held
    return reserved


def add_job_usage(attrs: Mapping[QueueID, QueueAttr], attr: QueueAttr, job: JobInfo) -> None:
    """Add a job's allocated, request, inqueue and elastic to its queue and (the delta) to every ancestor."""
    allocated = job.allocated
    request = allocated.clone()
    for task in job.tasks_with(TaskStatus.PENDING):
        request.add(task.resreq)
    inqueue = Resource()
    # A running group reserves the rest of its minResources only while its gang holds (Volcano: a
    # finished Spark driver must not reserve its resources again).
    if job.min_resources is not None and (
        job.phase is PodGroupPhase.INQUEUE
        or (job.phase is PodGroupPhase.RUNNING and job.count(*_ALLOCATED) >= job.min_available)
    ):
        inqueue = inqueue_resource(job, job.min_resources)
    elastic = job.allocated.exceeded_part(job.min_resources or Resource())
    for level in lineage(attrs, attr):
        level.allocated.add(allocated)
        level.request.add(request)
        level.inqueue.add(inqueue)
        level.elastic.add(elastic)


class QueueTree:
    """The capacity state of one session: every queue's attributes and the jobs that must wait.

    `blocked_queues` maps a queue cut off from the root (a cycle, a missing parent) to why;
    `blocked_jobs` maps a job that may not run (such a queue, or a non-leaf queue) to why.
    """

    __slots__ = ("_pending", "attrs", "blocked_jobs", "blocked_queues", "hierarchical")

    def __init__(self, attrs: dict[QueueID, QueueAttr], *, hierarchical: bool) -> None:
        self.attrs = attrs
        self.hierarchical = hierarchical
        self.blocked_queues: dict[QueueID, str] = {}
        self.blocked_jobs: dict[str, str] = {}
        self._pending: weakref.WeakSet[CapacityState] = weakref.WeakSet()

    def is_leaf(self, queue_id: QueueID) -> bool:
        """True when the queue has no child queue (every queue is a leaf in flat mode)."""
        attr = self.attrs.get(queue_id)
        return attr is None or not attr.children

    def is_usable(self, queue_id: QueueID) -> bool:
        """True when jobs of the queue may be admitted and placed: known, attached to root, a leaf."""
        return queue_id in self.attrs and queue_id not in self.blocked_queues and self.is_leaf(queue_id)

    def clone_attrs(self) -> dict[QueueID, QueueAttr]:
        """Return a deep copy of every queue's attributes."""
        return {queue_id: attr.clone() for queue_id, attr in self.attrs.items()}

    def watch(self, state: CapacityState) -> None:
        """Remember a dry-run state that has not copied the attributes yet."""
        self._pending.add(state)

    def before_change(self) -> None:
        """Let every live dry-run state copy the attributes as they are now, before a real change."""
        if not self._pending:
            return
        for state in list(self._pending):
            state.freeze()
        self._pending.clear()

    def allocate(self, job_queue: QueueID, resreq: Resource, *, add: bool) -> None:
        """Apply a real allocation (or its undo) to the queue and its ancestors."""
        attr = self.attrs.get(job_queue)
        if attr is None:
            return
        self.before_change()
        propagate(self.attrs, attr, resreq, add=add)
