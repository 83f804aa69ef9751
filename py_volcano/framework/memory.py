"""PluginMemory: what plugins keep from one session to the next within one scheduler process.

A plugin is built afresh for every session; the little state that must outlive a cycle (when tdm last
evicted, when rescheduling last ran) lives here instead, one object per plugin, owned by whoever runs
the cycles (the runner, a scenario run). Volcano keeps the same state in package variables.
"""

from __future__ import annotations

from datetime import datetime
from typing import TypeVar

__all__ = ["PluginMemory"]

T = TypeVar("T")


class PluginMemory:
    """One state object per plugin name, kept across sessions, and when the scheduler started."""

    __slots__ = ("_states", "started")

    def __init__(self, started: datetime) -> None:
        self.started = started
        """When the process that runs the cycles started (timezone-aware)."""
        self._states: dict[str, object] = {}

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
