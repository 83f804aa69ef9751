"""QueueInfo: what the scheduler reads from a Queue (weight, capability, deserved, guarantee, parent)."""

from __future__ import annotations

from dataclasses import dataclass

from py_volcano.api.resource_info import Resource
from py_volcano.api.types import QueueID, QueueState

__all__ = ["DEFAULT_QUEUE", "ROOT_QUEUE", "QueueInfo"]

DEFAULT_QUEUE = "default"
ROOT_QUEUE = "root"


@dataclass(slots=True, eq=False)
class QueueInfo:
    """A queue; `capability` and `deserved` are None when the spec leaves them unset."""

    name: str
    weight: int = 1
    capability: Resource | None = None
    deserved: Resource | None = None
    guarantee: Resource | None = None
    parent: str = ""
    state: QueueState = QueueState.OPEN
    reclaimable: bool = True
    priority: int = 0
    creation: float = 0.0

    @property
    def uid(self) -> QueueID:
        """Return the queue id (its name)."""
        return QueueID(self.name)

    def is_open(self) -> bool:
        """True when the queue accepts new jobs."""
        return self.state is QueueState.OPEN

    def __repr__(self) -> str:
        return f"Queue({self.name} weight={self.weight})"
