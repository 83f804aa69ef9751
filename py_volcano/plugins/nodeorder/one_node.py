"""The resource scores of one node in plain Python floats: the operations of `resources`' matrices, in the
same order, so the result is the same to the bit (tests/unit/plugins/test_node_scores_one_row.py).

A session keeping scores per task shape (`framework.node_scores`) rescores only the node the last
placement changed; over one node numpy's cost per call is most of the work, so that node is scored here.
"""

from __future__ import annotations

import math

from py_volcano.plugins.nodeorder.resources import MAX_NODE_SCORE, NodeRequests, non_zero

__all__ = ["resource_score"]

_HALF = MAX_NODE_SCORE // 2


def resource_score(
    requests: NodeRequests,
    row: int,
    request: tuple[float, float, float],
    weights: tuple[int, int, int],
) -> int | None:
    """The weighted sum of least requested, most requested and balanced allocation at `row` for a pod
    requesting `request` (cpu, memory, gpu as `resources.quantities`), `weights` in that order; None when
    no score applies (as `NodeOrderState` sums them)."""
    least, most, balanced = weights
    cpu, memory, gpu = request
    alloc_cpu, alloc_memory, alloc_gpu = requests.allocatable.values[:, row].tolist()
    total: int | None = None
    if least or most:
        nz_cpu, nz_memory = non_zero(cpu, memory)
        used_cpu, used_memory = requests.non_zero[:, row].tolist()
        wanted_cpu, wanted_memory = used_cpu + nz_cpu, used_memory + nz_memory
        if least:
            score = _mean_of_present(
                alloc_cpu,
                alloc_memory,
                int(max(alloc_cpu - wanted_cpu, 0.0) * 100.0 / _safe(alloc_cpu)),
                int(max(alloc_memory - wanted_memory, 0.0) * 100.0 / _safe(alloc_memory)),
            )
            total = least * score
        if most:
            score = _mean_of_present(
                alloc_cpu,
                alloc_memory,
                int(min(wanted_cpu, alloc_cpu) * 100.0 / _safe(alloc_cpu)),
                int(min(wanted_memory, alloc_memory) * 100.0 / _safe(alloc_memory)),
            )
            total = most * score if total is None else total + most * score
    if balanced and (cpu or memory or gpu):
        had_cpu, had_memory, had_gpu = requests.requested[:, row].tolist()
        if gpu:
            allocatable = (alloc_cpu, alloc_memory, alloc_gpu)
            with_pod = _balance3(allocatable, (had_cpu + cpu, had_memory + memory, had_gpu + gpu))
            without_pod = _balance3(allocatable, (had_cpu, had_memory, had_gpu))
        else:
            with_pod = _balance2(alloc_cpu, alloc_memory, had_cpu + cpu, had_memory + memory)
            without_pod = _balance2(alloc_cpu, alloc_memory, had_cpu, had_memory)
        score = _HALF + (_HALF + with_pod - without_pod) // 2
        total = balanced * score if total is None else total + balanced * score
    return total


def _safe(value: float) -> float:
    return value if value != 0 else 1.0


def _mean_of_present(alloc_cpu: float, alloc_memory: float, cpu: int, memory: int) -> int:
    """The integer mean of the scores of the resources the node has (0 when it has neither)."""
    if alloc_cpu != 0 and alloc_memory != 0:
        return (cpu + memory) // 2
    if alloc_cpu != 0:
        return cpu
    return memory if alloc_memory != 0 else 0


def _balance2(alloc_cpu: float, alloc_memory: float, cpu: float, memory: float) -> int:
    if alloc_cpu == 0 or alloc_memory == 0:
        return 100
    std = abs((min(cpu / alloc_cpu, 1.0) - min(memory / alloc_memory, 1.0)) / 2)
    return int((1.0 - std) * 100.0)


def _balance3(allocatable: tuple[float, float, float], requested: tuple[float, float, float]) -> int:
    fractions = [min(r / _safe(a), 1.0) for a, r in zip(allocatable, requested, strict=True)]
    count = sum(a != 0 for a in allocatable)
    if count == 3:
        mean = (fractions[0] + fractions[1] + fractions[2]) / 3
        spread = 0.0
        for fraction in fractions:
            spread = spread + (fraction - mean) * (fraction - mean)
        std = math.sqrt(spread / 3)
    elif count == 2:
        chosen = [fraction for fraction, a in zip(fractions, allocatable, strict=True) if a != 0]
        std = abs((max(chosen) - min(chosen)) / 2)
    else:
        std = 0.0
    return int((1.0 - std) * 100.0)
