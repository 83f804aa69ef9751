"""Pod topology spread as a filter: Kubernetes' PodTopologySpread for `whenUnsatisfiable: DoNotSchedule`.

`SpreadVerdict.build` is the PreFilter and Filter at once, over every node: for each hard constraint,
the pods counted are the placed pods of the task's namespace that the constraint's selector matches
(terminating pods aside), on the *eligible* nodes: those carrying every hard constraint's topology key
and, per the constraint's policies, matching the pod's required node affinity (`Honor`, the default)
and tolerating its NoSchedule/NoExecute taints (`Ignore` by default). Each domain (a value of the key
on an eligible node) sums its nodes' pods; the global minimum is the smallest domain's count, or 0
while there are fewer domains than `minDomains`. A node then fails, constraints taken in order, when it
lacks the key (UnschedulableAndUnresolvable) or when its domain's count, plus 1 if the pod matches its
own selector, minus the global minimum exceeds `maxSkew` (Unschedulable: evicting pods can fix it).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from py_volcano.api import MaskArray, TaskInfo, TopologySpreadConstraint
from py_volcano.plugins.predicates.labels import NodeLabelIndex
from py_volcano.plugins.predicates.node_filters import StaticFilters, required_node_affinity
from py_volcano.plugins.predicates.placed import LabelGroup, PlacedPods

__all__ = ["SPREAD_MISSING_LABEL", "SPREAD_NOT_MATCHED", "SpreadVerdict", "matching_pods_per_node"]

SPREAD_NOT_MATCHED = "node(s) didn't match pod topology spread constraints"
SPREAD_MISSING_LABEL = SPREAD_NOT_MATCHED + " (missing required label)"

_PASS, _RESOLVABLE, _UNRESOLVABLE = 0, 1, 2

FloatArray = npt.NDArray[np.float64]
StatusArray = npt.NDArray[np.int8]


def _counted_groups(constraint: TopologySpreadConstraint, namespace: str, placed: PlacedPods) -> list[LabelGroup]:
    """The label groups of `namespace` whose pods the constraint counts (none for an empty selector)."""
    if not constraint.counts_pods:
        return []
    return [
        group
        for group in placed.groups.get(namespace, {}).values()
        if not group.terminating and constraint.matches(group.labels)
    ]


def matching_pods_per_node(constraint: TopologySpreadConstraint, namespace: str, placed: PlacedPods) -> FloatArray:
    """Per node row, the placed pods of `namespace` the constraint counts."""
    counts: FloatArray = np.zeros(placed.index.size)
    for group in _counted_groups(constraint, namespace, placed):
        rows = np.fromiter(group.rows.keys(), dtype=np.intp, count=len(group.rows))
        counts[rows] += np.fromiter(group.rows.values(), dtype=np.float64, count=len(group.rows))
    return counts


def _domain_pods(
    constraint: TopologySpreadConstraint, namespace: str, placed: PlacedPods, eligible: MaskArray | None, size: int
) -> tuple[FloatArray, MaskArray]:
    """Per value code of the constraint's key (last slot: no key), the counted pods on eligible nodes, and
    which codes are domains (hold an eligible node). `eligible` None: every node with the key."""
    if eligible is None:
        # The groups' per-domain counts, kept as pods come and go, are the answer; every value is a domain.
        domain_pods: FloatArray = np.zeros(size)
        for group in _counted_groups(constraint, namespace, placed):
            domain_pods += group.by_key(constraint.topology_key)
        domain_pods[-1] = 0
        present: MaskArray = np.ones(size, dtype=bool)
        present[-1] = False
        return domain_pods, present
    in_domain = placed.index.codes(constraint.topology_key)[0][eligible]
    pods = matching_pods_per_node(constraint, namespace, placed)
    weighted = np.bincount(in_domain, weights=pods[eligible], minlength=size).astype(np.float64)
    return weighted, np.bincount(in_domain, minlength=size) > 0


def _eligible(
    task: TaskInfo, constraint: TopologySpreadConstraint, static: StaticFilters, has_keys: MaskArray | None
) -> MaskArray | None:
    """The nodes whose pods count: every hard key present, and the constraint's policies; None when that
    is every node carrying the constraint's key."""
    eligible = has_keys
    if constraint.honor_node_affinity and (task.node_selector or required_node_affinity(task) is not None):
        affinity = static.node_affinity(task)
        eligible = affinity if eligible is None else eligible & affinity
    if constraint.honor_node_taints and static.taints:
        tolerated = static.tolerated(task)
        eligible = tolerated if eligible is None else eligible & tolerated
    if eligible is not None and has_keys is None:
        eligible = eligible & static.labels.has_key(constraint.topology_key)
    return eligible


class SpreadVerdict:
    """Each node's verdict for one task: pass, resolvable (skew) or unresolvable (missing key) failure."""

    __slots__ = ("status",)

    def __init__(self, status: StatusArray) -> None:
        self.status = status

    @classmethod
    def build(
        cls,
        task: TaskInfo,
        constraints: tuple[TopologySpreadConstraint, ...],
        placed: PlacedPods,
        static: StaticFilters,
    ) -> SpreadVerdict:
        """Count the domains of every hard constraint and judge every node.

        Each constraint's verdict is computed per domain (a few values) and spread to the nodes by one
        lookup; eligibility is a node mask only when a policy or a second key narrows it.
        """
        labels: NodeLabelIndex = static.labels
        keys = dict.fromkeys(c.topology_key for c in constraints)
        has_keys: MaskArray | None = None
        if len(keys) > 1:
            has_keys = np.ones(labels.size, dtype=bool)
            for key in keys:
                has_keys &= labels.has_key(key)
        status: StatusArray | None = None
        for constraint in constraints:
            codes, values = labels.codes(constraint.topology_key)
            size = len(values) + 1  # the last slot stands for nodes without the key (code -1)
            eligible = _eligible(task, constraint, static, has_keys)
            domain_pods, present = _domain_pods(constraint, task.namespace, placed, eligible, size)
            domains = int(np.count_nonzero(present))
            minimum = float(domain_pods[present].min()) if domains >= constraint.min_domains and domains else 0.0
            own = 1 if constraint.matches(task.labels) else 0
            by_domain = np.where(domain_pods + own - minimum > constraint.max_skew, _RESOLVABLE, _PASS).astype(np.int8)
            by_domain[-1] = _UNRESOLVABLE
            verdict: StatusArray = by_domain[codes]
            status = verdict if status is None else np.where(status == _PASS, verdict, status).astype(np.int8)
        assert status is not None, "built for tasks with at least one hard constraint"
        return cls(status)

    def mask(self, *, for_preempt: bool) -> MaskArray:
        """Per node: it passes; with `for_preempt`, failures eviction could fix do not count."""
        result: MaskArray = self.status != _UNRESOLVABLE if for_preempt else self.status == _PASS
        return result

    def failure(self, row: int) -> tuple[str, bool] | None:
        """Return (reason, resolvable) for node row `row`, or None when it passes."""
        code = int(self.status[row])
        if code == _PASS:
            return None
        return (SPREAD_NOT_MATCHED, True) if code == _RESOLVABLE else (SPREAD_MISSING_LABEL, False)
