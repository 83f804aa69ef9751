"""The static node filters: readiness, spec.unschedulable, node selector and required node affinity,
taints and tolerations. They depend only on node specs and the pod's shape, so `StaticFilters` computes
them once per distinct shape (node selector + required node affinity + tolerations) over all nodes.

Reasons and verdicts follow Kubernetes' NodeUnschedulable, NodeAffinity and TaintToleration filters;
all are UnschedulableAndUnresolvable, so evicting pods never helps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from py_volcano.api import MaskArray, NodeInfo, TaskInfo, Toleration, match_node_selector_term
from py_volcano.plugins.predicates.args import PredicatesArgs
from py_volcano.plugins.predicates.labels import NodeLabelIndex

__all__ = [
    "NODE_AFFINITY",
    "NODE_NOT_READY",
    "NODE_UNSCHEDULABLE",
    "StaticFilters",
    "node_filter_failure",
    "required_node_affinity",
    "untolerated_taint_reason",
]

NODE_NOT_READY = "node(s) were not ready"
NODE_UNSCHEDULABLE = "node(s) were unschedulable"
NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
UNSCHEDULABLE_TAINT_KEY = "node.kubernetes.io/unschedulable"
_DO_NOT_SCHEDULE = frozenset({"NoSchedule", "NoExecute"})
_NAME_FIELD = "metadata.name"

TaintKey = tuple[str, str, str]
ShapeKey = tuple[object, ...]


def required_node_affinity(task: TaskInfo) -> Mapping[str, Any] | None:
    """Return the pod's requiredDuringSchedulingIgnoredDuringExecution node selector, or None."""
    node_affinity = task.affinity.get("nodeAffinity") or {}
    required: Mapping[str, Any] | None = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    return required


def tolerates_unschedulable(tolerations: Sequence[Toleration]) -> bool:
    """True when the pod tolerates node.kubernetes.io/unschedulable:NoSchedule, and so a cordoned node."""
    return any(t.tolerates(UNSCHEDULABLE_TAINT_KEY, "", "NoSchedule") for t in tolerations)


def _matches_node_affinity(task: TaskInfo, node: NodeInfo) -> bool:
    labels = node.labels
    if any(labels.get(key) != value for key, value in task.node_selector.items()):
        return False
    required = required_node_affinity(task)
    if required is None:
        return True
    fields = {_NAME_FIELD: node.name}
    return any(match_node_selector_term(term, labels, fields) for term in required.get("nodeSelectorTerms") or ())


def untolerated_taint_reason(tolerations: Sequence[Toleration], node: NodeInfo) -> str | None:
    """Return the reason naming the first NoSchedule/NoExecute taint no toleration tolerates, or None."""
    for taint in node.taints:
        if taint.effect not in _DO_NOT_SCHEDULE:
            continue
        if not any(t.tolerates(taint.key, taint.value, taint.effect) for t in tolerations):
            return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"
    return None


def node_filter_failure(task: TaskInfo, node: NodeInfo, switches: PredicatesArgs) -> str | None:
    """Return the first static filter the node fails for the task (Volcano's order), or None."""
    if not node.ready:
        return NODE_NOT_READY
    if node.unschedulable and not tolerates_unschedulable(task.tolerations):
        return NODE_UNSCHEDULABLE
    if switches.node_affinity and not _matches_node_affinity(task, node):
        return NODE_AFFINITY
    if switches.taint_toleration:
        return untolerated_taint_reason(task.tolerations, node)
    return None


def _freeze(value: object) -> object:
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _freeze(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    return value


class StaticFilters:
    """The static verdict of every node, per pod shape; masks are cached and read-only."""

    __slots__ = ("_by_shape", "_by_task", "base", "fields", "labels", "switches", "taints", "unschedulable")

    def __init__(self, nodes: Sequence[NodeInfo], switches: PredicatesArgs) -> None:
        self.switches = switches
        self.labels = NodeLabelIndex([node.labels for node in nodes])
        self.fields = NodeLabelIndex([{_NAME_FIELD: node.name} for node in nodes])
        self.base: MaskArray = np.fromiter((node.ready for node in nodes), dtype=bool, count=len(nodes))
        self.unschedulable: MaskArray = np.fromiter((node.unschedulable for node in nodes), bool, len(nodes))
        self.taints: dict[TaintKey, MaskArray] = {}
        for row, node in enumerate(nodes):
            for taint in node.taints:
                if taint.effect in _DO_NOT_SCHEDULE:
                    key = (taint.key, taint.value, taint.effect)
                    self.taints.setdefault(key, np.zeros(len(nodes), dtype=bool))[row] = True
        self._by_shape: dict[ShapeKey, MaskArray] = {}
        self._by_task: dict[str, MaskArray] = {}

    def forget_tasks(self) -> StaticFilters:
        """Drop the masks cached per task (a pod may gain tolerations) and return self, for the next
        session that takes these filters: the masks cached per shape follow from the node specs alone."""
        self._by_task = {}
        return self

    def mask(self, task: TaskInfo) -> MaskArray:
        """Return, per node, whether the task passes every static filter (cached per task and per shape)."""
        cached = self._by_task.get(task.uid)
        if cached is None:
            shape = self.key(task)
            cached = self._by_shape.get(shape)
            if cached is None:
                cached = self._by_shape[shape] = self._compute(task)
            self._by_task[task.uid] = cached
        return cached

    def key(self, task: TaskInfo) -> ShapeKey:
        """The key of the task's static mask: tasks of one key pass the same nodes."""
        return (
            _freeze(task.node_selector) if self.switches.node_affinity else (),
            _freeze(required_node_affinity(task)) if self.switches.node_affinity else (),
            task.tolerations,
        )

    def node_affinity(self, task: TaskInfo) -> MaskArray:
        """Per node: it matches the pod's node selector and required node affinity (Kubernetes'
        RequiredNodeAffinity), whatever the switches; cached per shape, read-only."""
        required = required_node_affinity(task)
        shape = ("affinity", _freeze(task.node_selector), _freeze(required))
        cached = self._by_shape.get(shape)
        if cached is None:
            cached = np.ones(self.labels.size, dtype=bool)
            for key, value in task.node_selector.items():
                cached &= self.labels.equals(key, value)
            if required is not None:
                cached &= self._any_term(required.get("nodeSelectorTerms") or ())
            cached.flags.writeable = False
            self._by_shape[shape] = cached
        return cached

    def tolerated(self, task: TaskInfo) -> MaskArray:
        """Per node: the pod tolerates every NoSchedule and NoExecute taint; cached per shape, read-only."""
        shape = ("taints", task.tolerations)
        cached = self._by_shape.get(shape)
        if cached is None:
            cached = np.ones(self.labels.size, dtype=bool)
            for (key, value, effect), nodes in self.taints.items():
                if not any(t.tolerates(key, value, effect) for t in task.tolerations):
                    cached &= ~nodes
            cached.flags.writeable = False
            self._by_shape[shape] = cached
        return cached

    def _compute(self, task: TaskInfo) -> MaskArray:
        mask = self.base.copy()
        if not tolerates_unschedulable(task.tolerations):
            mask &= ~self.unschedulable
        if self.switches.node_affinity:
            for key, value in task.node_selector.items():
                mask &= self.labels.equals(key, value)
            required = required_node_affinity(task)
            if required is not None:
                mask &= self._any_term(required.get("nodeSelectorTerms") or ())
        if self.switches.taint_toleration:
            for (key, value, effect), nodes in self.taints.items():
                if not any(t.tolerates(key, value, effect) for t in task.tolerations):
                    mask &= ~nodes
        mask.flags.writeable = False
        return mask

    def _any_term(self, terms: Sequence[Mapping[str, Any]]) -> MaskArray:
        """OR of node selector terms; a term ANDs its label expressions and its field expressions."""
        result = np.zeros(self.labels.size, dtype=bool)
        for term in terms:
            expressions = term.get("matchExpressions") or ()
            fields = term.get("matchFields") or ()
            if not expressions and not fields:
                continue
            result |= self.labels.all_of(expressions) & self.fields.all_of(fields)
        return result
