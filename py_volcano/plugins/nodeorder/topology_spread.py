"""Pod topology spread as a score: Kubernetes' PodTopologySpread for `whenUnsatisfiable: ScheduleAnyway`.

For a task with soft constraints, over the candidate nodes (the PreScore's filtered nodes): a candidate
lacking any soft constraint's key is ignored (scores 0). Each constraint weighs its domains by
log(size + 2), size being the number of candidate domains of its key (of candidates, for
`kubernetes.io/hostname`). A candidate's raw score sums, per constraint, the pods the constraint counts
in its domain times that weight, plus maxSkew - 1; the pods of a domain are counted over every node
carrying all soft keys and passing the constraint's node-affinity and taint policies, except for
`kubernetes.io/hostname`, counted on the candidate itself. Raw scores are rounded, then normalised so
that the fewest pods score 100: `100 * (max + min - raw) // max` (100 for all when max is 0).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from py_volcano.api import HOSTNAME_LABEL, NodeInfo, TaskInfo, TopologySpreadConstraint, match_node_selector_term
from py_volcano.framework import IndexArray
from py_volcano.plugins.nodeorder.pod_affinity import InterPodAffinity, PodGroupOfLabels
from py_volcano.plugins.nodeorder.resources import MAX_NODE_SCORE, FloatArray, IntArray

__all__ = ["SpreadScores"]

_DO_NOT_SCHEDULE = frozenset({"NoSchedule", "NoExecute"})

MaskArray = np.ndarray[Any, np.dtype[np.bool_]]


def _matches_required_affinity(task: TaskInfo, node: NodeInfo) -> bool:
    """Kubernetes' RequiredNodeAffinity: the node selector and the required node affinity terms."""
    if any(node.labels.get(key) != value for key, value in task.node_selector.items()):
        return False
    node_affinity = task.affinity.get("nodeAffinity") or {}
    required: Mapping[str, Any] | None = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return True
    fields = {"metadata.name": node.name}
    return any(match_node_selector_term(term, node.labels, fields) for term in required.get("nodeSelectorTerms") or ())


def _tolerates(task: TaskInfo, node: NodeInfo) -> bool:
    return all(
        any(t.tolerates(taint.key, taint.value, taint.effect) for t in task.tolerations)
        for taint in node.taints
        if taint.effect in _DO_NOT_SCHEDULE
    )


class SpreadScores:
    """The topology spread score of a task on candidate rows, over the nodeorder plugin's placed pods."""

    __slots__ = ("_affinity", "_tolerated", "nodes", "pods")

    def __init__(self, nodes: Sequence[NodeInfo], pods: InterPodAffinity) -> None:
        self.nodes = nodes
        self.pods = pods
        self._affinity: dict[object, MaskArray] = {}
        self._tolerated: dict[object, MaskArray] = {}

    def _policy_mask(self, task: TaskInfo, constraint: TopologySpreadConstraint) -> MaskArray:
        """Per node: it passes the constraint's node inclusion policies (cached per pod shape)."""
        mask: MaskArray = np.ones(len(self.nodes), dtype=bool)
        if constraint.honor_node_affinity:
            key = (repr(sorted(task.node_selector.items())), repr(task.affinity.get("nodeAffinity")))
            cached = self._affinity.get(key)
            if cached is None:
                cached = self._affinity[key] = np.fromiter(
                    (_matches_required_affinity(task, node) for node in self.nodes), dtype=bool, count=len(self.nodes)
                )
            mask &= cached
        if constraint.honor_node_taints:
            cached = self._tolerated.get(task.tolerations)
            if cached is None:
                cached = self._tolerated[task.tolerations] = np.fromiter(
                    (_tolerates(task, node) for node in self.nodes), dtype=bool, count=len(self.nodes)
                )
            mask &= cached
        return mask

    def _counted_groups(self, task: TaskInfo, constraint: TopologySpreadConstraint) -> list[PodGroupOfLabels]:
        if not constraint.counts_pods:
            return []
        return [
            group
            for group in self.pods.groups.get(task.namespace, {}).values()
            if not group.terminating and constraint.matches(group.labels)
        ]

    def _pods_per_node(self, groups: list[PodGroupOfLabels]) -> FloatArray:
        counts: FloatArray = np.zeros(len(self.nodes))
        for group in groups:
            rows = np.fromiter(group.rows.keys(), dtype=np.intp, count=len(group.rows))
            counts[rows] += np.fromiter(group.rows.values(), dtype=np.float64, count=len(group.rows))
        return counts

    def _pods_per_domain(self, groups: list[PodGroupOfLabels], key: str, size: int) -> FloatArray:
        """The groups' per-domain counts of `key`, kept as pods come and go (last slot: nodes without it)."""
        counts: FloatArray = np.zeros(size)
        for group in groups:
            counts += self.pods.group_counts(group, key)
        return counts

    def _in_domain(
        self, task: TaskInfo, constraint: TopologySpreadConstraint, has_keys: MaskArray, rows: IndexArray
    ) -> FloatArray:
        """Per candidate row: the pods the constraint counts in its domain (on the node itself for the
        hostname key), over the eligible nodes."""
        codes, values = self.pods.domains.codes(constraint.topology_key)
        groups = self._counted_groups(task, constraint)
        unique_hosts = constraint.topology_key == HOSTNAME_LABEL and len(values) == int(np.count_nonzero(codes >= 0))
        if constraint.topology_key == HOSTNAME_LABEL and not unique_hosts:
            result: FloatArray = self._pods_per_node(groups)[rows]
            return result
        eligible = has_keys & self._policy_mask(task, constraint)
        if unique_hosts or np.array_equal(eligible, codes >= 0):
            domain_pods = self._pods_per_domain(groups, constraint.topology_key, len(values) + 1)
        else:
            pods = self._pods_per_node(groups)
            weighted = np.bincount(codes[eligible], weights=pods[eligible], minlength=len(values) + 1)
            domain_pods = weighted.astype(np.float64)
        result = domain_pods[np.where(codes[rows] >= 0, codes[rows], len(values))]
        return result

    def score(self, task: TaskInfo, rows: IndexArray) -> IntArray | None:
        """Return the normalised score (0..100) of each candidate row; None when the task has no soft
        constraint (Kubernetes skips the plugin)."""
        soft = [c for c in task.topology_spread if not c.hard]
        if not soft:
            return None
        domains = self.pods.domains
        has_keys: MaskArray = np.ones(len(self.nodes), dtype=bool)
        for constraint in soft:
            has_keys &= domains.codes(constraint.topology_key)[0] >= 0
        counted = has_keys[rows]
        raw: FloatArray = np.zeros(len(rows))
        for constraint in soft:
            if constraint.topology_key == HOSTNAME_LABEL:
                size = int(np.count_nonzero(counted))
            else:
                size = len(np.unique(domains.codes(constraint.topology_key)[0][rows[counted]]))
            in_domain = self._in_domain(task, constraint, has_keys, rows)
            raw += in_domain * math.log(size + 2) + (constraint.max_skew - 1)
        rounded = np.floor(raw + 0.5).astype(np.int64)  # Go's math.Round; raw scores are never negative
        if not counted.any():
            return np.zeros(len(rows), dtype=np.int64)
        low, high = int(rounded[counted].min()), int(rounded[counted].max())
        if high == 0:
            scores = np.full(len(rows), MAX_NODE_SCORE, dtype=np.int64)
        else:
            scores = MAX_NODE_SCORE * (high + low - rounded) // high
        result: IntArray = np.where(counted, scores, 0)
        return result
