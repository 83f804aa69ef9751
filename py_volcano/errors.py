"""Every error py-volcano raises, in one tree.

    VolcanoError
    ├── ConfigError          a scheduler configuration that cannot be used (file, action/plugin, key)
    ├── ScenarioError        a scenario file that is not a valid scenario (file, object, field)
    ├── ObjectError          a cluster object the scheduler cannot use (kind, ns/name, field)
    │   ├── InvalidQueue
    │   ├── InvalidPodGroup
    │   ├── InvalidPod
    │   ├── InvalidNode
    │   ├── InvalidPriorityClass
    │   ├── InvalidPodDisruptionBudget
    │   ├── InvalidResourceQuota
    │   ├── InvalidHyperNode
    │   └── InvalidNumatopology
    └── ApiError             a failed API server call (status code)
        ├── BindError
        ├── EvictError
        └── StatusWriteError

An ObjectError is reported and the object skipped; it never stops a cycle.
"""

from __future__ import annotations

__all__ = [
    "ApiError",
    "BindError",
    "ConfigError",
    "EvictError",
    "InvalidHyperNode",
    "InvalidNode",
    "InvalidNumatopology",
    "InvalidPod",
    "InvalidPodDisruptionBudget",
    "InvalidPodGroup",
    "InvalidPriorityClass",
    "InvalidQueue",
    "InvalidResourceQuota",
    "ObjectError",
    "ScenarioError",
    "StatusWriteError",
    "VolcanoError",
]


class VolcanoError(Exception):
    """Base of every py-volcano error."""


class ConfigError(VolcanoError):
    """A scheduler configuration that cannot be used."""


class ScenarioError(VolcanoError):
    """A scenario file that is not a valid scenario."""


class ObjectError(VolcanoError):
    """A cluster object the scheduler cannot use; names kind, object and field."""

    kind = "Object"

    def __init__(self, name: str, field: str, reason: str) -> None:
        super().__init__(f"{self.kind} {name}: field {field}: {reason}")
        self.name = name
        self.field = field
        self.reason = reason


class InvalidQueue(ObjectError):
    """A Queue the scheduler cannot use."""

    kind = "Queue"


class InvalidPodGroup(ObjectError):
    """A PodGroup the scheduler cannot use."""

    kind = "PodGroup"


class InvalidPod(ObjectError):
    """A Pod the scheduler cannot use."""

    kind = "Pod"


class InvalidNode(ObjectError):
    """A Node the scheduler cannot use."""

    kind = "Node"


class InvalidPriorityClass(ObjectError):
    """A PriorityClass the scheduler cannot use."""

    kind = "PriorityClass"


class InvalidPodDisruptionBudget(ObjectError):
    """A PodDisruptionBudget the scheduler cannot use."""

    kind = "PodDisruptionBudget"


class InvalidResourceQuota(ObjectError):
    """A ResourceQuota the scheduler cannot use."""

    kind = "ResourceQuota"


class InvalidHyperNode(ObjectError):
    """A HyperNode (topology.volcano.sh) the scheduler cannot use."""

    kind = "HyperNode"


class InvalidNumatopology(ObjectError):
    """A Numatopology (nodeinfo.volcano.sh) the scheduler cannot use."""

    kind = "Numatopology"


class ApiError(VolcanoError):
    """A failed API server call."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class BindError(ApiError):
    """A bind that the API server refused or that did not reach it."""


class EvictError(ApiError):
    """An eviction that the API server refused or that did not reach it."""


class StatusWriteError(ApiError):
    """A status write (PodGroup, Queue, pod condition, event) that failed."""
