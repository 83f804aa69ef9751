"""Normal preemption: the best-scored node where evicting victims makes the preemptor fit.

Nodes that pass the preempt-action predicates are scored and visited best first; on each, the
plugins' victims (`ssn.preemptable`) are evicted in victim order until the preemptor's queue may
take it, its init request fits FutureIdle and the node passes every predicate; then it is pipelined
there. Each node is tried in a statement of its own, merged into the job's only when the preemptor
is pipelined there: evictions on a node that could not take it are undone at once, whatever order the
nodes come in (Volcano's per-node statement). The rules: docs/semantics.md, "Normal preemption".
"""

from __future__ import annotations

import numpy as np

from py_volcano.actions.preempt import victims
from py_volcano.actions.preempt.preemptees import Scope
from py_volcano.api import MaskArray, NodeInfo, QueueInfo, TaskInfo
from py_volcano.framework import Session, Statement

__all__ = ["preempt"]


def preempt(
    ssn: Session, stmt: Statement, preemptor: TaskInfo, queue: QueueInfo, scope: Scope, mask: MaskArray
) -> bool:
    """Evict for `preemptor` on the first node (by score) that can host it, and pipeline it there."""
    nodes = np.flatnonzero(mask)
    if len(nodes) == 0:
        return False
    promising = scope.index.screen(preemptor)[nodes]
    if not promising.any():
        return False
    by_score = np.argsort(-ssn.prioritize(preemptor, nodes), kind="stable")
    for index in nodes[by_score][promising[by_score]]:
        if _preempt_on(ssn, stmt, preemptor, queue, scope, ssn.node_list[int(index)]):
            return True
    return False


def _preempt_on(
    ssn: Session, stmt: Statement, preemptor: TaskInfo, queue: QueueInfo, scope: Scope, node: NodeInfo
) -> bool:
    chosen = ssn.preemptable(preemptor, scope.preemptees(node))
    ssn.preemption_victims = len(chosen)
    if not victims.validate_victims(preemptor, node, chosen):
        return False

    def ready() -> bool:
        return (
            ssn.allocatable(queue, preemptor)
            and victims.fits_future_idle(preemptor, node)
            and ssn.predicate(preemptor, node) is None
        )

    attempt = Statement(ssn)
    order = victims.in_victim_order(ssn, chosen, preemptor)
    victims.evict_until(attempt, order, ready, budgets=scope.budgets, reason="preempt")
    ssn.preemption_attempts += 1
    scope.index.touch(node.name)
    if not ready():
        attempt.discard()
        return False
    attempt.pipeline(preemptor, node.name)
    stmt.merge(attempt)
    return True
