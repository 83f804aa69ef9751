"""Kubernetes' InterPodAffinity score over the placed pods, kept by event handlers.

A node's raw score sums, over topology keys, the weights attached to its domain: the incoming pod's
preferred affinity (+weight) and anti-affinity (-weight) terms for each placed pod they select, and
the placed pods' required affinity (+1, hardPodAffinityWeight), preferred affinity (+weight) and
preferred anti-affinity (-weight) terms that select the incoming pod. Raw scores are then scaled
min-max to 0..100 over the candidates.

Placed pods are grouped by (namespace, labels, terminating), since a term selects all of a group or
none (topology spread skips terminating pods), and the placed pods' terms by identity; both keep their
pod counts per topology domain (arrays over a key's value codes), so a task costs O(groups + distinct
terms), not O(pods).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from py_volcano.api import NodeInfo, PodAffinityTerm, TaskID, TaskInfo, pod_affinity_terms
from py_volcano.framework import IndexArray, ReleasedTasks
from py_volcano.plugins.nodeorder.resources import MAX_NODE_SCORE, IntArray

__all__ = ["HARD_POD_AFFINITY_WEIGHT", "Domains", "InterPodAffinity", "PodGroupOfLabels", "PodTerms"]

HARD_POD_AFFINITY_WEIGHT = 1

GroupKey = tuple[str, frozenset[tuple[str, str]], bool]


def _freeze(value: object) -> object:
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _freeze(v)) for k, v in value.items()))
    if isinstance(value, list | tuple | frozenset | set):
        return tuple(sorted((_freeze(v) for v in value), key=repr))
    return value


class PodTerms:
    """A pod's affinity terms that take part in scoring, parsed once."""

    __slots__ = ("preferred_affinity", "preferred_anti", "required_affinity")

    def __init__(self, task: TaskInfo) -> None:
        affinity, namespace = task.affinity, task.namespace
        self.required_affinity = pod_affinity_terms(affinity, namespace, anti=False, preferred=False)
        self.preferred_affinity = pod_affinity_terms(affinity, namespace, anti=False, preferred=True)
        self.preferred_anti = pod_affinity_terms(affinity, namespace, anti=True, preferred=True)

    def weighted_existing(self) -> list[tuple[PodAffinityTerm, int]]:
        """The terms by which this pod, once placed, attracts (+) or repels (-) incoming pods."""
        return (
            [(t, HARD_POD_AFFINITY_WEIGHT) for t in self.required_affinity]
            + [(t, t.weight) for t in self.preferred_affinity]
            + [(t, -t.weight) for t in self.preferred_anti]
        )


class Domains:
    """Node label codes per topology key, built lazily."""

    __slots__ = ("_codes", "labels")

    def __init__(self, nodes: Sequence[NodeInfo]) -> None:
        self.labels = [node.labels for node in nodes]
        self._codes: dict[str, tuple[IntArray, dict[str, int]]] = {}

    def codes(self, key: str) -> tuple[IntArray, dict[str, int]]:
        cached = self._codes.get(key)
        if cached is None:
            known: dict[str, int] = {}
            codes = np.fromiter(
                (-1 if (v := labels.get(key)) is None else known.setdefault(v, len(known)) for labels in self.labels),
                dtype=np.int64,
                count=len(self.labels),
            )
            cached = self._codes[key] = (codes, known)
        return cached

    def zeros(self, key: str) -> IntArray:
        return np.zeros(len(self.codes(key)[1]) + 1, dtype=np.int64)


class PodGroupOfLabels:
    """Placed pods of one namespace and label set: pods per node row and per domain of the keys asked;
    `terminating` for pods being deleted when the session opened."""

    __slots__ = ("by_key", "labels", "namespace", "rows", "terminating")

    def __init__(self, namespace: str, labels: Mapping[str, str], *, terminating: bool) -> None:
        self.namespace = namespace
        self.labels = labels
        self.terminating = terminating
        self.rows: Counter[int] = Counter()
        self.by_key: dict[str, IntArray] = {}


class _Term:
    """One distinct weighted term of placed pods: how many pods hold it in each domain of its key."""

    __slots__ = ("counts", "pods", "term", "weight")

    def __init__(self, term: PodAffinityTerm, weight: int, counts: IntArray) -> None:
        self.term = term
        self.weight = weight
        self.counts = counts
        self.pods = 0


class InterPodAffinity:
    """The placed pods, grouped for scoring, and the score of an incoming task on candidate rows.

    The placed pods are grouped at first use (`groups`, `weighted`): a cycle whose tasks have no
    inter-pod terms or spread constraints, in a cluster whose placed pods have no weighted terms, never
    groups them (`ReleasedTasks`).
    """

    __slots__ = (
        "_built",
        "_groups",
        "_placed",
        "_released",
        "_terms",
        "_weighted",
        "_weighted_possible",
        "domains",
        "nodes",
        "rows",
    )

    def __init__(self, nodes: Sequence[NodeInfo], rows: Mapping[str, int] | None = None) -> None:
        """`rows`: each node's index in `nodes` by name, when the caller has it."""
        self.domains = Domains(nodes)
        self.nodes = nodes
        self.rows = rows if rows is not None else {node.name: row for row, node in enumerate(nodes)}
        self._placed: dict[TaskID, tuple[int, bool]] = {}
        self._groups: dict[str, dict[GroupKey, PodGroupOfLabels]] = {}
        self._weighted: dict[object, _Term] = {}
        self._terms: dict[TaskID, PodTerms] = {}
        self._built = False
        self._released = ReleasedTasks()
        #: Whether some placed pod may have terms that score incoming pods (then every task is scored).
        self._weighted_possible = any(
            task.affinity and self.terms(task).weighted_existing()
            for node in nodes
            if node.affine
            for task in node.tasks.values()
        )

    @property
    def groups(self) -> dict[str, dict[GroupKey, PodGroupOfLabels]]:
        """The placed pods by namespace, then by (namespace, labels, terminating)."""
        self._group_placed()
        return self._groups

    @property
    def weighted(self) -> dict[object, _Term]:
        """The placed pods' distinct weighted terms."""
        self._group_placed()
        return self._weighted

    def _group_placed(self) -> None:
        if self._built:
            return
        self._built = True
        for row, task, terminating in self._released.placed(self.nodes):
            self._place(task, row, 1, terminating=terminating)

    def terms(self, task: TaskInfo) -> PodTerms:
        """Return the task's parsed terms."""
        terms = self._terms.get(task.uid)
        if terms is None:
            terms = self._terms[task.uid] = PodTerms(task)
        return terms

    def allocated(self, task: TaskInfo) -> None:
        """Event handler: the task now sits on `task.node_name`."""
        self._released.allocated(task)
        if task.affinity and self.terms(task).weighted_existing():
            self._weighted_possible = True
        row = self.rows.get(task.node_name)
        if self._built and row is not None:
            self._remove(task)
            self._place(task, row, 1, terminating=False)

    def deallocated(self, task: TaskInfo) -> None:
        """Event handler: the task left its node."""
        self._released.deallocated(task)
        if self._built:
            self._remove(task)

    def _remove(self, task: TaskInfo) -> None:
        placed = self._placed.get(task.uid)
        if placed is not None:
            self._place(task, placed[0], -1, terminating=placed[1])

    def _place(self, task: TaskInfo, row: int, delta: int, *, terminating: bool) -> None:
        if delta > 0:
            self._placed[task.uid] = (row, terminating)
        else:
            del self._placed[task.uid]
        groups = self._groups.setdefault(task.namespace, {})
        key: GroupKey = (task.namespace, frozenset(task.labels.items()), terminating)
        group = groups.get(key)
        if group is None:
            group = groups[key] = PodGroupOfLabels(task.namespace, task.labels, terminating=terminating)
        group.rows[row] += delta
        for topology_key, counts in group.by_key.items():
            counts[self.domains.codes(topology_key)[0][row]] += delta
        if group.rows[row] <= 0:
            del group.rows[row]
            if not group.rows:
                del groups[key]
        if task.affinity:
            for term, weight in self.terms(task).weighted_existing():
                self._weigh(term, weight, row, delta)

    def _weigh(self, term: PodAffinityTerm, weight: int, row: int, delta: int) -> None:
        identity = (
            _freeze((term.selector, term.namespaces, term.namespace_selector, term.topology_key)),
            weight,
        )
        entry = self._weighted.get(identity)
        if entry is None:
            entry = self._weighted[identity] = _Term(term, weight, self.domains.zeros(term.topology_key))
        entry.counts[self.domains.codes(term.topology_key)[0][row]] += delta
        entry.pods += delta
        if entry.pods <= 0:
            del self._weighted[identity]

    def group_counts(self, group: PodGroupOfLabels, key: str) -> IntArray:
        """Return the group's pods per value code of `key` (last slot: nodes without it), kept up to date."""
        counts = group.by_key.get(key)
        if counts is None:
            counts = group.by_key[key] = self.domains.zeros(key)
            codes = self.domains.codes(key)[0]
            for row, pods in group.rows.items():
                counts[codes[row]] += pods
        return counts

    def may_score(self, task: TaskInfo) -> bool:
        """False when no term can score: the task has no preferred terms and no placed pod scores others."""
        if self._weighted_possible and self.weighted:
            return True
        own = self.terms(task) if task.affinity else None
        return own is not None and bool(own.preferred_affinity or own.preferred_anti)

    def topology_scores(self, task: TaskInfo) -> dict[str, IntArray]:
        """Return, per topology key, each domain's score (by value code) for `task` (Kubernetes' PreScore)."""
        scores: dict[str, IntArray] = {}

        def add(key: str, weighted: IntArray) -> None:
            scores[key] = weighted.copy() if key not in scores else scores[key] + weighted

        own = self.terms(task) if task.affinity else None
        if own is not None:
            incoming = [(t, t.weight) for t in own.preferred_affinity] + [(t, -t.weight) for t in own.preferred_anti]
            for group in self._groups_in_scope([t for t, _ in incoming]):
                for term, weight in incoming:
                    if term.matches(group.labels, group.namespace):
                        add(term.topology_key, weight * self.group_counts(group, term.topology_key))
        for entry in self.weighted.values():
            if entry.term.matches(task.labels, task.namespace):
                add(entry.term.topology_key, entry.weight * entry.counts)
        for counts in scores.values():
            counts[-1] = 0
        return scores

    def _groups_in_scope(self, terms: Sequence[PodAffinityTerm]) -> Iterable[PodGroupOfLabels]:
        names: set[str] = set()
        for term in terms:
            names |= term.namespaces
            if term.namespace_selector is not None:
                names.update(ns for ns in self.groups if term.matches_namespace(ns))
        for name in names:
            yield from self.groups.get(name, {}).values()

    def score(self, task: TaskInfo, rows: IndexArray) -> IntArray:
        """Return the normalised (min-max, 0..100) score of each candidate row."""
        raw = np.zeros(len(rows), dtype=np.int64)
        topology = self.topology_scores(task)
        if not topology:
            return raw
        for key, by_code in topology.items():
            raw += by_code[self.domains.codes(key)[0][rows]]
        low, high = int(raw.min()), int(raw.max())
        if high == low:
            return np.zeros(len(rows), dtype=np.int64)
        result: IntArray = (MAX_NODE_SCORE * ((raw - low) / (high - low))).astype(np.int64)
        return result
