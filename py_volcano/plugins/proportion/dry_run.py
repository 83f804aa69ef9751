"""The queues' allocated resources as one preempt dry run sees them (docs/semantics.md, "Proportion dry run").

Allocate asks for a pre-predicate per task, so taking a full copy every time would cost a copy of
every queue per task. `ProportionState` is copy-on-write instead: it reads the live figures until
the dry run changes a queue, and whoever owns the live figures calls `freeze` on every state still
alive before changing them, so a state always shows the figures of the moment it was taken.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping

from py_volcano.api import QueueID, Resource

__all__ = ["ProportionState", "StateRegistry"]


class StateRegistry:
    """The live allocated figures by queue, and the dry-run states that still read them."""

    __slots__ = ("_pending", "live")

    def __init__(self, live: Mapping[QueueID, Resource]) -> None:
        self.live = live
        self._pending: weakref.WeakSet[ProportionState] = weakref.WeakSet()

    def snapshot(self) -> ProportionState:
        """Return a state showing the figures as they are now."""
        state = ProportionState(self, {})
        self._pending.add(state)
        return state

    def track(self, state: ProportionState) -> None:
        """Remember a state that still reads the live figures."""
        self._pending.add(state)

    def before_change(self) -> None:
        """Freeze every state still alive: called before any live figure changes."""
        if self._pending:
            for state in list(self._pending):
                state.freeze()
            self._pending.clear()


class ProportionState:
    """Per-queue allocated resources for one dry run; cloned by the CycleState for each candidate node."""

    __slots__ = ("__weakref__", "_own", "_registry")

    def __init__(self, registry: StateRegistry | None, own: dict[QueueID, Resource]) -> None:
        self._registry = registry
        self._own = own

    def allocated(self, queue_id: QueueID) -> Resource | None:
        """Return the queue's allocated in this state (read only), or None for a queue without jobs."""
        own = self._own.get(queue_id)
        if own is not None or self._registry is None:
            return own
        return self._registry.live.get(queue_id)

    def writable(self, queue_id: QueueID) -> Resource | None:
        """Return this state's own copy of the queue's allocated, copying it on first use."""
        own = self._own.get(queue_id)
        if own is None:
            shared = self.allocated(queue_id)
            if shared is None:
                return None
            own = self._own[queue_id] = shared.clone()
        return own

    def freeze(self) -> None:
        """Copy every queue still read from the live figures; the state stands alone afterwards."""
        if self._registry is None:
            return
        for queue_id, allocated in self._registry.live.items():
            if queue_id not in self._own:
                self._own[queue_id] = allocated.clone()
        self._registry = None

    def clone(self) -> ProportionState:
        """Return an independent copy."""
        copy = ProportionState(self._registry, {queue_id: res.clone() for queue_id, res in self._own.items()})
        if self._registry is not None:
            self._registry.track(copy)
        return copy
