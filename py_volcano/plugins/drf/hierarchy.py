"""Hierarchical DRF: queues in a tree read from their `volcano.sh/hierarchy` annotations, ordered by
weighted dominant share level by level (docs/semantics.md, "Hierarchical DRF").

Each job is a leaf under the path of its queue's annotation (`root/eng/dev`: `root` stands for the
tree's root whatever it is called; an empty annotation puts the job under the root). An inner node's
weight is the matching entry of `volcano.sh/hierarchy-weights` (`100/50/50`), taken when the first job
below it is attached; a missing, unreadable or < 1 entry counts as 1.

A node's allocation, bottom up: a leaf holds its job's allocated resources and is *saturated* when it
holds all it asks for in some dimension, or asks for a dimension nobody can get more of (the cluster
has it all allocated). An inner node scales every non-empty, unsaturated child to the smallest
dominant share among them (saturated children count as they are) and sums them; it is saturated when
all its children are. Queues compare along their paths: unsaturated first, then the lower share /
weight, level after level while equal.

Event handlers refresh only the path from the changed job to the root while the set of dimensions the
cluster still has room in is unchanged (no other node can change then), the whole tree otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from py_volcano.api import JobID, JobInfo, QueueID, QueueInfo, Resource, TaskInfo, Vote
from py_volcano.framework import Session
from py_volcano.plugins.drf.shares import DrfAttr, JobShares

__all__ = ["HierarchicalShares", "HierarchyNode"]


class HierarchyNode:
    """One node of the tree: a queue level (children by path element) or a job (no children)."""

    __slots__ = ("attr", "children", "name", "parent", "request", "saturated", "weight")

    def __init__(
        self,
        name: str,
        *,
        attr: DrfAttr,
        weight: float = 1.0,
        request: Resource | None = None,
        children: dict[str, HierarchyNode] | None = None,
        parent: HierarchyNode | None = None,
    ) -> None:
        self.name = name
        self.attr = attr
        self.weight = weight
        self.request = request if request is not None else Resource()
        self.children = children
        self.parent = parent
        self.saturated = False

    def clone(self, parent: HierarchyNode | None = None) -> HierarchyNode:
        """Return a deep copy of the subtree (attrs included) under `parent`."""
        copy = HierarchyNode(self.name, attr=self.attr.clone(), weight=self.weight, request=self.request, parent=parent)
        copy.saturated = self.saturated
        if self.children is not None:
            copy.children = {name: child.clone(copy) for name, child in self.children.items()}
        return copy

    def __repr__(self) -> str:
        return f"HierarchyNode({self.name} w={self.weight:g} {self.attr!r}{' saturated' if self.saturated else ''})"


def _weight(weights: list[str], level: int) -> float:
    """The weight of path level `level`; Volcano reads a missing or unreadable entry as 0, then raises any
    weight below 1 to 1."""
    try:
        value = float(weights[level])
    except (IndexError, ValueError):
        return 1.0
    return value if math.isfinite(value) and value >= 1 else 1.0


def _saturated(allocated: Resource, request: Resource, demanding: frozenset[str]) -> bool:
    """A job is saturated when it holds all it asks for in some dimension, or asks for one the cluster has
    no room left in (Volcano's resourceSaturated)."""
    for name in allocated.names():
        held, asked = allocated.get(name), request.get(name)
        if held != 0 and asked != 0 and held >= asked:
            return True
        if name not in demanding and asked != 0:
            return True
    return False


class HierarchicalShares:
    """The session's hierarchy: the tree, each job's leaf, and the cluster's allocated total."""

    __slots__ = ("demanding", "jobs", "leaves", "queues", "root", "shares", "total_allocated")

    def __init__(self, shares: JobShares, ssn: Session) -> None:
        self.shares = shares
        self.jobs: Mapping[JobID, JobInfo] = ssn.jobs
        self.queues: Mapping[QueueID, QueueInfo] = ssn.queues
        self.root = HierarchyNode("root", attr=DrfAttr(Resource()), children={})
        self.leaves: dict[JobID, HierarchyNode] = {}
        self.total_allocated = Resource()
        self.demanding: frozenset[str] = frozenset()

    @classmethod
    def build(cls, shares: JobShares, ssn: Session) -> HierarchicalShares:
        """Attach every job of a known queue under its queue's path and compute the tree."""
        tree = cls(shares, ssn)
        for job in ssn.jobs.values():
            queue, attr = ssn.queues.get(job.queue), shares.attrs.get(job.uid)
            if queue is None or attr is None:
                continue
            tree.total_allocated.add(attr.allocated)
            tree.leaves[job.uid] = _attach(tree.root, job, attr, queue)
        tree.demanding = tree.demanding_in(tree.total_allocated)
        tree.refresh(tree.root)
        return tree

    def add_job(self, job: JobInfo, attr: DrfAttr, queue: QueueInfo | None) -> None:
        """Attach a job added to the session under its queue's path and recompute the tree, as `build` does."""
        if queue is None:
            return
        self.total_allocated.add(attr.allocated)
        self.leaves[job.uid] = _attach(self.root, job, attr, queue)
        self.demanding = self.demanding_in(self.total_allocated)
        self.refresh(self.root)

    def demanding_in(self, total_allocated: Resource) -> frozenset[str]:
        """The cluster's dimensions not yet fully allocated."""
        return frozenset(name for name, total in self.shares.dims if total_allocated.get(name) < total)

    def refresh(self, node: HierarchyNode, demanding: frozenset[str] | None = None) -> None:
        """Recompute saturation, allocation and share of `node`'s whole subtree, bottom up."""
        wanted = self.demanding if demanding is None else demanding
        if node.children is None:
            node.saturated = _saturated(node.attr.allocated, node.request, wanted)
            return
        for child in node.children.values():
            self.refresh(child, wanted)
        self._combine(node)

    def refresh_path(self, leaf: HierarchyNode, demanding: frozenset[str] | None = None) -> None:
        """Recompute `leaf` and its ancestors only (valid while no other leaf's saturation can change)."""
        wanted = self.demanding if demanding is None else demanding
        leaf.saturated = _saturated(leaf.attr.allocated, leaf.request, wanted)
        node = leaf.parent
        while node is not None:
            self._combine(node)
            node = node.parent

    def _combine(self, node: HierarchyNode) -> None:
        """An inner node from its children: unsaturated children scaled to the smallest dominant share."""
        children = (node.children or {}).values()
        smallest = 1.0
        for child in children:
            if child.attr.share != 0 and not child.saturated:
                smallest = min(smallest, self.shares.calculate_share(child.attr.allocated)[1])
        allocated = Resource()
        for child in children:
            if child.attr.share == 0:
                continue
            if child.saturated:
                allocated.add(child.attr.allocated)
            else:
                allocated.add(child.attr.allocated.clone().multi(smallest / child.attr.share))
        node.attr.allocated = allocated
        self.shares.update_share(node.attr)
        node.saturated = all(child.saturated for child in children)

    def queue_order(self, l: QueueInfo, r: QueueInfo) -> int:
        """Order queues along their paths: unsaturated first, then the lower share / weight."""
        difference = compare_queues(self.root, l, r)
        return -1 if difference < 0 else 1 if difference > 0 else 0

    def changed(self, task: TaskInfo, delta: int) -> None:
        """Event handler body: `task` was placed (+1) or left (-1); its job's flat attr is already current."""
        leaf = self.leaves.get(task.job) if task.job else None
        if leaf is None:
            return
        if delta > 0:
            self.total_allocated.add(task.resreq)
        else:
            self.total_allocated.sub_without_assert(task.resreq)
        demanding = self.demanding_in(self.total_allocated)
        if demanding == self.demanding:
            self.refresh_path(leaf)
        else:
            self.demanding = demanding
            self.refresh(self.root)

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
        """Offer each reclaimee whose queue, once the reclaimer holds its task and the reclaimee is gone,
        still compares after the reclaimer's queue; each is weighed alone, on a copy of the tree."""
        job = self.jobs.get(reclaimer.job) if reclaimer.job else None
        queue = self.queues.get(job.queue) if job is not None else None
        attr = self.shares.attrs.get(job.uid) if job is not None else None
        if job is None or queue is None or attr is None:
            return [], Vote.PERMIT
        what_if = _WhatIf(self)
        what_if.move(job, queue, attr, reclaimer.resreq, 1)
        victims = []
        for reclaimee in reclaimees:
            r_job = self.jobs.get(reclaimee.job) if reclaimee.job else None
            r_queue = self.queues.get(r_job.queue) if r_job is not None else None
            r_attr = self.shares.attrs.get(r_job.uid) if r_job is not None else None
            if r_job is None or r_queue is None or r_attr is None:
                continue
            moved = what_if.move(r_job, r_queue, r_attr, reclaimee.resreq, -1)
            before = compare_queues(what_if.root, queue, r_queue)
            what_if.restore(r_job, moved, reclaimee.resreq)
            if before < 0:
                victims.append(reclaimee)
        return victims, Vote.PERMIT


class _WhatIf:
    """A copy of the tree in which jobs' allocations are changed to weigh a reclaim."""

    __slots__ = ("root", "total", "tree")

    def __init__(self, tree: HierarchicalShares) -> None:
        self.tree = tree
        self.root = tree.root.clone()
        self.total = tree.total_allocated.clone()

    def move(self, job: JobInfo, queue: QueueInfo, attr: DrfAttr, resreq: Resource, delta: int) -> DrfAttr:
        """Give `job` (+1) or take from it (-1) `resreq`, starting from its session attr; return the changed attr."""
        changed = attr.clone()
        if delta > 0:
            changed.allocated.add(resreq)
            self.total.add(resreq)
        else:
            changed.allocated.sub_without_assert(resreq)
            self.total.sub_without_assert(resreq)
        self.tree.shares.update_share(changed)
        _attach(self.root, job, changed, queue)
        self.tree.refresh(self.root, self.tree.demanding_in(self.total))
        return changed

    def restore(self, job: JobInfo, changed: DrfAttr, resreq: Resource) -> None:
        """Give back what `move(..., -1)` took."""
        changed.allocated.add(resreq)
        self.total.add(resreq)
        self.tree.shares.update_share(changed)
        self.tree.refresh(self.root, self.tree.demanding_in(self.total))


def _attach(root: HierarchyNode, job: JobInfo, attr: DrfAttr, queue: QueueInfo) -> HierarchyNode:
    """Put `job` (its attr shared, not copied) under its queue's path, creating the levels it lacks; return
    the leaf (replacing an earlier leaf of the job)."""
    node = root
    path, weights = queue.hierarchy.split("/"), queue.hierarchy_weights.split("/")
    for level in range(1, len(path)):
        children = node.children if node.children is not None else {}
        child = children.get(path[level])
        if child is None:
            child = HierarchyNode(
                path[level], attr=DrfAttr(Resource()), weight=_weight(weights, level), children={}, parent=node
            )
            children[path[level]] = child
        node = child
    leaf = HierarchyNode(str(job.uid), attr=attr, request=job.total_request.clone(), parent=node)
    if node.children is not None:
        node.children[leaf.name] = leaf
    return leaf


def compare_queues(root: HierarchyNode, l: QueueInfo, r: QueueInfo) -> float:
    """Walk both queues' paths from the root; the first level where they differ decides (negative: `l`
    first). A level missing from the tree (a queue without jobs) ends the walk as a tie."""
    l_node = r_node = root
    l_path, r_path = l.hierarchy.split("/"), r.hierarchy.split("/")
    depth = min(len(l_path), len(r_path))
    for level in range(depth):
        if l_node.saturated != r_node.saturated:
            return 1.0 if l_node.saturated else -1.0
        difference = l_node.attr.share / l_node.weight - r_node.attr.share / r_node.weight
        if difference != 0:
            return difference
        if level < depth - 1:
            l_next = (l_node.children or {}).get(l_path[level + 1])
            r_next = (r_node.children or {}).get(r_path[level + 1])
            if l_next is None or r_next is None:
                return 0.0
            l_node, r_node = l_next, r_next
    return 0.0
