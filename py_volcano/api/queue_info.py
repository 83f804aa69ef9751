"""QueueInfo: what the scheduler reads from a Queue (weight, capability, deserved, guarantee, parent, node-group
affinity)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from py_volcano.api.resource_info import Resource
from py_volcano.api.types import QueueID, QueueState

__all__ = ["DEFAULT_QUEUE", "ROOT_QUEUE", "NodeGroupAffinity", "QueueInfo"]

DEFAULT_QUEUE = "default"
ROOT_QUEUE = "root"


@dataclass(slots=True, frozen=True)
class NodeGroupAffinity:
    """A Queue's `spec.affinity`: the node groups (`volcano.sh/nodegroup-name` values) its pods must, should,
    must not and should not run in (`nodeGroupAffinity` / `nodeGroupAntiAffinity`, required and preferred)."""

    required: tuple[str, ...] = ()
    preferred: tuple[str, ...] = ()
    anti_required: tuple[str, ...] = ()
    anti_preferred: tuple[str, ...] = ()


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
    state_set: bool = True
    """False when the Queue has no `status.state` yet: the scheduler writes `Open` then, and only then."""
    resource_version: str = ""
    """The `metadata.resourceVersion` read: the default state is written only onto that version."""
    reclaimable: bool = True
    priority: int = 0
    creation: float = 0.0
    affinity: NodeGroupAffinity | None = None
    annotations: Mapping[str, str] = field(default_factory=dict)
    hierarchy: str = ""
    """The annotation `volcano.sh/hierarchy` (`root/eng/dev`): the queue's path for hierarchical drf."""
    hierarchy_weights: str = ""
    """The annotation `volcano.sh/hierarchy-weights` (`100/50/50`): a weight per level of `hierarchy`."""

    @property
    def uid(self) -> QueueID:
        """Return the queue id (its name)."""
        return QueueID(self.name)

    def is_open(self) -> bool:
        """True when the queue accepts new jobs."""
        return self.state is QueueState.OPEN

    def __repr__(self) -> str:
        return f"Queue({self.name} weight={self.weight})"
