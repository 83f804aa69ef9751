"""nodegroup: queues bound to node groups, the `volcano.sh/nodegroup-name` node label (Volcano's nodegroup).

A Queue's `spec.affinity` names groups its pods must (`nodeGroupAffinity.required...`), should
(`...preferred...`), must not (`nodeGroupAntiAffinity.required...`) and should not (`...preferred...`)
run in. The predicate, for a task of queue Q on node N:

1. Q's `volcano.sh/nodegroup-resource-limits` annotation is not valid JSON of resource lists: refused;
2. N has no group label: allowed only with `strict: false` and no affinity on Q; else refused;
3. N has a group but Q no affinity (or an empty one): refused;
4. the group is neither required nor preferred, or is anti-required (unless also anti-preferred,
   which Volcano lets win): refused;
5. Q's limit for the group (from the annotation) would be exceeded by what Q holds there plus the task:
   refused.

The score: 100 for a required group, plus 50 for a preferred one (or 50 x (n - i) / n for the i-th of n
preferred groups with `enablePreferredOrder`); -1 for an anti-preferred group. With `enableHierarchy`,
a queue without affinity takes its nearest ancestor's (`spec.parent`, else `root`). docs/plugins.md,
"nodegroup".
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from py_volcano.api import (
    MIN_RESOURCE,
    ROOT_QUEUE,
    JobID,
    NodeGroupAffinity,
    NodeInfo,
    QueueID,
    QueueInfo,
    Resource,
    TaskInfo,
    is_allocated_status,
)
from py_volcano.framework import Arguments, EventHandler, PredicateStatus, Session

__all__ = ["GROUP_LABEL", "NAME", "RESOURCE_LIMITS", "NodeGroupArgs", "NodeGroupPlugin", "new"]

NAME = "nodegroup"
GROUP_LABEL = "volcano.sh/nodegroup-name"
RESOURCE_LIMITS = "volcano.sh/nodegroup-resource-limits"
BASE_SCORE = 100.0

AFFINITY_NOT_FOUND = "node group affinity not specified"
LABEL_NOT_FOUND = "node group label not found"
UNSATISFIED = "node does not satisfy the node group affinity"
LIMIT_INVALID = "node group resource limit annotation invalid"
LIMIT_EXCEEDED = "node group resource limit exceeded"


@dataclass(slots=True, frozen=True)
class NodeGroupArgs:
    """nodegroup's arguments."""

    strict: bool = True
    """`strict`: nodes without a group label take no pod; false lets queues without affinity use them."""
    preferred_order: bool = False
    """`enablePreferredOrder`: earlier preferred groups score higher, instead of all alike."""

    @classmethod
    def parse(cls, args: Arguments) -> NodeGroupArgs:
        """Read the arguments; ConfigError on a value that is not a boolean."""
        return cls(strict=args.get_bool("strict", True), preferred_order=args.get_bool("enablePreferredOrder", False))


class _Limits:
    """A queue's per-group resource limits and what it holds in each group."""

    __slots__ = ("allocated", "error", "limits")

    def __init__(self, queue: QueueInfo) -> None:
        self.limits: dict[str, tuple[Resource, frozenset[str]]] = {}
        self.allocated: dict[str, Resource] = {}
        self.error = ""
        raw = queue.annotations.get(RESOURCE_LIMITS, "")
        if not raw:
            return
        try:
            groups = json.loads(raw)
            if not isinstance(groups, Mapping):
                raise ValueError("expected a map of node group -> resource list")
            for group, resources in groups.items():
                if not isinstance(resources, Mapping):
                    raise ValueError(f"{group}: expected a resource list")
                self.limits[str(group)] = (Resource.from_list(resources), frozenset(map(str, resources)))
        except ValueError as exc:
            self.limits = {}
            self.error = str(exc)

    def exceeded(self, group: str, task: TaskInfo) -> list[str]:
        """The limited resources that the group's allocation plus the task would exceed (beyond the tolerance)."""
        limit = self.limits.get(group)
        if limit is None:
            return []
        resource, names = limit
        used = self.allocated.get(group, Resource()).clone().add(task.resreq)
        return [name for name in sorted(names) if used.get(name) - resource.get(name) >= MIN_RESOURCE]


class NodeGroupPlugin:
    """Predicate and node score by the queue's node-group affinity."""

    name = NAME

    def __init__(self, args: NodeGroupArgs) -> None:
        self.args = args
        self.affinity: dict[QueueID, NodeGroupAffinity | None] = {}
        self.limits: dict[QueueID, _Limits] = {}
        self.job_queue: dict[JobID, QueueID] = {}
        self.nodes: Mapping[str, NodeInfo] = {}

    def on_session_open(self, ssn: Session) -> None:
        """Resolve each queue's affinity and limits, count what queues hold per group, register the functions."""
        self.nodes = ssn.nodes
        if ssn.hierarchy_enabled(NAME):
            self.affinity = _affinities(ssn)
        else:
            self.affinity = {uid: queue.affinity for uid, queue in ssn.queues.items()}
        self.limits = {uid: _Limits(queue) for uid, queue in ssn.queues.items()}
        for uid, limits in self.limits.items():
            if limits.error:
                ssn.warn(f"Queue {uid}: field metadata.annotations[{RESOURCE_LIMITS}]: {limits.error}")
        self.job_queue = {job.uid: job.queue for job in ssn.jobs.values()}
        for job in ssn.jobs.values():
            for task in job.tasks.values():
                if is_allocated_status(task.status):
                    self._account(task, 1.0)
        ssn.add_predicate_fn(NAME, self.predicate)
        ssn.add_node_order_fn(NAME, self.score)
        ssn.add_event_handler(EventHandler(allocate=self._allocated, deallocate=self._deallocated))

    def on_session_close(self, ssn: Session) -> None:
        """Drop the session state."""
        self.affinity, self.limits, self.job_queue, self.nodes = {}, {}, {}, {}

    def _account(self, task: TaskInfo, sign: float) -> None:
        queue = self.job_queue.get(task.job) if task.job is not None else None
        node = self.nodes.get(task.node_name)
        limits = self.limits.get(queue) if queue is not None else None
        group = node.labels.get(GROUP_LABEL) if node is not None else None
        if limits is None or group is None:
            return
        allocated = limits.allocated.setdefault(group, Resource())
        if sign > 0:
            allocated.add(task.resreq)
        else:
            allocated.sub_without_assert(task.resreq)

    def _allocated(self, task: TaskInfo) -> None:
        self._account(task, 1.0)

    def _deallocated(self, task: TaskInfo) -> None:
        self._account(task, -1.0)

    def predicate(self, task: TaskInfo, node: NodeInfo) -> PredicateStatus | None:
        """Volcano's rules 1-5 above; every refusal is unresolvable by eviction."""
        queue = self.job_queue.get(task.job) if task.job is not None else None
        if queue is None:
            return PredicateStatus(f"job {task.job} not found in session")
        limits = self.limits.get(queue)
        if limits is not None and limits.error:
            return PredicateStatus(LIMIT_INVALID)
        affinity = self.affinity.get(queue)
        unset = affinity is None or not (
            affinity.required or affinity.preferred or affinity.anti_required or affinity.anti_preferred
        )
        group = node.labels.get(GROUP_LABEL)
        if group is None:
            return None if not self.args.strict and unset else PredicateStatus(LABEL_NOT_FOUND)
        if unset or affinity is None:
            return PredicateStatus(AFFINITY_NOT_FOUND)
        if not _allows(affinity, group):
            return PredicateStatus(UNSATISFIED)
        if limits is not None and limits.exceeded(group, task):
            return PredicateStatus(LIMIT_EXCEEDED)
        return None

    def score(self, task: TaskInfo, node: NodeInfo) -> float:
        """Volcano's node-group score of the node for the task's queue (0 without a group label or affinity)."""
        group = node.labels.get(GROUP_LABEL)
        queue = self.job_queue.get(task.job) if task.job is not None else None
        affinity = self.affinity.get(queue) if queue is not None else None
        if group is None or affinity is None:
            return 0.0
        score = BASE_SCORE if group in affinity.required else 0.0
        if self.args.preferred_order:
            if group in affinity.preferred:
                count = len(set(affinity.preferred))
                score += 0.5 * BASE_SCORE * (count - _preferred_index(affinity.preferred, group)) / count
        elif group in affinity.preferred:
            score += 0.5 * BASE_SCORE
        return -1.0 if group in affinity.anti_preferred else score


def _preferred_index(groups: tuple[str, ...], group: str) -> int:
    """The group's position among the preferred ones; Volcano keeps the last of a group written twice."""
    return len(groups) - 1 - groups[::-1].index(group)


def _allows(affinity: NodeGroupAffinity, group: str) -> bool:
    """Required or preferred, not anti-required; anti-preferred lets the group in whatever else says."""
    if group in affinity.anti_preferred:
        return True
    return (group in affinity.required or group in affinity.preferred) and group not in affinity.anti_required


def _affinities(ssn: Session) -> dict[QueueID, NodeGroupAffinity | None]:
    """Each queue's own affinity, else its nearest ancestor's (`spec.parent`, else root); a cycle stops the walk."""
    resolved: dict[QueueID, NodeGroupAffinity | None] = {}
    for uid, queue in ssn.queues.items():
        affinity, seen, current = queue.affinity, {uid}, queue
        while affinity is None and current.name != ROOT_QUEUE:
            parent = ssn.queues.get(QueueID(current.parent or ROOT_QUEUE))
            if parent is None or parent.uid in seen:
                break
            seen.add(parent.uid)
            affinity, current = parent.affinity, parent
        resolved[uid] = affinity
    return resolved


def new(args: NodeGroupArgs) -> NodeGroupPlugin:
    """Build the plugin."""
    return NodeGroupPlugin(args)
