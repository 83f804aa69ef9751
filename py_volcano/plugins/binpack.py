"""binpack: score nodes by how full they would be with the task, to pack tasks tightly (Volcano's binpack).

Per node: the weighted mean, over the resources the task requests and the plugin weighs, of
(used + request) / allocatable, times MaxNodeScore (100) and `binpack.weight`. A resource the node
lacks, or that would overflow it, scores 0 but keeps its weight in the mean. Vectorised over the
candidate rows with the session's `NodeArrays` (used = allocatable - idle, pipelined not counted).
A resource weighed here but held by no node scores 0 and keeps its weight.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from py_volcano.api import CPU, MEMORY, ROW_BY_ROW, JobInfo, NodeArrays, TaskInfo
from py_volcano.framework import Arguments, IndexArray, Session

__all__ = ["NAME", "BinpackArgs", "BinpackPlugin", "BinpackScores", "new"]

NAME = "binpack"
MAX_NODE_SCORE = 100.0

FloatArray = npt.NDArray[np.float64]


@dataclass(slots=True, frozen=True)
class BinpackArgs:
    """binpack's arguments, read as Volcano reads them: negative resource weights become 1."""

    weight: int = 1
    """`binpack.weight`: multiplies the score; 0 registers no node score."""
    resources: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({CPU: 1, MEMORY: 1}))
    """The weight of each weighed resource: `binpack.cpu` and `binpack.memory` (1 each), and
    `binpack.resources.<name>` (1) for each name in the comma list `binpack.resources`."""

    @classmethod
    def parse(cls, args: Arguments) -> BinpackArgs:
        """Read the arguments; ConfigError on a value of the wrong type."""
        resources: dict[str, int] = {}
        for name in args.get_str("binpack.resources", "").split(","):
            name = name.strip()
            if name:
                resources[name] = _non_negative(args.get_int(f"binpack.resources.{name}", 1))
        resources[CPU] = _non_negative(args.get_int("binpack.cpu", 1))
        resources[MEMORY] = _non_negative(args.get_int("binpack.memory", 1))
        return cls(weight=args.get_int("binpack.weight", 1), resources=MappingProxyType(resources))


def _non_negative(weight: int) -> int:
    return weight if weight >= 0 else 1


class BinpackScores:
    """The session's allocatable columns for the weighed resources, and the score over them."""

    __slots__ = ("arrays", "columns", "size", "weights")

    def __init__(self, arrays: NodeArrays, weights: BinpackArgs) -> None:
        self.arrays = arrays
        self.weights = weights
        self.size = len(arrays.nodes)
        self.columns: dict[str, tuple[int, FloatArray, FloatArray]] = {}
        for name in weights.resources:
            column = arrays.columns.get(name)
            if column is not None:
                capacity = arrays.allocatable[:, column].copy()
                self.columns[name] = (column, capacity, np.where(capacity != 0, capacity, 1.0))

    def row_key(self, task: TaskInfo) -> tuple[tuple[str, float], ...]:
        """The task's weighed requests, in the order the score sums them: a node's score reads them and
        that node alone."""
        resources = self.weights.resources
        return tuple((name, task.resreq.get(name)) for name in task.resreq.names() if name in resources)

    def _terms(self, task: TaskInfo) -> tuple[list[tuple[float, float, int, FloatArray, FloatArray]], int]:
        """The terms of the task's score in the order it sums them, (request, weight, column, capacity,
        safe divisor) for each weighed resource the nodes have, and the sum of the weights of every
        weighed resource it requests (one the nodes lack still counts)."""
        terms = []
        weight_sum = 0
        for name in task.resreq.names():
            weight = self.weights.resources.get(name)
            if weight is None:
                continue
            weight_sum += weight
            entry = self.columns.get(name)
            if weight != 0 and entry is not None:
                column, capacity, safe = entry
                terms.append((task.resreq.get(name), float(weight), column, capacity, safe))
        return terms, weight_sum

    def score(self, task: TaskInfo, rows: IndexArray) -> FloatArray:
        """Volcano's BinPackingScore of each candidate row (over all nodes, or the candidates when few;
        a few rows one by one in plain floats)."""
        terms, weight_sum = self._terms(task)
        if len(rows) <= ROW_BY_ROW:
            return np.array([self._score_one(terms, weight_sum, row) for row in rows.tolist()], dtype=np.float64)
        subset = len(rows) * 4 < self.size
        score: FloatArray = np.zeros(len(rows) if subset else self.size)
        for request, weight, column, capacity, safe in terms:
            if subset:
                capacity, safe, idle = capacity[rows], safe[rows], self.arrays.idle[rows, column]
            else:
                idle = self.arrays.idle[:, column]
            used_finally = capacity - idle + request
            score += np.where(used_finally <= capacity, used_finally * weight / safe, 0.0)
        if weight_sum > 0:
            score /= weight_sum
        score *= MAX_NODE_SCORE * self.weights.weight
        return score if subset else score[rows]

    def _score_one(
        self, terms: list[tuple[float, float, int, FloatArray, FloatArray]], weight_sum: int, row: int
    ) -> float:
        """`score` at one row, in plain floats: the same operations in the same order."""
        score = 0.0
        idle = self.arrays.idle[row].tolist()
        for request, weight, column, capacity, safe in terms:
            held = float(capacity[row])
            used_finally = held - idle[column] + request
            score += used_finally * weight / float(safe[row]) if used_finally <= held else 0.0
        if weight_sum > 0:
            score /= weight_sum
        return score * (MAX_NODE_SCORE * self.weights.weight)


class BinpackPlugin:
    """Prefer the node the task fills most."""

    name = NAME

    def __init__(self, args: BinpackArgs) -> None:
        self.args = args
        self.scores: BinpackScores | None = None

    def on_session_open(self, ssn: Session) -> None:
        """Register the node score unless `binpack.weight` is 0."""
        self.scores = BinpackScores(ssn.arrays, self.args)
        if self.args.weight != 0:
            ssn.add_batch_node_order_fn(NAME, self.scores.score, self.scores.row_key)

    def on_session_close(self, ssn: Session) -> None:
        """Drop the session state."""
        self.scores = None

    def on_job_added(self, ssn: Session, job: JobInfo) -> None:
        """Nothing to count: scores read the nodes."""


def new(args: BinpackArgs) -> BinpackPlugin:
    """Build the plugin."""
    return BinpackPlugin(args)
