"""Resource scores of nodeorder: Kubernetes' LeastAllocated, MostAllocated and BalancedAllocation over
resources x nodes matrices, and the per-node requests they read (followed through event handlers).

Matrices hold integers in float64 (milli-CPU, bytes, milli-GPU), one row a resource so that each numpy
call covers every resource. Kubernetes' integer divisions become a float division truncated by
astype(int64): exact while the dividend stays below 2**53 (100 x memory bytes: up to ~90 PB a node).
Least/most requested read the non-zero requests (a pod asking no CPU counts 100m, no memory 200Mi; per
pod here, per container in Kubernetes); balanced allocation the plain ones, and scores the change in
balance the pod brings (Kubernetes 1.36, the version Volcano builds with).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from py_volcano.api import MaskArray, NodeInfo, TaskInfo
from py_volcano.framework import IndexArray

__all__ = [
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "GPU",
    "MAX_NODE_SCORE",
    "Allocatable",
    "FloatArray",
    "IntArray",
    "NodeRequests",
    "NodeSums",
    "allocatable_of",
    "balanced_allocation",
    "least_requested",
    "most_requested",
    "non_zero",
    "quantities",
]

MAX_NODE_SCORE = 100
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
GPU = "nvidia.com/gpu"

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def quantities(task: TaskInfo) -> tuple[float, float, float]:
    """The pod's requests as Kubernetes counts them (init containers' max rule included): cpu, memory, gpu."""
    request = task.init_resreq
    return (
        float(math.ceil(request.milli_cpu)),
        float(math.ceil(request.memory)),
        float(math.ceil(request.scalars.get(GPU, 0.0))),
    )


def non_zero(cpu: float, memory: float) -> tuple[float, float]:
    """Kubernetes' non-zero requests: 100m CPU and 200Mi memory for a pod asking none."""
    return cpu or DEFAULT_MILLI_CPU_REQUEST, memory or DEFAULT_MEMORY_REQUEST


class Allocatable:
    """Allocatable resources x nodes, with what scoring needs precomputed: present (not 0), safe divisors."""

    __slots__ = ("_uniform_up_to", "present", "safe", "uniform", "values")

    def __init__(self, values: FloatArray) -> None:
        self.values = values
        self.present: MaskArray = values != 0
        self.safe: FloatArray = np.where(self.present, values, 1.0)
        self.uniform = bool(self.present.all())
        self._uniform_up_to = tuple(bool(self.present[:count].all()) for count in range(len(values) + 1))

    def take(self, rows: IndexArray | None, count: int) -> Allocatable:
        """Return the first `count` resources, at the nodes `rows` (all nodes for None)."""
        chosen = Allocatable.__new__(Allocatable)
        chosen._uniform_up_to = self._uniform_up_to[: count + 1]  # a subset of nodes is at least as uniform
        if rows is None:
            chosen.values, chosen.present, chosen.safe = (
                self.values[:count],
                self.present[:count],
                self.safe[:count],
            )
        elif self._uniform_up_to[count]:  # every value present: the divisors are the values
            chosen.values = chosen.safe = self.values[:count, rows]
            chosen.present = self.present[:count, : len(rows)]
            chosen.uniform = True
            return chosen
        else:
            chosen.values = self.values[:count, rows]
            chosen.present = self.present[:count, rows]
            chosen.safe = self.safe[:count, rows]
        chosen.uniform = bool(chosen.present.all())
        return chosen


def _mean_of_present(scores: IntArray, allocatable: Allocatable) -> IntArray:
    """Integer mean over the resources with allocatable not 0 (equal weights), 0 where there is none."""
    if allocatable.uniform:
        result: IntArray = (scores[0] + scores[1]) >> 1 if len(scores) == 2 else scores.sum(axis=0) // len(scores)
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


def balanced_allocation(allocatable: Allocatable, allocated: FloatArray, requested: FloatArray) -> IntArray:
    """Kubernetes' BalancedAllocation (1.36, Volcano's): how placing the pod changes the node's balance.

    The balance of a node is 100 * (1 - std of its requested fractions), fractions capped at 1 (two
    fractions use |a - b| / 2, three the population standard deviation, fewer give 0). The score is
    50 + (50 + balance with the pod - balance without it) // 2: 75 when the pod leaves the balance as it
    was, towards 100 when it improves it, towards 50 when it worsens it. `allocated` is what the node's
    pods request, `requested` that plus the pod.
    """
    with_pod = _balance(allocatable, requested)
    without_pod = _balance(allocatable, allocated)
    result: IntArray = MAX_NODE_SCORE // 2 + (MAX_NODE_SCORE // 2 + with_pod - without_pod) // 2
    return result


def _balance(allocatable: Allocatable, requested: FloatArray) -> IntArray:
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


def allocatable_of(nodes: Sequence[NodeInfo]) -> Allocatable:
    """The nodes' allocatable cpu, memory and gpu, rounded up (from their specs alone)."""
    alloc = [node.allocatable for node in nodes]
    values = np.zeros((3, len(nodes)))
    values[0] = [math.ceil(a.milli_cpu) for a in alloc]
    values[1] = [math.ceil(a.memory) for a in alloc]
    values[2] = [math.ceil(a.scalars.get(GPU, 0.0)) for a in alloc]
    return Allocatable(values)


class NodeSums:
    """Per node, what its pods request (cpu, memory, gpu, then non-zero cpu and memory), kept from one
    session to the next: while the nodes are as many as before, a row is summed again only when its
    node is another object or its tasks changed (`NodeInfo.version`), the others are kept as they are."""

    __slots__ = ("_nodes", "_rows", "_sums")

    def __init__(self) -> None:
        self._nodes: list[tuple[NodeInfo, int]] = []
        self._rows: dict[str, int] = {}
        self._sums: FloatArray = np.zeros((0, 5))

    def take(self, nodes: Sequence[NodeInfo]) -> tuple[dict[str, int], FloatArray]:
        """Return each node's row by name and the sums of `nodes`, one row a node in order, and keep
        them for the next session; the caller must not write either."""
        last = self._nodes
        taken = [(node, node.version) for node in nodes]
        stale: Sequence[int]
        if len(taken) == len(last):
            stale = [row for row, (now, was) in enumerate(zip(taken, last, strict=True)) if now != was]
            sums = self._sums.copy() if stale else self._sums
            renamed = any(nodes[row].name != last[row][0].name for row in stale)
        else:
            stale, sums, renamed = range(len(taken)), np.empty((len(taken), 5)), True
        for row in stale:
            sums[row] = _sum_requests(nodes[row])
        self._nodes, self._sums = taken, sums
        if renamed:
            self._rows = {node.name: row for row, node in enumerate(nodes)}
        return self._rows, sums


def _sum_requests(node: NodeInfo) -> list[float]:
    total = [0.0] * 5
    for task in node.tasks.values():
        cpu, memory, gpu = quantities(task)
        nz_cpu, nz_memory = non_zero(cpu, memory)
        total[0] += cpu
        total[1] += memory
        total[2] += gpu
        total[3] += nz_cpu
        total[4] += nz_memory
    return total


class NodeRequests:
    """Per node: allocatable cpu, memory, gpu; what its pods request, plainly and with non-zero defaults.

    Follows the pods on each node as Volcano's node map does: snapshot pods, plus allocations and minus
    evictions of this session (event handlers).
    """

    __slots__ = ("allocatable", "non_zero", "requested", "rows")

    def __init__(
        self, nodes: Sequence[NodeInfo], kept: NodeSums | None = None, allocatable: Allocatable | None = None
    ) -> None:
        """`kept` (the plugin memory's) hands on the sums of nodes no session changed since it took them,
        `allocatable` the nodes' `allocatable_of` when their specs are those it was taken from."""
        self.rows, sums = (kept if kept is not None else NodeSums()).take(nodes)
        self.allocatable = allocatable if allocatable is not None else allocatable_of(nodes)
        self.requested: FloatArray = sums[:, :3].T.copy()
        self.non_zero: FloatArray = sums[:, 3:].T.copy()

    def _account(self, task: TaskInfo, row: int, sign: float) -> None:
        cpu, memory, gpu = quantities(task)
        self.requested[0, row] += sign * cpu
        self.requested[1, row] += sign * memory
        self.requested[2, row] += sign * gpu
        nz_cpu, nz_memory = non_zero(cpu, memory)
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
