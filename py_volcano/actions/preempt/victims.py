"""Victims on one node: validating them, ordering them, and evicting them in that order.

Shared by preempt and reclaim. Order (docs/semantics.md, "Victim order"): `Session.victim_order_fn`.
The order is a total one (every session ordering breaks ties), so it is a plain sort rather than
Volcano's heap.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from py_volcano.actions.preempt.disruption import DisruptionBudgets
from py_volcano.api import ZERO, NodeInfo, Resource, TaskInfo
from py_volcano.framework import Session, Statement, ordered

__all__ = ["evict_until", "fits_future_idle", "in_victim_order", "pick", "validate_victims"]


def in_victim_order(ssn: Session, victims: list[TaskInfo], preemptor: TaskInfo) -> list[TaskInfo]:
    """Return `victims` in the order they are evicted, first victim first (BuildVictimsPriorityQueue)."""
    return ordered(lambda left, right: ssn.victim_order_fn(left, right, preemptor), victims)


def fits_future_idle(task: TaskInfo, node: NodeInfo) -> bool:
    """True when the task's init request and one pod slot fit Idle + Releasing - Pipelined."""
    return node.future_idle_pods >= 1 and task.init_resreq.less_equal(node.future_idle(), ZERO)


def validate_victims(preemptor: TaskInfo, node: NodeInfo, victims: list[TaskInfo]) -> bool:
    """True when evicting all the victims would make room for the preemptor. None may be needed: a node
    whose FutureIdle already holds it passes with no victim (Volcano's ValidateVictims), e.g. where an
    earlier task of the same job freed more than it took."""
    future_idle = node.future_idle()
    for victim in victims:
        future_idle.add(victim.resreq)
    if node.future_idle_pods + len(victims) < 1:
        return False
    return preemptor.init_resreq.less_equal(future_idle, ZERO)


def pick(order: list[TaskInfo], budgets: DisruptionBudgets, planned: Collection[TaskInfo] = ()) -> TaskInfo:
    """Remove and return the first victim whose eviction keeps every PDB, else the first victim."""
    if budgets:
        for position, task in enumerate(order):
            if not budgets.breaks(task, planned):
                return order.pop(position)
    return order.pop(0)


def evict_until(
    stmt: Statement,
    order: list[TaskInfo],
    done: Callable[[], bool],
    *,
    budgets: DisruptionBudgets,
    reason: str,
) -> Resource:
    """Evict victims from `order` (PDB-aware, see `pick`) until `done()` holds before the next one.

    Each victim is evicted through a clone, so the node's own copy keeps the status it accounted
    for. Return the resources evicted.
    """
    evicted = Resource()
    while order and not done():
        victim = pick(order, budgets)
        stmt.evict(victim.clone(), reason)
        evicted.add(victim.resreq)
    return evicted
