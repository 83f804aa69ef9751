"""Inter-pod affinity and anti-affinity, Kubernetes' InterPodAffinity filter over `PlacedPods`.

`AffinityCounts.build` is the PreFilter: per topology key, how many placed pods each check counts in
each domain (arrays over the key's value codes). A node then fails (in this order) when it misses a
domain holding pods that match all the pod's required affinity terms (unless the pod is the first of
a self-affine series), when it is in a domain holding pods the pod's required anti-affinity selects,
or when it is in a domain some placed pod's required anti-affinity term reserves against the pod.
Only the first is UnschedulableAndUnresolvable; evicting pods can fix the other two.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from py_volcano.api import MaskArray, PodAffinityTerm, TaskInfo
from py_volcano.plugins.predicates.labels import IntArray, NodeLabelIndex
from py_volcano.plugins.predicates.placed import LabelGroup, PlacedPods

__all__ = ["AFFINITY_RULES", "ANTI_AFFINITY_RULES", "EXISTING_ANTI_AFFINITY_RULES", "AffinityCounts"]

AFFINITY_RULES = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_RULES = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY_RULES = "node(s) didn't satisfy existing pods anti-affinity rules"


def _add(counts: dict[str, IntArray], key: str, more: IntArray) -> None:
    current = counts.get(key)
    counts[key] = more.copy() if current is None else current + more


def _groups_in_scope(terms: Sequence[PodAffinityTerm], placed: PlacedPods) -> Iterable[LabelGroup]:
    """The label groups in namespaces any of `terms` could select."""
    names: set[str] = set()
    for term in terms:
        names |= term.namespaces
        if term.namespace_selector is not None:
            names.update(ns for ns in placed.groups if term.matches_namespace(ns))
    for name in names:
        yield from placed.groups.get(name, {}).values()


class AffinityCounts:
    """The pod's required terms and, per topology key, pods counted per domain (preFilterState).

    Every array's last slot (nodes without the key) is zeroed: such pods count nowhere.
    """

    __slots__ = (
        "affinity",
        "affinity_terms",
        "anti_affinity",
        "anti_terms",
        "existing_anti",
        "index",
        "matched_affinity",
        "self_match",
    )

    def __init__(
        self,
        index: NodeLabelIndex,
        affinity_terms: tuple[PodAffinityTerm, ...],
        anti_terms: tuple[PodAffinityTerm, ...],
    ) -> None:
        self.index = index
        self.affinity_terms = affinity_terms
        self.anti_terms = anti_terms
        self.affinity: dict[str, IntArray] = {}
        self.anti_affinity: dict[str, IntArray] = {}
        self.existing_anti: dict[str, IntArray] = {}
        self.matched_affinity = False
        self.self_match = False

    @classmethod
    def build(cls, task: TaskInfo, placed: PlacedPods) -> AffinityCounts:
        """Count, over the placed pods, what each check needs for `task`."""
        affinity_terms, anti_terms = placed.terms.required(task)
        counts = cls(placed.index, affinity_terms, anti_terms)
        for entry in placed.anti_affinity.values():
            if entry.term.matches(task.labels, task.namespace):
                _add(counts.existing_anti, entry.term.topology_key, entry.counts)
        if affinity_terms or anti_terms:
            keys = {term.topology_key for term in affinity_terms}
            for group in _groups_in_scope(affinity_terms + anti_terms, placed):
                if affinity_terms and all(t.matches(group.labels, group.namespace) for t in affinity_terms):
                    for key in keys:
                        _add(counts.affinity, key, group.by_key(key))
                for term in anti_terms:
                    if term.matches(group.labels, group.namespace):
                        _add(counts.anti_affinity, term.topology_key, group.by_key(term.topology_key))
            counts.self_match = bool(affinity_terms) and all(
                term.matches(task.labels, task.namespace) for term in affinity_terms
            )
        for table in (counts.affinity, counts.anti_affinity, counts.existing_anti):
            for array in table.values():
                array[-1] = 0
        counts.matched_affinity = any(bool(array.any()) for array in counts.affinity.values())
        return counts

    def copy(self) -> AffinityCounts:
        """Return a copy whose count arrays can change independently."""
        copy = AffinityCounts(self.index, self.affinity_terms, self.anti_terms)
        copy.affinity = {key: counts.copy() for key, counts in self.affinity.items()}
        copy.anti_affinity = {key: counts.copy() for key, counts in self.anti_affinity.items()}
        copy.existing_anti = {key: counts.copy() for key, counts in self.existing_anti.items()}
        copy.matched_affinity = self.matched_affinity
        copy.self_match = self.self_match
        return copy

    def shift(self, table: dict[str, IntArray], key: str, row: int, delta: int) -> None:
        """Add `delta` pods to the `key` domain of node row `row` (a node without the key has none)."""
        codes, values = self.index.codes(key)
        code = codes[row]
        if code < 0:
            return
        if key not in table:
            table[key] = np.zeros(len(values) + 1, dtype=np.int64)
        table[key][code] += delta

    @property
    def is_empty(self) -> bool:
        """True when no check can fail (Kubernetes skips the filter)."""
        return not (self.affinity_terms or self.anti_terms or self.existing_anti)

    def failure(self, row: int) -> tuple[str, bool] | None:
        """Return (reason, resolvable) for node row `row`, or None when it passes."""
        if self.affinity_terms and not self._affinity_ok(row):
            return AFFINITY_RULES, False
        for key, counts in self.anti_affinity.items():
            if counts[self.index.codes(key)[0][row]] > 0:
                return ANTI_AFFINITY_RULES, True
        for key, counts in self.existing_anti.items():
            if counts[self.index.codes(key)[0][row]] > 0:
                return EXISTING_ANTI_AFFINITY_RULES, True
        return None

    def _affinity_ok(self, row: int) -> bool:
        pods_exist = True
        for term in self.affinity_terms:
            code = self.index.codes(term.topology_key)[0][row]
            if code < 0:
                return False
            counts = self.affinity.get(term.topology_key)
            if counts is None or counts[code] <= 0:
                pods_exist = False
        return pods_exist or (not self.matched_affinity and self.self_match)

    def mask(self, *, for_preempt: bool) -> MaskArray:
        """Return, per node, whether it passes; with `for_preempt` only the unresolvable affinity check."""
        mask = np.ones(self.index.size, dtype=bool)
        if self.affinity_terms:
            exist = self.matched_affinity or not self.self_match
            for term in self.affinity_terms:
                codes = self.index.codes(term.topology_key)[0]
                mask &= codes >= 0
                counts = self.affinity.get(term.topology_key)
                if exist and counts is None:
                    mask[:] = False
                elif exist and counts is not None:
                    mask &= counts[codes] > 0
        if for_preempt:
            return mask
        for table in (self.anti_affinity, self.existing_anti):
            for key, counts in table.items():
                mask &= counts[self.index.codes(key)[0]] == 0
        return mask
