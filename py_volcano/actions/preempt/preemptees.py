"""PreempteeIndex: per node, the tasks an action may take victims from, and what they could free.

Built once per queue (preempt) or per action (reclaim) rather than for every preemptor task. A row
of `freeable` sums the candidates' requests (and one pod slot each) in `NodeArrays` columns, so
`screen` can drop, in one vector step, every node where even evicting all candidates leaves too
little room: such a node would fail `validate_victims` anyway, because victims are a subset of the
candidates. Nodes the action changes are marked with `touch` and re-read before the next use.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from py_volcano.actions.preempt.disruption import DisruptionBudgets
from py_volcano.api import CPU, MEMORY, PODS, FloatArray, MaskArray, NodeInfo, Resource, TaskInfo
from py_volcano.framework import Session, Statement

__all__ = ["PreempteeIndex", "Scope"]


class PreempteeIndex:
    """Candidates per node, kept current through `touch`; `owner` is the action's base filter."""

    __slots__ = ("_dirty", "_lists", "_owner", "_ssn", "freeable")

    def __init__(
        self, ssn: Session, owner: Callable[[TaskInfo], bool], nodes: Iterable[NodeInfo] | None = None
    ) -> None:
        self._ssn = ssn
        self._owner = owner
        self._lists: dict[int, list[TaskInfo]] = {}
        self._dirty: set[int] = set()
        self.freeable: FloatArray = np.zeros_like(ssn.arrays.idle)
        for node in ssn.node_list if nodes is None else nodes:
            self._read(node)

    def _read(self, node: NodeInfo) -> None:
        candidates = [task for task in node.tasks.values() if self._owner(task)]
        row = self.freeable[node.index]
        if not candidates:
            row[:] = 0.0
            self._lists.pop(node.index, None)
            return
        self._lists[node.index] = candidates
        total = Resource()
        for task in candidates:
            total.add(task.resreq)
        columns = self._ssn.arrays.columns
        row[:] = 0.0
        row[columns[CPU]] = total.milli_cpu
        row[columns[MEMORY]] = total.memory
        row[columns[PODS]] = len(candidates)
        for name, value in total.scalars.items():
            if name in columns:
                row[columns[name]] = value

    def touch(self, node_name: str) -> None:
        """Mark a node whose tasks changed."""
        node = self._ssn.nodes.get(node_name)
        if node is not None:
            self._dirty.add(node.index)

    def touch_statement(self, stmt: Statement) -> None:
        """Mark every node an open statement changed (call before discarding it)."""
        for op in stmt.operations:
            self.touch(op.node)

    def _refresh(self) -> None:
        for index in self._dirty:
            self._read(self._ssn.node_list[index])
        self._dirty.clear()

    def candidates(self, node: NodeInfo) -> list[TaskInfo]:
        """Return the node's candidates (the node's own task objects: clone before mutating)."""
        if node.index in self._dirty:
            self._refresh()
        return self._lists.get(node.index, [])

    def screen(self, task: TaskInfo) -> MaskArray:
        """Per node: the task would fit future idle if every candidate there were evicted."""
        self._refresh()
        arrays = self._ssn.arrays
        return arrays.fits(arrays.request(task.init_resreq), arrays.future_idle() + self.freeable)


class Scope:
    """What one preemptor may take: the index's candidates that `accept` keeps, under the PDB budgets."""

    __slots__ = ("accept", "budgets", "index")

    def __init__(self, index: PreempteeIndex, accept: Callable[[TaskInfo], bool], budgets: DisruptionBudgets) -> None:
        self.index = index
        self.accept = accept
        self.budgets = budgets

    def preemptees(self, node: NodeInfo) -> list[TaskInfo]:
        """Return the node's candidates this preemptor may take (the node's own objects)."""
        return [task for task in self.index.candidates(node) if self.accept(task)]
