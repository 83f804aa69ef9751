"""Who may reclaim (preemptive) and which candidates are victims (reclaimable), with the ancestor levels.

The rules: docs/semantics.md, "Capacity preemptive", "Capacity reclaimable" and "Reclaim by ancestors".
`level` is the plugin's `ancestorReclaimLevel` with hierarchy on, else 0: with 0 only the leaf queues
are compared, as in flat mode. Depths count up from a queue: 1 is its parent; the root never counts.
"""

from __future__ import annotations

from py_volcano.api import QueueID, Resource, TaskInfo
from py_volcano.plugins.capacity import quota
from py_volcano.plugins.capacity.attrs import QueueAttr, QueueTree, ancestor_at, ancestors_within
from py_volcano.plugins.capacity.hierarchy import ROOT

__all__ = ["VictimChoice", "preemptive"]


def preemptive(tree: QueueTree, attr: QueueAttr, resreq: Resource, level: int) -> bool:
    """The task fits the queue's realCapability, and the queue, or one of its ancestors up to `level`
    (the root aside), stays within deserved in some requested dimension once it holds the task."""
    if not quota.fits_real_capability(attr, resreq):
        return False
    if quota.within_deserved_partly(attr.allocated, attr.deserved, resreq):
        return True
    for depth in range(1, level + 1):
        ancestor = ancestor_at(attr, depth)
        if ancestor is None or ancestor == ROOT:
            continue
        above = tree.attrs[ancestor]
        if quota.within_deserved_partly(above.allocated, above.deserved, resreq):
            return True
    return False


class VictimChoice:
    """One reclaimable call: the rules, and each queue's allocated as the victims chosen so far leave it.

    Candidates are offered in victim order; every queue starts from a copy of its allocated, the first
    time a candidate needs it, and loses each victim's request.
    """

    __slots__ = ("_allocated", "level", "reclaimer", "reclaimer_attr", "tree")

    def __init__(self, tree: QueueTree, reclaimer: TaskInfo, reclaimer_attr: QueueAttr, level: int) -> None:
        self.tree = tree
        self.reclaimer = reclaimer
        self.reclaimer_attr = reclaimer_attr
        self.level = level
        self._allocated: dict[QueueID, Resource] = {}

    def _allocated_of(self, attr: QueueAttr) -> Resource:
        allocated = self._allocated.get(attr.queue_id)
        if allocated is None:
            allocated = self._allocated[attr.queue_id] = attr.allocated.clone()
        return allocated

    def take(self, reclaimee: TaskInfo, attr: QueueAttr) -> bool:
        """Decide one candidate of queue `attr`; a victim's request leaves its queue and the ancestors checked."""
        request = reclaimee.resreq
        if not quota.shares_dimension(request, self.reclaimer.init_resreq):
            return False
        allocated = self._allocated_of(attr)
        if not quota.keeps_guarantee(allocated, request, attr.guarantee):
            return False
        if quota.is_immediate_victim(request, attr.deserved):
            if self._no_contention(attr):
                return False
        elif not quota.exceeds_deserved(allocated, attr.deserved, request):
            return False
        above = self._ancestors_over_deserved(request, attr)
        if above is None:
            return False
        for level in (allocated, *above):
            level.sub_without_assert(request)
        return True

    def _no_contention(self, attr: QueueAttr) -> bool:
        """A borrowed victim is spared when it shares a non-root ancestor within `level` with the reclaimer
        and the reclaimer's own queue deserves nothing it asks for: the two leaves only share that ancestor's
        entitlement, so there is nothing to take back."""
        if self.level <= 0:
            return False
        shared = ancestors_within(self.reclaimer_attr, self.level) & ancestors_within(attr, self.level)
        shared.discard(ROOT)
        return bool(shared) and not quota.has_relevant_deserved(self.reclaimer.resreq, self.reclaimer_attr.deserved)

    def _ancestors_over_deserved(self, request: Resource, attr: QueueAttr) -> list[Resource] | None:
        """Check the victim's ancestors level by level; return their allocated copies, or None to spare it.

        At each depth up to `level` the victim's ancestor is checked unless it is the root or the reclaimer's
        ancestor at the same depth (the same entitlement on both sides): it must not deserve what the victim
        uses, or hold more than it deserves on a dimension the victim uses.
        """
        checked: list[Resource] = []
        for depth in range(1, self.level + 1):
            ancestor = ancestor_at(attr, depth)
            if ancestor is None or ancestor == ROOT or ancestor == ancestor_at(self.reclaimer_attr, depth):
                continue
            above = self.tree.attrs[ancestor]
            allocated = self._allocated_of(above)
            checked.append(allocated)
            if quota.is_immediate_victim(request, above.deserved):
                continue
            if not quota.exceeds_deserved(allocated, above.deserved, request):
                return None
        return checked
