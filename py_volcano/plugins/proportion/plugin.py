"""The proportion plugin: per-session queue shares and the functions it registers.

The rules: docs/semantics.md, "Proportion". At open every queue that has jobs is accounted (`QueueAttr`)
and the cluster is split among them (`split_deserved`). Queues are then ordered by share; allocate stops
a queue at its deserved; reclaim takes victims only from queues above it; enqueue admits a job while its
minResources fit the queue's real capability; preempt's dry run checks quota on a `ProportionState`. At
close every queue's figures go to `ssn.queue_figures`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from py_volcano.api import ZERO, JobID, JobInfo, NodeInfo, QueueFigures, QueueID, QueueInfo, Resource, TaskInfo, Vote
from py_volcano.framework import CycleState, EventHandler, NoArgs, Session
from py_volcano.plugins.proportion.dry_run import ProportionState, StateRegistry
from py_volcano.plugins.proportion.queue_attr import (
    KeptJobSums,
    QueueAttr,
    effective_capability,
    real_capability,
    settled_queue,
    split_deserved,
)

__all__ = ["NAME", "STATE_KEY", "ProportionPlugin", "QueueShares", "new"]

NAME = "proportion"
STATE_KEY = "proportion"


class QueueShares:
    """The plugin's state for one session and the functions it registers."""

    __slots__ = ("attrs", "dry_runs", "jobs", "queues", "total", "total_guarantee")

    def __init__(self, ssn: Session) -> None:
        self.jobs: Mapping[JobID, JobInfo] = ssn.jobs
        self.queues: Mapping[QueueID, QueueInfo] = ssn.queues
        self.total = ssn.total_resource.clone()
        self.total_guarantee = Resource()
        for queue in ssn.queues.values():
            if queue.guarantee is not None:
                self.total_guarantee.add(queue.guarantee)
        self.attrs: dict[QueueID, QueueAttr] = {}
        self.dry_runs = StateRegistry({})

    @classmethod
    def build(cls, ssn: Session) -> QueueShares:
        """Account every queue that has jobs (in queue order), then split the cluster among them; the session's backlog
        jobs count through their per-queue sums (all pending: a request, maybe an inqueue reservation),
        and so do its settled jobs (`api.Settled`: their `JobSums` added up per queue)."""
        shares = cls(ssn)
        backlog = ssn.backlog
        kept = ssn.memory.recall(NAME, KeptJobSums)  # read for the jobs that settle before `take` renews it
        settled = ssn.settled.sums(NAME, settled_queue, kept.settled_figures)
        named = {job.queue for job in ssn.jobs.values()}
        named.update(cast(QueueID, queue_id) for queue_id in settled)
        for queue in ssn.queues.values():  # in queue order, whichever job comes first
            if queue.uid in named:
                shares.attrs[queue.uid] = QueueAttr(queue, total=shares.total, total_guarantee=shares.total_guarantee)
        counted: list[tuple[QueueAttr, JobInfo]] = []
        for job in ssn.jobs.values():
            attr = shares.attrs.get(job.queue)
            if attr is not None and job.uid not in backlog.entries:
                counted.append((attr, job))
        per_job = kept.take(job for _, job in counted)
        if per_job is None:
            for attr, job in counted:
                attr.add_job(job)
        else:
            for (attr, _), job_sums in zip(counted, per_job, strict=True):
                attr.add_sums(job_sums)
        for queue_id, queue_sums in backlog.queues():
            attr = shares.attrs.get(queue_id)
            if attr is not None:
                attr.request.add(queue_sums.request)
                attr.inqueue.add(queue_sums.inqueue)
        for settled_id, (_, figures) in settled.items():
            attr = shares.attrs.get(cast(QueueID, settled_id))
            if attr is not None:
                attr.add_totals(*figures)
        split_deserved(shares.attrs.values(), shares.total)
        shares.dry_runs = StateRegistry({queue_id: attr.allocated for queue_id, attr in shares.attrs.items()})
        return shares

    def add_job(self, job: JobInfo) -> None:
        """Count a job added to the session (its queue accounted if it was not yet, in queue order) and
        split the cluster again from nothing, as `build` does."""
        queue = self.queues.get(job.queue)
        if queue is None:
            return
        attr = self.attrs.get(job.queue)
        if attr is None:
            attr = QueueAttr(queue, total=self.total, total_guarantee=self.total_guarantee)
            self.dry_runs.before_change()
            added = {**self.attrs, job.queue: attr}
            self.attrs = {uid: added[uid] for uid in self.queues if uid in added}
            self.dry_runs = StateRegistry({queue_id: each.allocated for queue_id, each in self.attrs.items()})
        attr.add_job(job)
        for each in self.attrs.values():
            each.deserved = Resource()
        split_deserved(self.attrs.values(), self.total)

    def _attr_of(self, task: TaskInfo) -> QueueAttr | None:
        job = self.jobs.get(task.job) if task.job else None
        return self.attrs.get(job.queue) if job is not None else None

    # Ordering and quota ---------------------------------------------------------------------

    def queue_order(self, l: QueueInfo, r: QueueInfo) -> int:
        """Higher queue priority first, then the lower share."""
        if l.priority != r.priority:
            return -1 if l.priority > r.priority else 1
        l_attr, r_attr = self.attrs.get(l.uid), self.attrs.get(r.uid)
        l_share = l_attr.share if l_attr is not None else 0.0
        r_share = r_attr.share if r_attr is not None else 0.0
        if l_share == r_share:
            return 0
        return -1 if l_share < r_share else 1

    def overused(self, queue: QueueInfo) -> bool:
        """True when the queue's allocated reached its deserved in every dimension."""
        attr = self.attrs.get(queue.uid)
        return attr is not None and attr.is_overused()

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """An open queue may take the task while allocated + request <= deserved on the task's dimensions."""
        attr = self.attrs.get(queue.uid)
        return attr is not None and _fits_deserved(queue, attr.allocated, attr.deserved, task)

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """A queue may preempt or reclaim for a task it could allocate (docs/semantics.md, "Proportion allocatable")."""
        return self.allocatable(queue, task)

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
        """Offer victims only while their queue's allocated is above its deserved, counting each one taken.

        A queue holding less than the reclaimer asks for still gives victims: with the node's idle room
        they may be enough (Volcano dropped that skip in 975277f; docs/semantics.md, "Proportion reclaimable").
        """
        victims = []
        allocations: dict[QueueID, Resource] = {}
        for reclaimee in reclaimees:
            attr = self._attr_of(reclaimee)
            if attr is None:
                continue
            allocated = allocations.get(attr.queue_id)
            if allocated is None:
                allocated = allocations[attr.queue_id] = attr.allocated.clone()
            if not allocated.less_equal(attr.deserved, ZERO):
                allocated.sub_without_assert(reclaimee.resreq)
                victims.append(reclaimee)
        return victims, Vote.PERMIT

    # Enqueue --------------------------------------------------------------------------------

    def job_enqueueable(self, job: JobInfo) -> Vote:
        """Admit while minResources + allocated + inqueue - elastic fits real capability.

        docs/semantics.md, "Proportion enqueue".
        """
        queue = self.queues.get(job.queue)
        attr = self.attrs.get(job.queue)
        if queue is None or attr is None:
            return Vote.ABSTAIN
        if not queue.is_open():
            return Vote.REJECT
        min_request = job.min_resources
        if min_request is None:
            return Vote.PERMIT
        wanted = min_request.clone().add(attr.allocated).add(attr.inqueue).sub_without_assert(attr.elastic)
        fits, short = wanted.less_equal_with_dimension_and_resources_name(attr.real_capability, min_request)
        if fits:
            return Vote.PERMIT
        job.job_fit_error = f"queue resource quota insufficient: {', '.join(short)}"
        return Vote.REJECT

    def job_enqueued(self, job: JobInfo) -> None:
        """Reserve an admitted job's minResources in its queue's inqueue."""
        attr = self.attrs.get(job.queue)
        if attr is not None and job.min_resources is not None:
            attr.inqueue.add(job.min_resources)

    # Events ---------------------------------------------------------------------------------

    def on_allocate(self, task: TaskInfo) -> None:
        """Count an allocated or pipelined task in its queue."""
        attr = self._attr_of(task)
        if attr is not None:
            self.dry_runs.before_change()
            attr.allocated.add(task.resreq)
            attr.update_share()

    def on_deallocate(self, task: TaskInfo) -> None:
        """Stop counting an evicted or discarded task in its queue."""
        attr = self._attr_of(task)
        if attr is not None:
            self.dry_runs.before_change()
            attr.allocated.sub_without_assert(task.resreq)
            attr.update_share()

    # Preempt dry run ------------------------------------------------------------------------

    def pre_predicate(self, task: TaskInfo, state: CycleState) -> str | None:
        """Store the queues' allocated as they are now in the task's cycle state."""
        state.write(STATE_KEY, self.dry_runs.snapshot())
        return None

    def simulate_add_task(self, state: CycleState, task: TaskInfo, added: TaskInfo, node: NodeInfo) -> None:
        """In the dry-run state, count `added` in its queue."""
        allocated = self._simulated(state, added)
        if allocated is not None:
            allocated.add(added.resreq)

    def simulate_remove_task(self, state: CycleState, task: TaskInfo, removed: TaskInfo, node: NodeInfo) -> None:
        """In the dry-run state, stop counting `removed` in its queue."""
        allocated = self._simulated(state, removed)
        if allocated is not None:
            allocated.sub_without_assert(removed.resreq)

    def _simulated(self, state: CycleState, task: TaskInfo) -> Resource | None:
        snapshot: ProportionState | None = state.read(STATE_KEY)
        attr = self._attr_of(task)
        if snapshot is None or attr is None:
            return None
        return snapshot.writable(attr.queue_id)

    def simulate_allocatable(self, state: CycleState, queue: QueueInfo, task: TaskInfo) -> bool:
        """`allocatable` over the dry-run state (over the live figures when no pre-predicate stored one)."""
        attr = self.attrs.get(queue.uid)
        if attr is None:
            return False
        snapshot: ProportionState | None = state.read(STATE_KEY)
        allocated = snapshot.allocated(queue.uid) if snapshot is not None else None
        if allocated is None:
            allocated = attr.allocated
        return _fits_deserved(queue, allocated, attr.deserved, task)

    # Report ---------------------------------------------------------------------------------

    def figures(self, queue: QueueInfo) -> QueueFigures:
        """Return the queue's figures for the cycle result; a queue without jobs deserves nothing."""
        attr = self.attrs.get(queue.uid)
        if attr is None:
            guarantee = queue.guarantee.clone() if queue.guarantee is not None else Resource()
            real = real_capability(
                total=self.total,
                total_guarantee=self.total_guarantee,
                guarantee=guarantee,
                capability=effective_capability(queue.capability),
            )
            return QueueFigures(
                weight=queue.weight,
                deserved=Resource(),
                capability=queue.capability,
                real_capability=real,
                guarantee=queue.guarantee,
                parent=queue.parent,
            )
        return QueueFigures(
            weight=attr.weight,
            allocated=attr.allocated.clone(),
            request=attr.request.clone(),
            deserved=attr.deserved.clone(),
            capability=queue.capability,
            real_capability=attr.real_capability.clone(),
            guarantee=queue.guarantee,
            inqueue=attr.inqueue.clone(),
            share=attr.share,
            overused=attr.is_overused(),
            parent=queue.parent,
        )


def _fits_deserved(queue: QueueInfo, allocated: Resource, deserved: Resource, task: TaskInfo) -> bool:
    if not queue.is_open():
        return False
    return allocated.clone().add(task.resreq).less_equal_with_dimension(deserved, task.resreq)


class ProportionPlugin:
    """Weighted fair share among queues: order, overuse, quota, victims, admission and dry-run quota."""

    name = NAME

    def __init__(self, args: NoArgs) -> None:
        self.args = args
        self.shares: QueueShares | None = None

    def on_session_open(self, ssn: Session) -> None:
        """Account the queues, split the cluster, and register its functions."""
        shares = self.shares = QueueShares.build(ssn)
        ssn.add_queue_order_fn(NAME, shares.queue_order)
        ssn.add_reclaimable_fn(NAME, shares.reclaimable)
        ssn.add_overused_fn(NAME, shares.overused)
        ssn.add_allocatable_fn(NAME, shares.allocatable)
        ssn.add_preemptive_fn(NAME, shares.preemptive)
        ssn.add_job_enqueueable_fn(NAME, shares.job_enqueueable)
        ssn.add_job_enqueued_fn(NAME, shares.job_enqueued)
        ssn.add_pre_predicate_fn(NAME, shares.pre_predicate)
        ssn.add_simulate_add_task_fn(NAME, shares.simulate_add_task)
        ssn.add_simulate_remove_task_fn(NAME, shares.simulate_remove_task)
        ssn.add_simulate_allocatable_fn(NAME, shares.simulate_allocatable)
        ssn.add_event_handler(EventHandler(allocate=shares.on_allocate, deallocate=shares.on_deallocate))

    def on_job_added(self, ssn: Session, job: JobInfo) -> None:
        """Count the job in its queue and split the cluster again, as the session's opening does."""
        if self.shares is not None:
            self.shares.add_job(job)

    def report(self, ssn: Session) -> None:
        """Report every queue's figures (deserved, allocated, request, share, overused...)."""
        if self.shares is not None:
            for queue in ssn.queues.values():
                ssn.queue_figures[queue.name] = self.shares.figures(queue)

    def on_session_close(self, ssn: Session) -> None:
        """Report every queue's figures, then drop the state."""
        self.report(ssn)
        self.shares = None


def new(args: NoArgs) -> ProportionPlugin:
    """Build the plugin."""
    return ProportionPlugin(args)
