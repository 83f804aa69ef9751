"""NodeInfo: a node's static spec and its Idle/Used/Releasing/Pipelined bookkeeping.

Identities (docs/semantics.md, "Node accounting"): Idle + Used = Allocatable; FutureIdle = Idle +
Releasing - Pipelined. The pod count is tracked beside the resources (`used_pods`, `releasing_pods`,
`pipelined_pods`) against `allocatable.max_task_num`. When a `NodeArrays` is attached, every change is
written through to its row.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import structlog

from py_volcano.api.job_info import TaskInfo
from py_volcano.api.node_usage import NodeUsage
from py_volcano.api.numatopology import NumaTopology
from py_volcano.api.resource_info import MIN_RESOURCE, Resource
from py_volcano.api.types import TaskID, TaskStatus

if TYPE_CHECKING:
    from py_volcano.api.node_arrays import NodeArrays

__all__ = ["NodeInfo", "NodeSpec", "Taint"]

log = structlog.get_logger(__name__)


@dataclass(slots=True, frozen=True)
class Taint:
    """One node taint."""

    key: str
    value: str = ""
    effect: str = "NoSchedule"


@dataclass(slots=True, frozen=True)
class NodeSpec:
    """What the scheduler reads from a Node object."""

    name: str
    allocatable: Resource
    capacity: Resource
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    ready: bool = True
    annotations: Mapping[str, str] = field(default_factory=dict)


class NodeInfo:
    """A node in a snapshot; tasks are the node's own clones of the job's tasks."""

    __slots__ = (
        "_arrays",
        "affine",
        "allocatable",
        "capacity",
        "idle",
        "index",
        "labels",
        "name",
        "numa",
        "pipelined",
        "pipelined_pods",
        "ready",
        "releasing",
        "releasing_pods",
        "spec",
        "taints",
        "tasks",
        "unschedulable",
        "usage",
        "used",
        "used_pods",
        "version",
    )

    def __init__(self, spec: NodeSpec) -> None:
        self.spec = spec
        self.name = spec.name
        self.allocatable = spec.allocatable
        self.capacity = spec.capacity
        self.labels = spec.labels
        self.taints = spec.taints
        self.unschedulable = spec.unschedulable
        self.ready = spec.ready
        self.idle = spec.allocatable.clone()
        self.used = Resource()
        self.releasing = Resource()
        self.pipelined = Resource()
        self.used_pods = 0
        self.releasing_pods = 0
        self.pipelined_pods = 0
        self.tasks: dict[TaskID, TaskInfo] = {}
        self.affine = 0
        """How many of `tasks` carry affinity terms (a node without any needs no look for them)."""
        self.version = 0
        """Counts the changes of `tasks` (`add_task`, `remove_task`): a node built for one snapshot is
        taken into the next only while it is unchanged (`BuiltNodes`)."""
        self.index = -1
        self._arrays: NodeArrays | None = None
        self.usage: NodeUsage | None = None
        """Measured CPU and memory load (the cache's metrics poller); None when never measured."""
        self.numa: NumaTopology | None = None
        """The node's Numatopology (nodeinfo.volcano.sh), read by numa-aware; None when it has none."""

    def clone(self) -> NodeInfo:
        """Return a copy with cloned tasks and no arrays attached."""
        copy = NodeInfo(self.spec)
        copy.usage = self.usage
        copy.numa = self.numa
        for task in self.tasks.values():
            copy.add_task(task)
        return copy

    def attach(self, arrays: NodeArrays, index: int, *, write: bool = True) -> None:
        """Write this node's state through to row `index` of `arrays` from now on (and now, with `write`)."""
        self._arrays = arrays
        self.index = index
        if write:
            arrays.write(self)

    def detach(self) -> None:
        """Stop writing through to the arrays `attach` named."""
        self._arrays = None
        self.index = -1

    def future_idle(self) -> Resource:
        """Return Idle + Releasing - Pipelined."""
        return self.idle.clone().add(self.releasing).sub_without_assert(self.pipelined)

    @property
    def idle_pods(self) -> int:
        """Pod slots not used."""
        return self.allocatable.max_task_num - self.used_pods

    @property
    def future_idle_pods(self) -> int:
        """Pod slots free once releasing pods are gone and pipelined pods arrive."""
        return self.idle_pods + self.releasing_pods - self.pipelined_pods

    def add_task(self, task: TaskInfo) -> None:
        """Account a clone of `task` on this node; on error (already present) the node is unchanged."""
        if task.uid in self.tasks:
            raise ValueError(f"task {task.key} already on node {self.name}")
        held = task.clone()
        held.node_name = self.name
        pipelined = held.status is TaskStatus.PIPELINED
        releasing = held.status is TaskStatus.RELEASING
        if pipelined:
            self.pipelined.add(held.resreq)
            self.pipelined_pods += 1
        else:
            self._allocate_idle(held)
            self.used.add(held.resreq)
            self.used_pods += 1
            if releasing:
                self.releasing.add(held.resreq)
                self.releasing_pods += 1
        self.tasks[held.uid] = held
        if held.affinity:
            self.affine += 1
        self.version += 1
        self._sync(idle=not pipelined, releasing=releasing, pipelined=pipelined)

    def remove_task(self, task: TaskInfo) -> None:
        """Undo `add_task` for the node's copy of `task`; a task not on the node is ignored."""
        held = self.tasks.pop(task.uid, None)
        if held is None:
            return
        if held.affinity:
            self.affine -= 1
        self.version += 1
        pipelined = held.status is TaskStatus.PIPELINED
        releasing = held.status is TaskStatus.RELEASING
        if pipelined:
            self.pipelined.sub_without_assert(held.resreq)
            self.pipelined_pods -= 1
        else:
            self.idle.add(held.resreq)
            self.used.sub_without_assert(held.resreq)
            self.used_pods -= 1
            if releasing:
                self.releasing.sub_without_assert(held.resreq)
                self.releasing_pods -= 1
        self._sync(idle=not pipelined, releasing=releasing, pipelined=pipelined)

    def update_task(self, task: TaskInfo) -> None:
        """Re-account `task` after its status changed."""
        self.remove_task(task)
        self.add_task(task)

    def _allocate_idle(self, task: TaskInfo) -> None:
        idle = self.idle.sub_without_assert(task.resreq)
        if idle.milli_cpu < -MIN_RESOURCE or idle.memory < -MIN_RESOURCE:
            log.debug("idle_turns_negative", node=self.name, task=task.key, idle=repr(idle))

    def _sync(self, *, idle: bool, releasing: bool, pipelined: bool) -> None:
        if self._arrays is not None:
            self._arrays.write(self, idle=idle, releasing=releasing, pipelined=pipelined)

    def __repr__(self) -> str:
        return f"Node({self.name} idle=<{self.idle}> tasks={len(self.tasks)})"
