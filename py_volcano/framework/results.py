"""What a cycle returns: binds, evictions, pipelined tasks, PodGroup statuses and queue figures."""

from __future__ import annotations

from dataclasses import dataclass, field

from py_volcano.api import JobID, PodGroupPhase, Resource, TaskInfo

__all__ = ["CycleResult", "PodGroupStatus", "QueueFigures"]


@dataclass(slots=True)
class QueueFigures:
    """A queue's accounting at the end of a cycle, as the queue plugin computed it."""

    weight: int = 1
    allocated: Resource = field(default_factory=Resource)
    request: Resource = field(default_factory=Resource)
    deserved: Resource | None = None
    capability: Resource | None = None
    real_capability: Resource | None = None
    guarantee: Resource | None = None
    share: float = 0.0
    overused: bool = False
    parent: str = ""


@dataclass(slots=True, frozen=True)
class PodGroupStatus:
    """The status the scheduler would write on a PodGroup after a cycle."""

    phase: PodGroupPhase
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    pending: int = 0
    unschedulable: str = ""
    queue: str = ""
    shadow: bool = False


@dataclass(slots=True)
class CycleResult:
    """Everything a cycle decided; the cache applies it, the simulator records it.

    `plugin_durations` is keyed by (plugin, "OnSessionOpen" or "OnSessionClose"), in seconds.
    """

    binds: list[tuple[TaskInfo, str]] = field(default_factory=list)
    evictions: list[tuple[TaskInfo, str]] = field(default_factory=list)
    pipelined: dict[str, str] = field(default_factory=dict)
    pod_groups: dict[JobID, PodGroupStatus] = field(default_factory=dict)
    queues: dict[str, QueueFigures] = field(default_factory=dict)
    unschedulable: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    plugin_durations: dict[tuple[str, str], float] = field(default_factory=dict)
    action_durations: dict[str, float] = field(default_factory=dict)
