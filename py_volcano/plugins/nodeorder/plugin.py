"""NodeOrderPlugin: Kubernetes' node scores as Volcano's nodeorder weighs them, vectorised over candidates.

Scores are integers 0..100 as Kubernetes computes them, each multiplied by its weight argument:
`leastrequested.weight` (1), `mostrequested.weight` (0), `balancedresource.weight` (1),
`nodeaffinity.weight` (2), `tainttoleration.weight` (3), `podaffinity.weight` (2),
`podtopologyspread.weight` (2, the pod's ScheduleAnyway spread constraints). Preferred node affinity
is normalised to 0..100 over the candidates as Kubernetes does (Volcano adds the raw weight sum). Image
locality is not computed (no images), nor are Kubernetes' default spread constraints (they need the
Services and ReplicaSets selecting a pod, which py-volcano does not read).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from py_volcano.api import ROW_BY_ROW, JobInfo, NodeInfo, TaskInfo, Toleration, match_node_selector_term
from py_volcano.framework import Arguments, EventHandler, IndexArray, Session, SpecState
from py_volcano.plugins.nodeorder.one_node import resource_score
from py_volcano.plugins.nodeorder.pod_affinity import InterPodAffinity
from py_volcano.plugins.nodeorder.resources import (
    MAX_NODE_SCORE,
    FloatArray,
    IntArray,
    NodeRequests,
    NodeSums,
    allocatable_of,
    balanced_allocation,
    least_requested,
    most_requested,
    non_zero,
    quantities,
)
from py_volcano.plugins.nodeorder.topology_spread import SpreadScores

__all__ = [
    "NAME",
    "NodeOrderArgs",
    "NodeOrderPlugin",
    "NodeOrderState",
    "NodeStatics",
    "intolerable_prefer_no_schedule",
    "new",
    "node_affinity_count",
    "normalize",
    "preferred_node_affinity",
]

NAME = "nodeorder"
#: The plugin memory's name for the `NodeStatics` kept while the node specs stay the same.
_STATICS = f"{NAME}/statics"


@dataclass(slots=True, frozen=True)
class NodeOrderArgs:
    """The weight of each score: Volcano's nodeorder arguments and defaults (0 skips the score)."""

    least_requested: int = 1
    """`leastrequested.weight`: Kubernetes' LeastAllocated (cpu, memory)."""
    most_requested: int = 0
    """`mostrequested.weight`: Kubernetes' MostAllocated (cpu, memory)."""
    balanced_resource: int = 1
    """`balancedresource.weight`: balanced allocation (cpu, memory, and GPUs the task asks for)."""
    node_affinity: int = 2
    """`nodeaffinity.weight`: preferred node affinity, normalised over the candidates."""
    taint_toleration: int = 3
    """`tainttoleration.weight`: PreferNoSchedule taints the pod does not tolerate."""
    pod_affinity: int = 2
    """`podaffinity.weight`: preferred inter-pod affinity and anti-affinity."""
    pod_topology_spread: int = 2
    """`podtopologyspread.weight`: the pod's ScheduleAnyway topology spread constraints."""

    @classmethod
    def parse(cls, args: Arguments) -> NodeOrderArgs:
        """Read the arguments; ConfigError on a value that is not an integer."""
        return cls(
            least_requested=args.get_int("leastrequested.weight", 1),
            most_requested=args.get_int("mostrequested.weight", 0),
            balanced_resource=args.get_int("balancedresource.weight", 1),
            node_affinity=args.get_int("nodeaffinity.weight", 2),
            taint_toleration=args.get_int("tainttoleration.weight", 3),
            pod_affinity=args.get_int("podaffinity.weight", 2),
            pod_topology_spread=args.get_int("podtopologyspread.weight", 2),
        )


def _freeze(value: object) -> object:
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _freeze(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    return value


def preferred_node_affinity(task: TaskInfo) -> Sequence[Mapping[str, Any]]:
    """Return the pod's preferredDuringSchedulingIgnoredDuringExecution node affinity terms."""
    node_affinity = task.affinity.get("nodeAffinity") or {}
    terms: Sequence[Mapping[str, Any]] = node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
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


class NodeStatics:
    """What scoring reads of the node specs alone: allocatable, and per shape the preferred node affinity
    weights and untolerated PreferNoSchedule taints of every node. Kept from session to session while
    the specs are the same (`SpecState`); every array is read-only."""

    __slots__ = ("affinity", "allocatable", "taints")

    def __init__(self, nodes: Sequence[NodeInfo]) -> None:
        self.allocatable = allocatable_of(nodes)
        self.affinity: dict[object, IntArray] = {}
        self.taints: dict[tuple[Toleration, ...], tuple[IntArray, int]] = {}


class NodeOrderState:
    """One session's scoring state: node requests, per-shape affinity and taint counts, placed pods."""

    __slots__ = ("_affinity", "_taints", "nodes", "pods", "requests", "spread", "weights")

    def __init__(self, ssn: Session, weights: NodeOrderArgs) -> None:
        self.weights = weights
        nodes = self.nodes = ssn.node_list
        statics = ssn.memory.recall(_STATICS, SpecState).take(nodes, None, lambda: NodeStatics(nodes))
        self.requests = NodeRequests(nodes, ssn.memory.recall(NAME, NodeSums), statics.allocatable)
        self.pods = InterPodAffinity(nodes, self.requests.rows)
        self.spread = SpreadScores(nodes, self.pods)
        self._affinity = statics.affinity
        self._taints = statics.taints

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
        if len(rows) <= ROW_BY_ROW and self._reads_row_alone(task):
            return np.array([self._score_one(task, row) for row in rows.tolist()], dtype=np.float64)
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
        if weights.pod_topology_spread and task.topology_spread:
            spread = self.spread.score(task, rows)
            if spread is not None:
                total += weights.pod_topology_spread * spread
        return total

    def row_key(self, task: TaskInfo) -> tuple[float, float, float] | None:
        """The task's requests when its score at a node reads that node alone, else None."""
        return quantities(task) if self._reads_row_alone(task) else None

    def _reads_row_alone(self, task: TaskInfo) -> bool:
        """No preferred node affinity, no PreferNoSchedule taint the task minds, no inter-pod affinity or
        spread score: the scores normalised over the candidates."""
        weights = self.weights
        if weights.node_affinity and preferred_node_affinity(task):
            return False
        if weights.taint_toleration and self.taint_counts(task)[1] != 0:
            return False
        if weights.pod_affinity and self.pods.may_score(task):
            return False
        return not (weights.pod_topology_spread and task.topology_spread)

    def _score_one(self, task: TaskInfo, row: int) -> float:
        """`score` at one row for a task whose score reads that row alone, in plain floats."""
        weights = self.weights
        resources = resource_score(
            self.requests,
            row,
            quantities(task),
            (weights.least_requested, weights.most_requested, weights.balanced_resource),
        )
        total = float(resources) if resources is not None else 0.0
        if weights.taint_toleration:
            total += weights.taint_toleration * MAX_NODE_SCORE
        return total

    def _resource_scores(self, task: TaskInfo, rows: IndexArray) -> IntArray | None:
        """Least/most requested and balanced allocation, over all nodes then taken at `rows` when the
        candidates are many, over the candidates alone when they are few."""
        weights, requests = self.weights, self.requests
        subset = len(rows) * 4 < len(self.nodes)
        pick = rows if subset else None
        cpu, memory, gpu = quantities(task)
        total: IntArray | None = None
        if weights.least_requested or weights.most_requested:
            allocatable = requests.allocatable.take(pick, 2)
            counted = requests.non_zero if pick is None else requests.non_zero[:, pick]
            wanted = counted + np.array(non_zero(cpu, memory))[:, None]
            if weights.least_requested:
                total = _plus(total, weights.least_requested * least_requested(allocatable, wanted))
            if weights.most_requested:
                total = _plus(total, weights.most_requested * most_requested(allocatable, wanted))
        if weights.balanced_resource and (cpu or memory or gpu):  # Kubernetes skips it for best-effort pods
            count = 3 if gpu else 2
            allocatable = requests.allocatable.take(pick, count)
            requested = requests.requested[:count] if pick is None else requests.requested[:count, pick]
            wanted = requested + np.array((cpu, memory, gpu)[:count])[:, None]
            total = _plus(total, weights.balanced_resource * balanced_allocation(allocatable, requested, wanted))
        if total is None or subset:
            return total
        result: IntArray = total[rows]
        return result


def _plus(total: IntArray | None, more: IntArray) -> IntArray:
    return more if total is None else total + more


class NodeOrderPlugin:
    """Score candidate nodes with Kubernetes' node scores."""

    name = NAME

    def __init__(self, args: NodeOrderArgs) -> None:
        self.args = args
        self.state: NodeOrderState | None = None

    def on_session_open(self, ssn: Session) -> None:
        """Build the session state, register the batch node score and follow placements."""
        self.state = NodeOrderState(ssn, self.args)
        ssn.add_batch_node_order_fn(NAME, self.state.score, self.state.row_key)
        ssn.add_event_handler(EventHandler(allocate=self.state.allocated, deallocate=self.state.deallocated))

    def on_session_close(self, ssn: Session) -> None:
        """Drop the session state."""
        self.state = None

    def on_job_added(self, ssn: Session, job: JobInfo) -> None:
        """Nothing to count: the state follows nodes and placements."""


def new(args: NodeOrderArgs) -> NodeOrderPlugin:
    """Build the plugin."""
    return NodeOrderPlugin(args)
