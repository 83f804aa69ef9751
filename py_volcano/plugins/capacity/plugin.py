"""CapacityPlugin: the functions the capacity plugin registers on a session, and its figures.

The rules: docs/semantics.md, "Capacity". The state is built once per session (`build_flat`, or
`build_hierarchy` when the plugin's hierarchy switch is on); every registered function is a bound method
over it. Volcano's capacity reads the switch as off when it is not written, unlike every other switch
(`ssn.HierarchyEnabled`). `ancestorReclaimLevel` counts only with hierarchy on.
"""

from __future__ import annotations

from py_volcano.api import JobInfo, NodeInfo, QueueFigures, QueueInfo, Resource, TaskInfo, Vote
from py_volcano.framework import (
    CycleState,
    EventHandler,
    EvictionContext,
    EvictionKind,
    Session,
    ValidateResult,
    ordered,
)
from py_volcano.plugins.capacity import order, quota, reclaim
from py_volcano.plugins.capacity.args import CapacityArgs
from py_volcano.plugins.capacity.attrs import QueueAttr, QueueTree, lineage
from py_volcano.plugins.capacity.flat import build_flat
from py_volcano.plugins.capacity.hierarchy import build_hierarchy
from py_volcano.plugins.capacity.state import STATE_KEY, CapacityState, simulate_allocatable, simulate_change

__all__ = ["NAME", "CapacityPlugin", "hierarchy_enabled"]

NAME = "capacity"
QUEUE_UNUSABLE = "QueueUnusable"


def hierarchy_enabled(ssn: Session) -> bool:
    """True only when the plugin's entry writes `enableHierarchy` / `enabledHierarchy: true`."""
    for tier in ssn.tiers:
        for option in tier:
            if option.name == NAME:
                return option.switches.get("hierarchy", False)
    return False


class CapacityPlugin:
    """Deserved from the spec, allocation capped by realCapability, guarantees safe from reclaim."""

    name = NAME

    def __init__(self, args: CapacityArgs) -> None:
        self.args = args
        self.ssn: Session | None = None
        self.tree = QueueTree({}, hierarchical=False)

    def on_session_open(self, ssn: Session) -> None:
        """Build the queue attributes, then register every function."""
        self.ssn = ssn
        self.tree = build_hierarchy(ssn) if hierarchy_enabled(ssn) else build_flat(ssn)
        ssn.add_queue_order_fn(NAME, self.queue_order)
        if self.tree.hierarchical:
            ssn.add_victim_queue_order_fn(NAME, self.victim_queue_order)
            ssn.add_job_valid_fn(NAME, self.job_valid)
        ssn.add_reclaimable_fn(NAME, self.reclaimable)
        ssn.add_unified_evictable_fn(NAME, self.gang_evictable)
        ssn.add_preemptive_fn(NAME, self.preemptive)
        ssn.add_allocatable_fn(NAME, self.allocatable)
        ssn.add_job_enqueueable_fn(NAME, self.job_enqueueable)
        ssn.add_job_enqueued_fn(NAME, self.job_enqueued)
        ssn.add_pre_predicate_fn(NAME, self.pre_predicate)
        ssn.add_simulate_add_task_fn(NAME, self.simulate_add_task)
        ssn.add_simulate_remove_task_fn(NAME, self.simulate_remove_task)
        ssn.add_simulate_allocatable_fn(NAME, self.simulate_allocatable)
        ssn.add_event_handler(EventHandler(allocate=self.on_allocate, deallocate=self.on_deallocate))

    def on_session_close(self, ssn: Session) -> None:
        """Report every queue's figures, inner queues included."""
        for queue in ssn.queues.values():
            attr = self.tree.attrs.get(queue.uid)
            if attr is not None:
                ssn.queue_figures[queue.name] = self._figures(queue, attr)
        self.ssn = None

    @property
    def ancestor_level(self) -> int:
        """How many levels above the leaves reclaim compares: `ancestorReclaimLevel`, with hierarchy only."""
        return self.args.ancestor_reclaim_level if self.tree.hierarchical else 0

    def _figures(self, queue: QueueInfo, attr: QueueAttr) -> QueueFigures:
        if not self.tree.hierarchical:
            parent = ""
        elif attr.ancestors:
            parent = str(attr.ancestors[-1])
        else:
            parent = queue.parent
        return QueueFigures(
            weight=queue.weight,
            allocated=attr.allocated.clone(),
            request=attr.request.clone(),
            deserved=attr.deserved.clone(),
            capability=attr.capability.clone() if attr.capability is not None else None,
            real_capability=attr.real_capability.clone() if attr.real_capability is not None else None,
            guarantee=attr.guarantee.clone(),
            inqueue=attr.inqueue.clone(),
            share=attr.current_share(),
            overused=is_overused(attr),
            parent=parent,
        )

    # Orderings -------------------------------------------------------------------------------

    def queue_order(self, l: QueueInfo, r: QueueInfo) -> int:
        """docs/semantics.md, "Capacity queue order" (flat or hierarchical)."""
        if self.tree.hierarchical:
            return order.hierarchical_queue_order(self.tree.attrs, l, r)
        return order.flat_queue_order(self.tree.attrs, l, r)

    def victim_queue_order(self, l: QueueInfo, r: QueueInfo, preemptor: QueueInfo) -> int:
        """Victims from queues closer to the preemptor's first.

        docs/semantics.md, "Victim queue order by common ancestor".
        """
        return order.victim_queue_order(self.tree.attrs, l, r, preemptor)

    # Admission and allocation ----------------------------------------------------------------

    def job_valid(self, job: JobInfo) -> ValidateResult | None:
        """Refuse a job whose queue is cut off from the root or is not a leaf: it waits."""
        reason = self.tree.blocked_jobs.get(job.uid)
        return ValidateResult(False, QUEUE_UNUSABLE, reason) if reason is not None else None

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """An open, usable queue whose every level keeps allocated + request <= realCapability."""
        if not queue.is_open() or not self.tree.is_usable(queue.uid):
            return False
        return quota.allocatable(self.tree.attrs, self.tree.attrs[queue.uid], task.resreq)

    def job_enqueueable(self, job: JobInfo) -> Vote:
        """Permit while minReq + allocated + inqueue - elastic fits realCapability at every level."""
        assert self.ssn is not None
        blocked = self.tree.blocked_jobs.get(job.uid)
        if blocked is not None:
            job.job_fit_error = blocked
            return Vote.REJECT
        queue = self.ssn.queues.get(job.queue)
        if queue is None or not queue.is_open() or not self.tree.is_usable(job.queue):
            return Vote.REJECT
        if job.min_resources is None:
            return Vote.PERMIT
        shortage = quota.enqueue_shortage(self.tree.attrs, self.tree.attrs[job.queue], job.min_resources)
        if shortage is None:
            return Vote.PERMIT
        level, short = shortage
        job.job_fit_error = f"queue {level} resource quota insufficient: insufficient {', '.join(short)}"
        return Vote.REJECT

    def job_enqueued(self, job: JobInfo) -> None:
        """Count an admitted job's minResources as inqueue in its queue and every ancestor."""
        attr = self.tree.attrs.get(job.queue)
        if attr is None or job.min_resources is None:
            return
        self.tree.before_change()
        for level in lineage(self.tree.attrs, attr):
            level.inqueue.add(job.min_resources)

    def on_allocate(self, task: TaskInfo) -> None:
        """A task was allocated or pipelined: add it to its queue and ancestors."""
        self._change(task, add=True)

    def on_deallocate(self, task: TaskInfo) -> None:
        """A task was evicted or an allocation undone: take it away again."""
        self._change(task, add=False)

    def _change(self, task: TaskInfo, *, add: bool) -> None:
        assert self.ssn is not None
        job = self.ssn.jobs.get(task.job) if task.job else None
        if job is not None:
            self.tree.allocate(job.queue, task.resreq, add=add)

    # Preempt and reclaim ---------------------------------------------------------------------

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """The task fits realCapability and one requested dimension stays within deserved, at the queue or
        an ancestor up to `ancestorReclaimLevel`.

        docs/semantics.md, "Capacity preemptive" and "Reclaim by ancestors".
        """
        if not queue.is_open() or not self.tree.is_usable(queue.uid):
            return False
        return reclaim.preemptive(self.tree, self.tree.attrs[queue.uid], task.resreq, self.ancestor_level)

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
        """Victims that share a dimension with the reclaimer, leave their queue's guarantee intact, are
        borrowed or from a queue above deserved, and whose ancestors up to `ancestorReclaimLevel` are too.

        docs/semantics.md, "Capacity reclaimable" and "Reclaim by ancestors".
        """
        assert self.ssn is not None
        reclaimer_job = self.ssn.jobs.get(reclaimer.job) if reclaimer.job else None
        if reclaimer_job is None or not self.tree.is_usable(reclaimer_job.queue):
            return [], Vote.REJECT
        choice = reclaim.VictimChoice(self.tree, reclaimer, self.tree.attrs[reclaimer_job.queue], self.ancestor_level)
        victims = []
        ssn = self.ssn
        for reclaimee in ordered(lambda l, r: ssn.victim_order_fn(l, r, reclaimer), reclaimees):
            job = ssn.jobs.get(reclaimee.job) if reclaimee.job else None
            attr = self.tree.attrs.get(job.queue) if job is not None else None
            if attr is not None and choice.take(reclaimee, attr):
                victims.append(reclaimee)
        return victims, Vote.PERMIT

    def gang_evictable(self, context: EvictionContext, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
        """gangpreempt: every candidate (capacity filters no preemption victims); gangreclaim: victims that
        leave their queue's guarantee intact and are borrowed or from a queue above deserved, each counted
        as taken (Volcano's capacity UnifiedEvictableFn, which checks no ancestors)."""
        assert self.ssn is not None
        if context.kind is EvictionKind.GANG_PREEMPT:
            return candidates, Vote.PERMIT
        if not self.tree.is_usable(context.job.queue):
            return [], Vote.REJECT
        allocated: dict[str, Resource] = {}
        victims = []
        for reclaimee in candidates:
            job = self.ssn.jobs.get(reclaimee.job) if reclaimee.job else None
            attr = self.tree.attrs.get(job.queue) if job is not None else None
            if attr is None:
                continue
            held = allocated.setdefault(attr.queue_id, attr.allocated.clone())
            request = reclaimee.resreq
            if not quota.keeps_guarantee(held, request, attr.guarantee):
                continue
            borrowed = quota.is_immediate_victim(request, attr.deserved)
            if borrowed or quota.exceeds_deserved(held, attr.deserved, request):
                held.sub_without_assert(request)
                victims.append(reclaimee)
        return victims, Vote.PERMIT

    def pre_predicate(self, task: TaskInfo, state: CycleState) -> str | None:
        """Give the preemptor's CycleState its own view of the queue attributes; never fails."""
        state.write(STATE_KEY, CapacityState(self.tree))
        return None

    def simulate_add_task(self, state: CycleState, task: TaskInfo, added: TaskInfo, node: NodeInfo) -> None:
        """Dry run: `added` holds resources again."""
        assert self.ssn is not None
        simulate_change(self.ssn.jobs, state, added, add=True)

    def simulate_remove_task(self, state: CycleState, task: TaskInfo, removed: TaskInfo, node: NodeInfo) -> None:
        """Dry run: `removed` gives its resources back."""
        assert self.ssn is not None
        simulate_change(self.ssn.jobs, state, removed, add=False)

    def simulate_allocatable(self, state: CycleState, queue: QueueInfo, task: TaskInfo) -> bool:
        """Dry run of `allocatable` on the state's copy."""
        return simulate_allocatable(self.tree, state, queue, task)


def is_overused(attr: QueueAttr) -> bool:
    """Share above 1 (over deserved, so reclaimable), as Volcano's capacity reports it.

    Capacity registers no overused function: this is only the reported figure, from the current share
    (an ancestor's stored share keeps its session-open value for queue order). A best-effort queue
    (share 1) never is (docs/semantics.md, "Capacity share and best-effort queues").
    """
    return attr.current_share() > 1
