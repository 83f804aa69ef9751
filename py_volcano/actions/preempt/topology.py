"""Topology-aware preemption: dry runs on cloned nodes, then the best candidate.

The rules: docs/semantics.md, "Topology-aware preemption". For each potential node (offset 0, so runs
are deterministic; Volcano starts at a random offset and checks nodes in parallel) the victims are
removed one by one from a clone of the node, with the plugins' simulate hooks on a clone of the
preemptor's CycleState, until the preemptor fits; the victims it does not need are then reprieved. The
first `num_candidates` nodes that yield victims are candidates; `select_candidate` picks one, whose
victims are evicted for real before the preemptor is pipelined there.

Reprieve tries the most important victim first, as Volcano does (it reverses its victim queue before
reprieving); unlike Volcano, a node is a candidate only if the preemptor fits it, quota included, once
the victims are gone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from py_volcano.actions.preempt import victims
from py_volcano.actions.preempt.disruption import DisruptionBudgets
from py_volcano.actions.preempt.preemptees import Scope
from py_volcano.api import MaskArray, NodeInfo, QueueInfo, TaskInfo
from py_volcano.framework import CycleState, Session, Statement

__all__ = ["Candidate", "calculate_num_candidates", "preempt", "select_candidate", "select_victims_on_node"]

_PRIORITY_OFFSET = 2**31


@dataclass(slots=True, frozen=True)
class Candidate:
    """A node the preemptor fits once `victims` (most important last) are evicted."""

    node: str
    victims: tuple[TaskInfo, ...]


def calculate_num_candidates(num_nodes: int, *, percentage: int, minimum: int, maximum: int) -> int:
    """Return how many candidates to dry-run for: a percentage of the nodes, clamped (Volcano's defaults)."""
    wanted = num_nodes * percentage // 100
    wanted = max(wanted, minimum)
    wanted = min(wanted, maximum)
    return min(wanted, num_nodes)


def preempt(
    ssn: Session,
    stmt: Statement,
    preemptor: TaskInfo,
    queue: QueueInfo,
    scope: Scope,
    mask: MaskArray,
    *,
    state: CycleState,
    wanted: int,
) -> bool:
    """Dry-run the potential nodes, pick the best candidate, evict its victims and pipeline there."""
    nodes = np.flatnonzero(mask)
    if len(nodes) == 0:
        return False
    promising = scope.index.screen(preemptor)
    candidates: list[Candidate] = []
    for index in nodes[promising[nodes]]:
        node = ssn.node_list[int(index)]
        chosen = select_victims_on_node(ssn, state.clone(), preemptor, queue, node, scope)
        if chosen:
            candidates.append(Candidate(node.name, tuple(chosen)))
            if len(candidates) >= wanted:
                break
    best = select_candidate(candidates, scope.budgets)
    if best is None:
        return False
    for victim in best.victims:
        stmt.evict(victim.clone(), "preempt")
    scope.index.touch(best.node)
    stmt.pipeline(preemptor, best.node)
    ssn.preemption_attempts += 1
    return True


class _DryRun:
    """One node's clone and the preemptor's state clone, changed only through the simulate hooks."""

    __slots__ = ("node", "preemptor", "queue", "ssn", "state")

    def __init__(self, ssn: Session, state: CycleState, preemptor: TaskInfo, queue: QueueInfo, node: NodeInfo) -> None:
        self.ssn = ssn
        self.state = state
        self.preemptor = preemptor
        self.queue = queue
        self.node = node

    def remove(self, task: TaskInfo) -> None:
        self.ssn.simulate_remove_task(self.state, self.preemptor, task, self.node)
        self.node.remove_task(task)

    def add(self, task: TaskInfo) -> None:
        self.ssn.simulate_add_task(self.state, self.preemptor, task, self.node)
        self.node.add_task(task)

    def fits(self) -> bool:
        return (
            self.ssn.simulate_allocatable(self.state, self.queue, self.preemptor)
            and victims.fits_future_idle(self.preemptor, self.node)
            and self.ssn.simulate_predicate(self.state, self.preemptor, self.node) is None
        )


def select_victims_on_node(
    ssn: Session, state: CycleState, preemptor: TaskInfo, queue: QueueInfo, node: NodeInfo, scope: Scope
) -> list[TaskInfo]:
    """Return the fewest victims on `node` that make room for `preemptor` (empty when none do).

    Works on a clone of the node and on `state`, which the caller cloned for this node.
    """
    run = _DryRun(ssn, state, preemptor, queue, node.clone())
    offered = ssn.preemptable(preemptor, scope.preemptees(node))
    ssn.preemption_victims = len(offered)
    if not victims.validate_victims(preemptor, run.node, offered):
        return []
    order = victims.in_victim_order(ssn, offered, preemptor)
    removed: list[TaskInfo] = []
    while order:
        victim = victims.pick(order, scope.budgets, removed)
        removed.append(victim)
        run.remove(victim)
        if run.fits():
            break
    if not removed or not run.fits():
        return []
    return _reprieve(run, removed, scope.budgets)


def _reprieve(run: _DryRun, removed: list[TaskInfo], budgets: DisruptionBudgets) -> list[TaskInfo]:
    """Add victims back, PDB-breaking ones first, most important first; keep those the preemptor spares."""
    breaking: list[TaskInfo] = []
    keeping: list[TaskInfo] = []
    for position, victim in enumerate(removed):
        (breaking if budgets.breaks(victim, removed[:position]) else keeping).append(victim)
    needed: list[TaskInfo] = []
    for victim in [*reversed(breaking), *reversed(keeping)]:
        run.add(victim)
        if not run.fits():
            run.remove(victim)
            needed.append(victim)
    return sorted(needed, key=lambda task: removed.index(task))


def select_candidate(candidates: list[Candidate], budgets: DisruptionBudgets) -> Candidate | None:
    """Pick a candidate as Volcano's SelectCandidate does, after the fewest PDB-breaking victims (beyond
    Volcano, a no-op without PDBs): lowest highest victim priority, lowest priority sum, fewest victims,
    latest start of its highest-priority victims, then the first."""
    if not candidates:
        return None

    def key(candidate: Candidate) -> tuple[int, int, int, int, float]:
        chosen = candidate.victims
        breaking = sum(1 for i, victim in enumerate(chosen) if budgets.breaks(victim, chosen[:i]))
        highest = max(victim.priority for victim in chosen)
        total = sum(victim.priority + _PRIORITY_OFFSET for victim in chosen)
        earliest = min(victim.creation for victim in chosen if victim.priority == highest)
        return breaking, highest, total, len(chosen), -earliest

    return min(candidates, key=key)
