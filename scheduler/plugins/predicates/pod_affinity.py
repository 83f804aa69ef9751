"""Inter-pod affinity and anti-affinity, Kubernetes' InterPodAffinity filter over `PlacedPods`.

`AffinityCounts.build` is the PreFilter: topology pairs counted from the pods in place. A node then
fails (in this order) when it misses a pair matched by the pod's required affinity terms (unless the
pod is the first of a self-affine series), when it holds a pair the pod's required anti-affinity
matched, or when it holds a pair some placed pod's required anti-affinity term reserves against the pod.
Only the first is UnschedulableAndUnresolvable; evicting pods can fix the other two.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from scheduler.api import MaskArray, PodAffinityTerm, TaskInfo
from scheduler.plugins.predicates.labels import NodeLabelIndex
from scheduler.plugins.predicates.placed import PlacedPods

__all__ = ["AFFINITY_RULES", "ANTI_AFFINITY_RULES", "EXISTING_ANTI_AFFINITY_RULES", "AffinityCounts"]

AFFINITY_RULES = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_RULES = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY_RULES = "node(s) didn't satisfy existing pods anti-affinity rules"

Pair = tuple[str, str]


def _add(counts: dict[Pair, int], labels: Mapping[str, str], key: str) -> None:
    value = labels.get(key)
    if value is not None:
        counts[(key, value)] = counts.get((key, value), 0) + 1


def _namespaces(terms: Sequence[PodAffinityTerm], known: Iterable[str]) -> set[str]:
    """The namespaces holding pods any of `terms` could select."""
    names: set[str] = set()
    for term in terms:
        names |= term.namespaces
        if term.namespace_selector is not None:
            names.update(ns for ns in known if term.matches_namespace(ns))
    return names


class AffinityCounts:
    """The pod's required terms and the topology pairs counted for them (Kubernetes' preFilterState)."""

    __slots__ = ("affinity", "affinity_terms", "anti_affinity", "anti_terms", "existing_anti", "self_match")

    def __init__(
        self, affinity_terms: tuple[PodAffinityTerm, ...], anti_terms: tuple[PodAffinityTerm, ...]
    ) -> None:
        self.affinity_terms = affinity_terms
        self.anti_terms = anti_terms
        self.affinity: dict[Pair, int] = {}
        self.anti_affinity: dict[Pair, int] = {}
        self.existing_anti: dict[Pair, int] = {}
        self.self_match = False

    @classmethod
    def build(
        cls, task: TaskInfo, placed: PlacedPods, node_labels: Sequence[Mapping[str, str]]
    ) -> AffinityCounts:
        """Count, over the placed pods, the pairs each check needs for `task`."""
        affinity_terms, anti_terms = placed.terms.required(task)
        counts = cls(affinity_terms, anti_terms)
        for row, terms in placed.anti_affinity.values():
            for term in terms:
                if term.matches(task.labels, task.namespace):
                    _add(counts.existing_anti, node_labels[row], term.topology_key)
        if affinity_terms or anti_terms:
            for namespace in _namespaces(affinity_terms + anti_terms, placed.by_namespace):
                for row, pod in placed.by_namespace.get(namespace, {}).values():
                    counts._count(pod, node_labels[row])
            counts.self_match = bool(affinity_terms) and all(
                term.matches(task.labels, task.namespace) for term in affinity_terms
            )
        return counts

    def _count(self, pod: TaskInfo, labels: Mapping[str, str]) -> None:
        if self.affinity_terms and all(
            term.matches(pod.labels, pod.namespace) for term in self.affinity_terms
        ):
            for term in self.affinity_terms:
                _add(self.affinity, labels, term.topology_key)
        for term in self.anti_terms:
            if term.matches(pod.labels, pod.namespace):
                _add(self.anti_affinity, labels, term.topology_key)

    @property
    def is_empty(self) -> bool:
        """True when no check can fail (Kubernetes skips the filter)."""
        return not (self.affinity_terms or self.anti_terms or self.existing_anti)

    def failure(self, labels: Mapping[str, str]) -> tuple[str, bool] | None:
        """Return (reason, resolvable) for a node with `labels`, or None when it passes."""
        if self.affinity_terms and not self._affinity_ok(labels):
            return AFFINITY_RULES, False
        for term in self.anti_terms:
            value = labels.get(term.topology_key)
            if value is not None and self.anti_affinity.get((term.topology_key, value), 0) > 0:
                return ANTI_AFFINITY_RULES, True
        if self.existing_anti and any(self.existing_anti.get(pair, 0) > 0 for pair in labels.items()):
            return EXISTING_ANTI_AFFINITY_RULES, True
        return None

    def _affinity_ok(self, labels: Mapping[str, str]) -> bool:
        pods_exist = True
        for term in self.affinity_terms:
            value = labels.get(term.topology_key)
            if value is None:
                return False
            if self.affinity.get((term.topology_key, value), 0) <= 0:
                pods_exist = False
        return pods_exist or (not self.affinity and self.self_match)

    def mask(self, index: NodeLabelIndex, *, for_preempt: bool) -> MaskArray:
        """Return, per node, whether it passes; with `for_preempt` only the unresolvable affinity check."""
        mask = np.ones(index.size, dtype=bool)
        if self.affinity_terms:
            exist = np.ones(index.size, dtype=bool)
            for term in self.affinity_terms:
                key = term.topology_key
                mask &= index.has_key(key)
                exist &= index.among(key, [v for (k, v), n in self.affinity.items() if k == key and n > 0])
            if self.affinity or not self.self_match:
                mask &= exist
        if for_preempt:
            return mask
        for term in self.anti_terms:
            key = term.topology_key
            mask &= ~index.among(key, [v for (k, v), n in self.anti_affinity.items() if k == key and n > 0])
        for (key, value), n in self.existing_anti.items():
            if n > 0:
                mask &= ~index.equals(key, value)
        return mask
