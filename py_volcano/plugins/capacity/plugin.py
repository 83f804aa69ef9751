"""CapacityPlugin: the functions the capacity plugin registers on a session, and its figures.

The rules: docs/semantics.md, "Capacity". The state is built once per session (`build_flat`, or
`build_hierarchy` when the plugin's hierarchy switch is on); every registered function is a bound method
over it. Volcano's capacity reads the switch as off when it is not written, unlike every other switch
(`ssn.HierarchyEnabled`).
"""

from __future__ import annotations

from py_volcano.api import JobInfo, NodeInfo, QueueFigures, QueueID, QueueInfo, Resource, TaskInfo, Vote
from py_volcano.framework import (
    CycleState,
    EventHandler,
    NoArgs,
    Session,
    ValidateResult,
    ordered,
)
from py_volcano.plugins.capacity import order, quota
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

    def __init__(self, args: NoArgs) -> None:
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
            share=attr.share,
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
        """The task fits realCapability and one requested dimension stays within deserved.

        docs/semantics.md, "Capacity preemptive".
        """
        if not queue.is_open() or not self.tree.is_usable(queue.uid):
            return False
        return quota.preemptive(self.tree.attrs[queue.uid], task.resreq)

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
        """Victims that share a dimension with the reclaimer, leave their queue's guarantee intact, and are
        borrowed (nothing deserved) or from a queue above deserved on their dimensions.

        docs/semantics.md, "Capacity reclaimable".
        """
        assert self.ssn is not None
        reclaimer_job = self.ssn.jobs.get(reclaimer.job) if reclaimer.job else None
        if reclaimer_job is None or not self.tree.is_usable(reclaimer_job.queue):
            return [], Vote.REJECT
        allocations: dict[QueueID, Resource] = {}
        victims = []
        for reclaimee in victims_in_order(self.ssn, reclaimees, reclaimer):
            job = self.ssn.jobs.get(reclaimee.job) if reclaimee.job else None
            attr = self.tree.attrs.get(job.queue) if job is not None else None
            if attr is None or not quota.shares_dimension(reclaimee.resreq, reclaimer.init_resreq):
                continue
            allocated = allocations.get(attr.queue_id)
            if allocated is None:
                allocated = allocations[attr.queue_id] = attr.allocated.clone()
            if not quota.keeps_guarantee(allocated, reclaimee.resreq, attr.guarantee):
                continue
            if quota.is_immediate_victim(reclaimee.resreq, attr.deserved) or quota.exceeds_deserved(
                allocated, attr.deserved, reclaimee.resreq
            ):
                allocated.sub_without_assert(reclaimee.resreq)
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

    Capacity registers no overused function: this is only the reported figure. A best-effort queue
    (share 1) never is (docs/semantics.md, "Capacity share and best-effort queues").
    """
    return attr.share > 1


def victims_in_order(ssn: Session, victims: list[TaskInfo], preemptor: TaskInfo) -> list[TaskInfo]:
    """Order candidate victims as Volcano's BuildVictimsPriorityQueue does: inside a job the reverse
    of task order; across queues the victim queue order; otherwise the reverse of job order.
    """
    preemptor_job = ssn.jobs.get(preemptor.job) if preemptor.job else None

    def less(l: TaskInfo, r: TaskInfo) -> bool:
        if l.job == r.job:
            return ssn.task_order_fn(r, l)
        l_job = ssn.jobs.get(l.job) if l.job else None
        r_job = ssn.jobs.get(r.job) if r.job else None
        if l_job is None or r_job is None:
            return False
        if preemptor_job is not None and l_job.queue != r_job.queue:
            queues = ssn.queues
            if l_job.queue in queues and r_job.queue in queues and preemptor_job.queue in queues:
                return ssn.victim_queue_order_fn(queues[l_job.queue], queues[r_job.queue], queues[preemptor_job.queue])
        return ssn.job_order_fn(r_job, l_job)

    return ordered(less, victims)
