"""The resource scores of one node in plain Python floats: the operations of `resources`' matrices, in the
same order, so the result is the same to the bit (tests/unit/plugins/test_nodeorder_one_node.py).

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
    values = requests.allocatable.values[:, row].tolist()
    present = [value != 0 for value in values]
    total: int | None = None
    if least or most:
        nz_cpu, nz_memory = non_zero(cpu, memory)
        used = requests.non_zero[:, row].tolist()
        wanted = (used[0] + nz_cpu, used[1] + nz_memory)
        if least:
            scores = [int(max(a - w, 0.0) * 100.0 / _safe(a)) for a, w in zip(values[:2], wanted, strict=True)]
            total = _plus(total, least * _mean_of_present(scores, present[:2]))
        if most:
            scores = [int(min(w, a) * 100.0 / _safe(a)) for a, w in zip(values[:2], wanted, strict=True)]
            total = _plus(total, most * _mean_of_present(scores, present[:2]))
    if balanced and (cpu or memory or gpu):
        count = 3 if gpu else 2
        allocated = requests.requested[:count, row].tolist()
        wanted_all = [a + r for a, r in zip(allocated, (cpu, memory, gpu)[:count], strict=True)]
        with_pod = _balance(values[:count], present[:count], wanted_all)
        without_pod = _balance(values[:count], present[:count], allocated)
        total = _plus(total, balanced * (_HALF + (_HALF + with_pod - without_pod) // 2))
    return total


def _safe(value: float) -> float:
    return value if value != 0 else 1.0


def _plus(total: int | None, more: int) -> int:
    return more if total is None else total + more


def _mean_of_present(scores: list[int], present: list[bool]) -> int:
    count = sum(present)
    if count == 0:
        return 0
    return sum(score for score, here in zip(scores, present, strict=True) if here) // count


def _balance(values: list[float], present: list[bool], requested: list[float]) -> int:
    fractions = [min(r / _safe(a), 1.0) for a, r in zip(values, requested, strict=True)]
    count = sum(present)
    if len(fractions) == 3 and count == 3:
        mean = (fractions[0] + fractions[1] + fractions[2]) / 3
        spread = 0.0
        for fraction in fractions:
            spread = spread + (fraction - mean) * (fraction - mean)
        std = math.sqrt(spread / 3)
    elif count == 2:
        chosen = [fraction for fraction, here in zip(fractions, present, strict=True) if here]
        std = abs((max(chosen) - min(chosen)) / 2)
    else:
        std = 0.0
    return int((1.0 - std) * 100.0)
