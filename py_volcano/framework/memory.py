"""PluginMemory: what plugins keep from one session to the next within one scheduler process.

A plugin is built afresh for every session; the little state that must outlive a cycle (when tdm last
evicted, when rescheduling last ran) lives here instead, one object per plugin, owned by whoever runs
the cycles (the runner, a scenario run). Volcano keeps the same state in package variables.

The session keeps its per-node state here too (`KeptNodes`): the next session copies the rows of the
nodes that did not change instead of computing every node's again. What a plugin derives from the node
specs alone (labels, taints, allocatable) it keeps in a `SpecState` while the specs stay the same.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from py_volcano.api import NodeArrays, NodeInfo
from py_volcano.framework.cluster_total import NodeTotals

__all__ = ["KeptNodes", "PluginMemory", "SpecState"]

T = TypeVar("T")


class SpecState:
    """A plugin's state derived from the node specs alone, handed from one session to the next while the
    session's nodes have, in order, the very specs it was built from (the store replaces a node's spec
    whenever the Node object changes) and the plugin the same `key` (its arguments). The state must not
    change with anything else: it is shared by every session until a spec changes."""

    __slots__ = ("_key", "_specs", "_state")

    def __init__(self) -> None:
        self._specs: list[object] = []
        self._key: object = None
        self._state: Any = None

    def take(self, nodes: Sequence[NodeInfo], key: object, build: Callable[[], T]) -> T:
        """Return the state kept for `nodes` and `key`, or `build()` it (and keep it) when either changed."""
        specs: list[object] = [node.spec for node in nodes]
        kept = self._specs
        if (
            self._state is None
            or key != self._key
            or len(specs) != len(kept)
            or not all(map(operator.is_, specs, kept))
        ):
            self._state, self._specs, self._key = build(), specs, key
        state: T = self._state
        return state


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
