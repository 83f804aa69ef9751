"""Hierarchical mode: a queue tree under `root`, usage rolled up, capacity handed down.

The rules: docs/semantics.md, "Hierarchical capacity" and "Unusable queues". Each queue's parent is
`spec.parent` (the root when empty); the root is unlimited and exists even when no Queue object names
it. A queue whose parents loop, or lead to a missing queue, is cut off: it is reported and its jobs
wait, everything else is scheduled (docs/scenarios.md: a hierarchy with a cycle is cluster state, not an
error). Jobs run only in leaf queues; one in an inner queue is reported and waits, where Volcano would
switch the whole plugin off (docs/semantics.md, "Deliberate differences from Volcano").
"""

from __future__ import annotations

from py_volcano.api import INFINITY, ROOT_QUEUE, ZERO, JobInfo, QueueID, Resource
from py_volcano.framework import Session
from py_volcano.plugins.capacity.attrs import QueueAttr, QueueTree, add_job_usage
from py_volcano.plugins.capacity.flat import unlimited_unset

__all__ = ["ROOT", "build_hierarchy"]

ROOT = QueueID(ROOT_QUEUE)
_UNLIMITED = float("inf")


def build_hierarchy(ssn: Session) -> QueueTree:
    """Build the tree: link parents, add job usage, then capability and realCapability root-down."""
    attrs = {queue.uid: QueueAttr.from_queue(queue) for queue in ssn.queues.values()}
    attrs.setdefault(ROOT, QueueAttr(ROOT))
    tree = QueueTree(attrs, hierarchical=True)
    tree.blocked_queues = _link(ssn, attrs)
    for job in ssn.jobs.values():
        _add_job(ssn, tree, job)
    root = attrs[ROOT]
    root.capability = unlimited_unset(root.capability or Resource())
    for name in ssn.total_resource.scalars:
        root.capability.scalars.setdefault(name, _UNLIMITED)
    root.real_capability = root.capability.clone()
    _hand_down(ssn, attrs, root)
    for attr in attrs.values():
        attr.update_share()
    return tree


def _parent_of(ssn: Session, queue_id: QueueID) -> QueueID:
    queue = ssn.queues.get(queue_id)
    return QueueID(queue.parent) if queue is not None and queue.parent else ROOT


def _link(ssn: Session, attrs: dict[QueueID, QueueAttr]) -> dict[QueueID, str]:
    """Set ancestors and children of the queues that reach the root; return the others with why."""
    cut: dict[QueueID, str] = {}
    attached = {ROOT}
    for queue_id in attrs:
        path: list[QueueID] = []
        current = queue_id
        while current not in attached and current not in cut:
            if current in path:
                _cut_cycle(ssn, path[path.index(current) :], cut)
                break
            path.append(current)
            parent = _parent_of(ssn, current)
            if parent not in attrs:
                cut[current] = f"its parent queue {parent!r} does not exist"
                ssn.warn(f"Queue {current}: field spec.parent: queue {parent!r} not found; its jobs wait")
                break
            current = parent
        for member in path:
            if member in cut or member in attached:
                continue
            if current in attached:
                attached.add(member)
            else:
                cut[member] = f"its ancestor queue {current!r} is cut off from the root queue"
                ssn.warn(
                    f"Queue {member}: field spec.parent: ancestor queue {current!r} is cut off from "
                    f"the root queue ({cut[current]}); its jobs wait"
                )
    for queue_id in attrs:
        if queue_id in attached and queue_id != ROOT:
            _ancestors(ssn, attrs, queue_id)
            attrs[_parent_of(ssn, queue_id)].children.append(queue_id)
    return cut


def _cut_cycle(ssn: Session, loop: list[QueueID], cut: dict[QueueID, str]) -> None:
    chain = " -> ".join([*loop, loop[0]])
    for member in loop:
        cut[member] = f"its queue hierarchy has a cycle ({chain})"
    ssn.warn(f"Queues {', '.join(loop)}: field spec.parent: parents form a cycle {chain}; their jobs wait")


def _ancestors(ssn: Session, attrs: dict[QueueID, QueueAttr], queue_id: QueueID) -> tuple[QueueID, ...]:
    """Return (and store) the ancestors of an attached queue, root first."""
    attr = attrs[queue_id]
    if queue_id == ROOT or attr.ancestors:
        return attr.ancestors
    parent = _parent_of(ssn, queue_id)
    attr.ancestors = (*_ancestors(ssn, attrs, parent), parent)
    return attr.ancestors


def _subject(job: JobInfo) -> str:
    if job.pod_group.shadow and job.tasks:
        task = next(iter(job.tasks.values()))
        return f"Pod {task.key}: field metadata.annotations[scheduling.volcano.sh/queue-name]"
    return f"PodGroup {job.uid}: field spec.queue"


def _add_job(ssn: Session, tree: QueueTree, job: JobInfo) -> None:
    """Roll the job's usage up its lineage; mark it blocked when its queue is cut off or not a leaf."""
    attr = tree.attrs.get(job.queue)
    if attr is None:
        return
    reason = tree.blocked_queues.get(job.queue)
    if reason is not None:
        tree.blocked_jobs[job.uid] = f"queue {job.queue!r} cannot be used: {reason}"
    elif attr.children:
        reason = f"queue {job.queue!r} is not a leaf queue (child queues: {', '.join(attr.children)})"
        tree.blocked_jobs[job.uid] = f"{reason}; jobs run only in leaf queues"
        ssn.warn(f"{_subject(job)}: {reason}; the job waits")
    add_job_usage(tree.attrs, attr, job)


def _inherit(capability: Resource | None, parent: Resource) -> Resource:
    """Take CPU, memory and scalars the child's capability leaves unset from the parent's."""
    inherited = capability.clone() if capability is not None else Resource()
    if inherited.milli_cpu <= 0:
        inherited.milli_cpu = parent.milli_cpu
    if inherited.memory <= 0:
        inherited.memory = parent.memory
    for name, value in parent.scalars.items():
        inherited.scalars.setdefault(name, value)
    return inherited


def _hand_down(ssn: Session, attrs: dict[QueueID, QueueAttr], root: QueueAttr) -> None:
    """Root-down: children's deserved >= guarantee, inherited capability, realCapability; warn on misfits."""
    stack = [root]
    while stack:
        parent = stack.pop()
        assert parent.capability is not None and parent.real_capability is not None
        children = [attrs[child] for child in parent.children]
        total_guarantee, total_deserved = Resource(), Resource()
        for child in children:
            child.deserved.set_max_resource(child.guarantee)
            total_deserved.add(child.deserved)
            total_guarantee.add(child.guarantee)
            child.capability = _inherit(child.capability, parent.capability)
            fits, over = child.capability.less_equal_with_resources_name(parent.capability, INFINITY)
            if not fits:
                ssn.warn(
                    f"Queue {child.name}: field spec.capability: above parent queue {parent.name}'s "
                    f"capability on {', '.join(over)}; the parent's capability limits it"
                )
        if parent.queue_id == ROOT:
            parent.guarantee, parent.deserved = total_guarantee, total_deserved
        contested = parent.real_capability.exceeded_part(total_guarantee)
        for child in children:
            assert child.capability is not None
            real = contested.clone().add(child.guarantee)
            child.real_capability = real.min_dimension_resource(child.capability, INFINITY)
        _warn_sums(ssn, parent, total_deserved, total_guarantee)
        stack.extend(reversed(children))


def _warn_sums(ssn: Session, parent: QueueAttr, total_deserved: Resource, total_guarantee: Resource) -> None:
    if parent.deserved.less_partly(total_deserved, ZERO):
        ssn.warn(
            f"Queue {parent.name}: field spec.deserved: below the sum of its child queues' deserved "
            f"({_show(total_deserved)}); scheduling goes on"
        )
    if parent.guarantee.less_partly(total_guarantee, ZERO):
        ssn.warn(
            f"Queue {parent.name}: field spec.guarantee: below the sum of its child queues' guarantees "
            f"({_show(total_guarantee)}); not every child guarantee can hold at once"
        )


def _show(resource: Resource) -> str:
    return ", ".join(f"{name} {value}" for name, value in resource.to_quantities().items())
