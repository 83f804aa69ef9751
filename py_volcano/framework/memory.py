"""PluginMemory: what plugins keep from one session to the next within one scheduler process.

A plugin is built afresh for every session; the little state that must outlive a cycle (when tdm last
evicted, when rescheduling last ran) lives here instead, one object per plugin, owned by whoever runs
the cycles (the runner, a scenario run). Volcano keeps the same state in package variables.

The session keeps its per-node state here too (`KeptNodes`): the next session copies the rows of the
nodes that did not change instead of computing every node's again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from py_volcano.api import NodeArrays
from py_volcano.framework.cluster_total import NodeTotals

__all__ = ["KeptNodes", "PluginMemory"]

T = TypeVar("T")


@dataclass(slots=True, frozen=True)
class KeptNodes:
    """A closed session's node matrices and cluster totals, for the next session to carry rows from."""

    arrays: NodeArrays
    totals: NodeTotals


class PluginMemory:
    """One state object per plugin name, kept across sessions, and when the scheduler started."""

    __slots__ = ("_states", "next_node", "nodes", "started")

    def __init__(self, started: datetime) -> None:
        self.started = started
        """When the process that runs the cycles started (timezone-aware)."""
        self._states: dict[str, object] = {}
        self.next_node = 0
        """Where the next task's search for feasible nodes starts (Volcano's lastProcessedNodeIndex)."""
        self.nodes: KeptNodes | None = None
        """The last closed session's per-node state; a session takes it when it opens (None meanwhile,
        so a cycle that fails leaves nothing half-changed for the next)."""

    def recall(self, plugin: str, kind: type[T]) -> T:
        """Return the plugin's state object, made with `kind()` the first time it is asked for.

        TypeError when the plugin's state was made by another kind (two plugins sharing a name).
        """
        state = self._states.get(plugin)
        if state is None:
            state = self._states[plugin] = kind()
        if not isinstance(state, kind):
            raise TypeError(f"plugin memory {plugin!r} holds a {type(state).__name__}, not a {kind.__name__}")
        return state
