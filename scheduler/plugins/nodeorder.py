"""nodeorder: Kubernetes' node scores as Volcano's nodeorder plugin weighs them, vectorised over candidates.

Scores are integers 0..100 as Kubernetes computes them, each multiplied by its weight argument:
`leastrequested.weight` (1), `mostrequested.weight` (0), `balancedresource.weight` (1),
`nodeaffinity.weight` (2), `tainttoleration.weight` (3), `podaffinity.weight` (2). Least/most
requested use the non-zero requests of the pods on the node (a pod asking no CPU counts 100m, no
memory 200Mi, per pod rather than per container here); balanced allocation uses the plain requests
(cpu, memory, and nvidia.com/gpu when the task asks for it). Preferred node affinity is normalised to
0..100 over the candidates as Kubernetes does (Volcano adds the raw weight sum). Image locality and
topology spread scores are not computed (no images, no default spread constraints for Volcano pods).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from scheduler.api import (
    MaskArray,
    NodeInfo,
    PodAffinityTerm,
    TaskID,
    TaskInfo,
    Toleration,
    match_node_selector_term,
    pod_affinity_terms,
)
from scheduler.framework import Arguments, EventHandler, IndexArray, Session

__all__ = ["NAME", "NodeOrderPlugin", "NodeOrderWeights", "new"]

NAME = "nodeorder"
MAX_NODE_SCORE = 100
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
GPU = "nvidia.com/gpu"
HARD_POD_AFFINITY_WEIGHT = 1

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


class NodeOrderWeights:
    """The weight of each score (Volcano's nodeorder arguments and defaults)."""

    __slots__ = (
        "balanced_resource",
        "least_requested",
        "most_requested",
        "node_affinity",
        "pod_affinity",
        "taint_toleration",
    )

    def __init__(self, args: Arguments) -> None:
        self.least_requested = args.get_int("leastrequested.weight", 1)
        self.most_requested = args.get_int("mostrequested.weight", 0)
        self.balanced_resource = args.get_int("balancedresource.weight", 1)
        self.node_affinity = args.get_int("nodeaffinity.weight", 2)
        self.taint_toleration = args.get_int("tainttoleration.weight", 3)
        self.pod_affinity = args.get_int("podaffinity.weight", 2)


# Resource scores ----------------------------------------------------------------------------------
#
# Matrices are resources x nodes, float64 holding integers (milli-CPU, bytes, milli-GPU), one row a
# resource so that each numpy call covers every resource. Kubernetes' integer divisions become a float
# division truncated by astype(int64): exact while the dividend stays below 2**53 (100 x memory bytes,
# up to ~90 PB per node).


def _quantities(task: TaskInfo) -> tuple[float, float, float]:
    """The pod's requests as Kubernetes counts them (init containers' max rule included): cpu, memory, gpu."""
    request = task.init_resreq
    return (
        float(math.ceil(request.milli_cpu)),
        float(math.ceil(request.memory)),
        float(math.ceil(request.scalars.get(GPU, 0.0))),
    )


def _non_zero(cpu: float, memory: float) -> tuple[float, float]:
    return cpu or DEFAULT_MILLI_CPU_REQUEST, memory or DEFAULT_MEMORY_REQUEST


class Allocatable:
    """Allocatable resources x nodes, with what scoring needs precomputed: present (not 0), safe divisors."""

    __slots__ = ("present", "safe", "uniform", "values")

    def __init__(self, values: FloatArray) -> None:
        self.values = values
        self.present: MaskArray = values != 0
        self.safe: FloatArray = np.where(self.present, values, 1.0)
        self.uniform = bool(self.present.all())

    def take(self, rows: IndexArray | None, count: int) -> Allocatable:
        """Return the first `count` resources, at the nodes `rows` (all nodes for None)."""
        chosen = Allocatable.__new__(Allocatable)
        if rows is None:
            chosen.values, chosen.present, chosen.safe = (
                self.values[:count],
                self.present[:count],
                self.safe[:count],
            )
        else:
            chosen.values = self.values[:count, rows]
            chosen.present = self.present[:count, rows]
            chosen.safe = self.safe[:count, rows]
        chosen.uniform = bool(chosen.present.all())
        return chosen


def _mean_of_present(scores: IntArray, allocatable: Allocatable) -> IntArray:
    """Integer mean over the resources with allocatable not 0 (equal weights), 0 where there is none."""
    if allocatable.uniform:
        result: IntArray = (
            (scores[0] + scores[1]) >> 1 if len(scores) == 2 else scores.sum(axis=0) // len(scores)
        )
        return result
    count = allocatable.present.sum(axis=0)
    total = np.where(allocatable.present, scores, 0).sum(axis=0)
    result = np.where(count == 0, 0, total // np.maximum(count, 1))
    return result


def least_requested(allocatable: Allocatable, requested: FloatArray) -> IntArray:
    """Kubernetes' LeastAllocated (cpu, memory, equal weights): (alloc - requested) * 100 / alloc."""
    scores = (np.maximum(allocatable.values - requested, 0.0) * 100.0 / allocatable.safe).astype(np.int64)
    return _mean_of_present(scores, allocatable)


def most_requested(allocatable: Allocatable, requested: FloatArray) -> IntArray:
    """Kubernetes' MostAllocated (cpu, memory, equal weights): min(requested, alloc) * 100 / alloc."""
    scores = (np.minimum(requested, allocatable.values) * 100.0 / allocatable.safe).astype(np.int64)
    return _mean_of_present(scores, allocatable)


def balanced_allocation(allocatable: Allocatable, requested: FloatArray) -> IntArray:
    """Kubernetes' BalancedAllocation: 100 * (1 - std of the requested fractions), fractions capped at 1.

    Two fractions use |a - b| / 2, three the population standard deviation, fewer give 0.
    """
    fractions = np.minimum(requested / allocatable.safe, 1.0)
    if allocatable.uniform and len(fractions) == 2:
        std = np.abs((fractions[0] - fractions[1]) / 2)
    else:
        std = _std_of_present(fractions, allocatable.present)
    result: IntArray = ((1.0 - std) * 100.0).astype(np.int64)
    return result


def _std_of_present(fractions: FloatArray, present: MaskArray) -> FloatArray:
    count = present.sum(axis=0)
    high = np.where(present, fractions, -np.inf).max(axis=0)
    low = np.where(present, fractions, np.inf).min(axis=0)
    std = np.where(count == 2, np.abs((high - low) / 2), 0.0)
    if len(fractions) == 3:
        mean = (fractions[0] + fractions[1] + fractions[2]) / 3
        spread = np.zeros(len(mean))
        for fraction in fractions:
            spread = spread + (fraction - mean) * (fraction - mean)
        std = np.where(count == 3, np.sqrt(spread / 3), std)
    result: FloatArray = std
    return result


class NodeRequests:
    """Per node: allocatable cpu, memory, gpu; what its pods request, plainly and with non-zero defaults.

    Follows the pods on each node as Volcano's node map does: snapshot pods, plus allocations and minus
    evictions of this session (event handlers).
    """

    __slots__ = ("allocatable", "non_zero", "requested", "rows")

    def __init__(self, nodes: Sequence[NodeInfo]) -> None:
        count = len(nodes)
        self.rows = {node.name: row for row, node in enumerate(nodes)}
        alloc = [node.allocatable for node in nodes]
        values = np.zeros((3, count))
        values[0] = [math.ceil(a.milli_cpu) for a in alloc]
        values[1] = [math.ceil(a.memory) for a in alloc]
        values[2] = [math.ceil(a.scalars.get(GPU, 0.0)) for a in alloc]
        self.allocatable = Allocatable(values)
        self.requested: FloatArray = np.zeros((3, count))
        self.non_zero: FloatArray = np.zeros((2, count))
        for row, node in enumerate(nodes):
            for task in node.tasks.values():
                self._account(task, row, 1.0)

    def _account(self, task: TaskInfo, row: int, sign: float) -> None:
        cpu, memory, gpu = _quantities(task)
        self.requested[0, row] += sign * cpu
        self.requested[1, row] += sign * memory
        self.requested[2, row] += sign * gpu
        nz_cpu, nz_memory = _non_zero(cpu, memory)
        self.non_zero[0, row] += sign * nz_cpu
        self.non_zero[1, row] += sign * nz_memory

    def allocated(self, task: TaskInfo) -> None:
        """Event handler: the task now sits on `task.node_name`."""
        row = self.rows.get(task.node_name)
        if row is not None:
            self._account(task, row, 1.0)

    def deallocated(self, task: TaskInfo) -> None:
        """Event handler: the task left `task.node_name`."""
        row = self.rows.get(task.node_name)
        if row is not None:
            self._account(task, row, -1.0)


# Affinity and taint scores ------------------------------------------------------------------------


def _freeze(value: object) -> object:
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _freeze(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    return value


def preferred_node_affinity(task: TaskInfo) -> Sequence[Mapping[str, Any]]:
    """Return the pod's preferredDuringSchedulingIgnoredDuringExecution node affinity terms."""
    node_affinity = task.affinity.get("nodeAffinity") or {}
    terms: Sequence[Mapping[str, Any]] = (
        node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
    )
    return terms


def node_affinity_count(terms: Sequence[Mapping[str, Any]], node: NodeInfo) -> int:
    """Sum the weights of the preferred terms the node matches (empty or zero-weight terms skipped)."""
    total = 0
    fields = {"metadata.name": node.name}
    for term in terms:
        weight = int(term.get("weight") or 0)
        preference = term.get("preference") or {}
        if weight and match_node_selector_term(preference, node.labels, fields):
            total += weight
    return total


def intolerable_prefer_no_schedule(tolerations: Sequence[Toleration], node: NodeInfo) -> int:
    """Count the node's PreferNoSchedule taints no toleration (of that effect or any effect) tolerates."""
    soft = [t for t in tolerations if t.effect in ("", "PreferNoSchedule")]
    return sum(
        1
        for taint in node.taints
        if taint.effect == "PreferNoSchedule"
        and not any(t.tolerates(taint.key, taint.value, taint.effect) for t in soft)
    )


def normalize(raw: IntArray, *, reverse: bool) -> IntArray:
    """Kubernetes' DefaultNormalizeScore: scale to 0..100 by the maximum (integer), optionally reversed."""
    top = int(raw.max()) if len(raw) else 0
    if top == 0:
        return np.full(len(raw), MAX_NODE_SCORE if reverse else 0, dtype=np.int64)
    scaled: IntArray = MAX_NODE_SCORE * raw // top
    return MAX_NODE_SCORE - scaled if reverse else scaled


# Inter-pod affinity -------------------------------------------------------------------------------


class _PodTerms:
    """A pod's affinity terms used for scoring, parsed once."""

    __slots__ = ("preferred_affinity", "preferred_anti", "required_affinity")

    def __init__(self, task: TaskInfo) -> None:
        affinity, namespace = task.affinity, task.namespace
        self.required_affinity = pod_affinity_terms(affinity, namespace, anti=False, preferred=False)
        self.preferred_affinity = pod_affinity_terms(affinity, namespace, anti=False, preferred=True)
        self.preferred_anti = pod_affinity_terms(affinity, namespace, anti=True, preferred=True)

    @property
    def scores_existing(self) -> bool:
        """True when this pod, once placed, attracts or repels incoming pods."""
        return bool(self.required_affinity or self.preferred_affinity or self.preferred_anti)


class InterPodAffinity:
    """Kubernetes' InterPodAffinity score over the placed pods (kept by event handlers)."""

    __slots__ = ("_codes", "_terms", "labels", "pods", "rows", "with_affinity")

    def __init__(self, nodes: Sequence[NodeInfo]) -> None:
        self.labels = [node.labels for node in nodes]
        self.rows = {node.name: row for row, node in enumerate(nodes)}
        self.pods: dict[str, dict[TaskID, tuple[int, TaskInfo]]] = {}
        self.with_affinity: dict[TaskID, tuple[int, TaskInfo]] = {}
        self._terms: dict[TaskID, _PodTerms] = {}
        self._codes: dict[str, tuple[IntArray, dict[str, int]]] = {}
        for row, node in enumerate(nodes):
            for task in node.tasks.values():
                self._place(task, row)

    def terms(self, task: TaskInfo) -> _PodTerms:
        """Return the task's parsed terms."""
        terms = self._terms.get(task.uid)
        if terms is None:
            terms = self._terms[task.uid] = _PodTerms(task)
        return terms

    def _place(self, task: TaskInfo, row: int) -> None:
        self.pods.setdefault(task.namespace, {})[task.uid] = (row, task)
        if task.affinity and self.terms(task).scores_existing:
            self.with_affinity[task.uid] = (row, task)

    def allocated(self, task: TaskInfo) -> None:
        """Event handler: the task now sits on `task.node_name`."""
        row = self.rows.get(task.node_name)
        if row is not None:
            self._place(task, row)

    def deallocated(self, task: TaskInfo) -> None:
        """Event handler: the task left its node."""
        self.pods.get(task.namespace, {}).pop(task.uid, None)
        self.with_affinity.pop(task.uid, None)

    def may_score(self, task: TaskInfo) -> bool:
        """False when no term can score: the task has no preferred terms and no placed pod scores others."""
        if self.with_affinity:
            return True
        own = self.terms(task) if task.affinity else None
        return own is not None and bool(own.preferred_affinity or own.preferred_anti)

    def topology_scores(self, task: TaskInfo) -> dict[str, dict[str, int]]:
        """Return topology key -> value -> score for the incoming `task` (Kubernetes' PreScore)."""
        scores: dict[str, dict[str, int]] = {}
        own = self.terms(task) if task.affinity else None
        if own is not None and (own.preferred_affinity or own.preferred_anti):
            incoming = own.preferred_affinity + own.preferred_anti
            for namespace in _namespaces(incoming, self.pods):
                for row, pod in self.pods.get(namespace, {}).values():
                    labels = self.labels[row]
                    _process(scores, own.preferred_affinity, pod, labels, 1)
                    _process(scores, own.preferred_anti, pod, labels, -1)
        for row, pod in self.with_affinity.values():
            terms, labels = self.terms(pod), self.labels[row]
            for term in terms.required_affinity:
                _process_term(scores, term, HARD_POD_AFFINITY_WEIGHT, task, labels)
            _process(scores, terms.preferred_affinity, task, labels, 1)
            _process(scores, terms.preferred_anti, task, labels, -1)
        return scores

    def score(self, task: TaskInfo, rows: IndexArray) -> IntArray:
        """Return the normalised (min-max, 0..100) score of each candidate row."""
        topology = self.topology_scores(task)
        raw = np.zeros(len(rows), dtype=np.int64)
        if not topology:
            return raw
        for key, values in topology.items():
            codes, known = self._key_codes(key)
            table = np.zeros(len(known) + 1, dtype=np.int64)
            for value, score in values.items():
                if value in known:
                    table[known[value]] = score
            raw += table[codes[rows]]
        low, high = int(raw.min()), int(raw.max())
        if high == low:
            return np.zeros(len(rows), dtype=np.int64)
        result: IntArray = np.trunc(MAX_NODE_SCORE * ((raw - low) / (high - low))).astype(np.int64)
        return result

    def _key_codes(self, key: str) -> tuple[IntArray, dict[str, int]]:
        cached = self._codes.get(key)
        if cached is None:
            known: dict[str, int] = {}
            codes = np.fromiter(
                (
                    -1 if (v := labels.get(key)) is None else known.setdefault(v, len(known))
                    for labels in self.labels
                ),
                dtype=np.int64,
                count=len(self.labels),
            )
            cached = self._codes[key] = (codes, known)
        return cached


def _namespaces(terms: Sequence[PodAffinityTerm], known: Iterable[str]) -> set[str]:
    names: set[str] = set()
    for term in terms:
        names |= term.namespaces
        if term.namespace_selector is not None:
            names.update(ns for ns in known if term.matches_namespace(ns))
    return names


def _process(
    scores: dict[str, dict[str, int]],
    terms: Sequence[PodAffinityTerm],
    pod: TaskInfo,
    labels: Mapping[str, str],
    sign: int,
) -> None:
    for term in terms:
        _process_term(scores, term, sign * term.weight, pod, labels)


def _process_term(
    scores: dict[str, dict[str, int]],
    term: PodAffinityTerm,
    weight: int,
    pod: TaskInfo,
    labels: Mapping[str, str],
) -> None:
    value = labels.get(term.topology_key)
    if value is not None and term.matches(pod.labels, pod.namespace):
        by_value = scores.setdefault(term.topology_key, {})
        by_value[value] = by_value.get(value, 0) + weight


# The plugin ---------------------------------------------------------------------------------------


class NodeOrderState:
    """One session's scoring state: node requests, per-shape affinity and taint counts, placed pods."""

    __slots__ = ("_affinity", "_taints", "nodes", "pods", "requests", "weights")

    def __init__(self, ssn: Session, weights: NodeOrderWeights) -> None:
        self.weights = weights
        self.nodes = ssn.node_list
        self.requests = NodeRequests(ssn.node_list)
        self.pods = InterPodAffinity(ssn.node_list)
        self._affinity: dict[object, IntArray] = {}
        self._taints: dict[tuple[Toleration, ...], tuple[IntArray, int]] = {}

    def allocated(self, task: TaskInfo) -> None:
        """Event handler: follow an allocation or pipeline."""
        self.requests.allocated(task)
        self.pods.allocated(task)

    def deallocated(self, task: TaskInfo) -> None:
        """Event handler: follow an eviction or a discarded allocation."""
        self.requests.deallocated(task)
        self.pods.deallocated(task)

    def node_affinity_counts(self, task: TaskInfo) -> IntArray:
        """Return, per node, the weight sum of the task's matching preferred terms (cached per shape)."""
        terms = preferred_node_affinity(task)
        key = _freeze(terms)
        counts = self._affinity.get(key)
        if counts is None:
            counts = self._affinity[key] = np.fromiter(
                (node_affinity_count(terms, node) for node in self.nodes),
                dtype=np.int64,
                count=len(self.nodes),
            )
        return counts

    def taint_counts(self, task: TaskInfo) -> tuple[IntArray, int]:
        """Return, per node, its untolerated PreferNoSchedule taints, and their maximum (cached per shape)."""
        cached = self._taints.get(task.tolerations)
        if cached is None:
            counts = np.fromiter(
                (intolerable_prefer_no_schedule(task.tolerations, node) for node in self.nodes),
                dtype=np.int64,
                count=len(self.nodes),
            )
            cached = self._taints[task.tolerations] = (counts, int(counts.max()) if len(counts) else 0)
        return cached

    def score(self, task: TaskInfo, rows: IndexArray) -> FloatArray:
        """Return the weighted sum of every score for the candidate rows."""
        weights = self.weights
        resources = self._resource_scores(task, rows)
        total = resources.astype(np.float64) if resources is not None else np.zeros(len(rows))
        if weights.node_affinity and preferred_node_affinity(task):
            total += weights.node_affinity * normalize(self.node_affinity_counts(task)[rows], reverse=False)
        if weights.taint_toleration:
            counts, top = self.taint_counts(task)
            if top == 0:
                total += weights.taint_toleration * MAX_NODE_SCORE
            else:
                total += weights.taint_toleration * normalize(counts[rows], reverse=True)
        if weights.pod_affinity and self.pods.may_score(task):
            total += weights.pod_affinity * self.pods.score(task, rows)
        return total

    def _resource_scores(self, task: TaskInfo, rows: IndexArray) -> IntArray | None:
        """Least/most requested and balanced allocation, over all nodes then taken at `rows` when the
        candidates are many, over the candidates alone when they are few."""
        weights, requests = self.weights, self.requests
        subset = len(rows) * 4 < len(self.nodes)
        pick = rows if subset else None
        cpu, memory, gpu = _quantities(task)
        total: IntArray | None = None
        if weights.least_requested or weights.most_requested:
            allocatable = requests.allocatable.take(pick, 2)
            non_zero = requests.non_zero if pick is None else requests.non_zero[:, pick]
            wanted = non_zero + np.array(_non_zero(cpu, memory))[:, None]
            if weights.least_requested:
                total = _plus(total, weights.least_requested * least_requested(allocatable, wanted))
            if weights.most_requested:
                total = _plus(total, weights.most_requested * most_requested(allocatable, wanted))
        if weights.balanced_resource:
            count = 3 if gpu else 2
            allocatable = requests.allocatable.take(pick, count)
            requested = requests.requested[:count] if pick is None else requests.requested[:count, pick]
            wanted = requested + np.array((cpu, memory, gpu)[:count])[:, None]
            total = _plus(total, weights.balanced_resource * balanced_allocation(allocatable, wanted))
        if total is None or subset:
            return total
        result: IntArray = total[rows]
        return result


def _plus(total: IntArray | None, more: IntArray) -> IntArray:
    return more if total is None else total + more


class NodeOrderPlugin:
    """Score candidate nodes with Kubernetes' node scores."""

    name = NAME

    def __init__(self, args: Arguments) -> None:
        self.args = args
        self.weights = NodeOrderWeights(args)
        self.state: NodeOrderState | None = None

    def on_session_open(self, ssn: Session) -> None:
        """Build the session state, register the batch node score and follow placements."""
        self.state = NodeOrderState(ssn, self.weights)
        ssn.add_batch_node_order_fn(NAME, self.state.score)
        ssn.add_event_handler(EventHandler(allocate=self.state.allocated, deallocate=self.state.deallocated))

    def on_session_close(self, ssn: Session) -> None:
        """Drop the session state."""
        self.state = None


def new(args: Arguments) -> NodeOrderPlugin:
    """Build the plugin."""
    return NodeOrderPlugin(args)
