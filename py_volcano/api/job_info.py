"""TaskInfo (one pod) and JobInfo (a PodGroup with its pods), with a per-status task index.

Statuses and the gang counts: docs/semantics.md, "Task statuses" and "Job counts".
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from py_volcano.api.hypernodes import NetworkTopologySpec
from py_volcano.api.numatopology import PinnedContainer
from py_volcano.api.records import hot_record
from py_volcano.api.resource_info import Resource
from py_volcano.api.topology_spread import TopologySpreadConstraint
from py_volcano.api.types import JobID, PodGroupPhase, QueueID, TaskID, TaskStatus, is_allocated_status

__all__ = ["FitErrors", "JobInfo", "PodGroupSpec", "TaskInfo", "Toleration"]

_READY = (TaskStatus.BOUND, TaskStatus.BINDING, TaskStatus.RUNNING, TaskStatus.ALLOCATED, TaskStatus.SUCCEEDED)
_VALID = (*_READY, TaskStatus.PENDING, TaskStatus.PIPELINED)
_READY_SET = frozenset(_READY)


@dataclass(slots=True, frozen=True)
class Toleration:
    """One pod toleration."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, key: str, value: str, effect: str) -> bool:
        """Match a taint as Kubernetes' ToleratesTaint: empty effect and empty key (with Exists) match all."""
        if self.effect and self.effect != effect:
            return False
        if self.key and self.key != key:
            return False
        if self.operator == "Exists":
            return True
        return self.operator in ("Equal", "") and self.value == value


class TaskInfo:
    """One pod as the scheduler sees it; the spec fields are shared between clones and never mutated."""

    __slots__ = (
        "affinity",
        "annotations",
        "best_effort",
        "bind_annotations",
        "container_limits",
        "creation",
        "host_ports",
        "index",
        "init_resreq",
        "job",
        "labels",
        "name",
        "namespace",
        "node_name",
        "node_selector",
        "pinned_cpus",
        "preemptable",
        "preemption_never",
        "priority",
        "priority_class_name",
        "resource_claims",
        "resreq",
        "role",
        "schedulable",
        "scheduled_at",
        "status",
        "tolerations",
        "topology_spread",
        "uid",
    )

    def __init__(
        self,
        *,
        uid: TaskID,
        name: str,
        namespace: str,
        resreq: Resource,
        job: JobID | None = None,
        node_name: str = "",
        status: TaskStatus = TaskStatus.PENDING,
        priority: int = 0,
        priority_class_name: str = "",
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        node_selector: Mapping[str, str] | None = None,
        affinity: Mapping[str, Any] | None = None,
        tolerations: tuple[Toleration, ...] = (),
        host_ports: tuple[tuple[str, str, int], ...] = (),
        preemptable: bool = True,
        preemption_never: bool = False,
        schedulable: bool = True,
        creation: float = 0.0,
        role: str = "",
        scheduled_at: float | None = None,
        topology_spread: tuple[TopologySpreadConstraint, ...] = (),
        pinned_cpus: tuple[PinnedContainer, ...] | None = None,
        container_limits: tuple[Resource, ...] = (),
        resource_claims: tuple[str, ...] = (),
    ) -> None:
        self.uid = uid
        self.name = name
        self.namespace = namespace
        self.resreq = resreq
        # Volcano's NewTaskInfo gives Resreq and InitResreq the same resource (GetPodResourceRequest, init
        # containers included): both names are kept so each reader reads the one Volcano reads there.
        self.init_resreq = resreq
        self.job = job
        self.node_name = node_name
        self.status = status
        self.priority = priority
        self.priority_class_name = priority_class_name
        self.labels: Mapping[str, str] = labels or {}
        self.annotations: Mapping[str, str] = annotations or {}
        self.node_selector: Mapping[str, str] = node_selector or {}
        self.affinity: Mapping[str, Any] = affinity or {}
        self.tolerations = tolerations
        self.host_ports = host_ports
        self.preemptable = preemptable
        self.preemption_never = preemption_never
        self.schedulable = schedulable
        self.best_effort = resreq.is_empty()
        self.creation = creation
        self.role = role
        self.scheduled_at = scheduled_at  # when PodScheduled turned True (epoch s); cdp reads it
        self.topology_spread = topology_spread
        self.pinned_cpus = pinned_cpus  # whole CPUs per container of a Guaranteed pod (numa-aware)
        self.index = _name_index(name)
        #: Each regular container's limits, when some container limits a scalar resource (deviceshare's
        #: vGPU requests are per container); empty otherwise.
        self.container_limits = container_limits
        self.resource_claims = resource_claims  # names of spec.resourceClaims (Dynamic Resource Allocation)
        #: Pod annotations this placement writes before the bind (deviceshare's device choice); a plugin
        #: replaces the map, never mutates it, so clones may share it.
        self.bind_annotations: Mapping[str, str] = _NO_ANNOTATIONS

    def clone(self) -> TaskInfo:
        """Return a copy whose status and node can change independently.

        Spelled out slot by slot: a snapshot clones every pod, and this is three times faster than a
        loop over `__slots__` (tests check that every slot is copied).
        """
        copy = _new_task(TaskInfo)
        copy.affinity = self.affinity
        copy.annotations = self.annotations
        copy.best_effort = self.best_effort
        copy.bind_annotations = self.bind_annotations
        copy.container_limits = self.container_limits
        copy.creation = self.creation
        copy.host_ports = self.host_ports
        copy.index = self.index
        copy.init_resreq = self.init_resreq
        copy.job = self.job
        copy.labels = self.labels
        copy.name = self.name
        copy.namespace = self.namespace
        copy.node_name = self.node_name
        copy.node_selector = self.node_selector
        copy.pinned_cpus = self.pinned_cpus
        copy.preemptable = self.preemptable
        copy.preemption_never = self.preemption_never
        copy.priority = self.priority
        copy.priority_class_name = self.priority_class_name
        copy.resource_claims = self.resource_claims
        copy.resreq = self.resreq
        copy.role = self.role
        copy.schedulable = self.schedulable
        copy.scheduled_at = self.scheduled_at
        copy.status = self.status
        copy.tolerations = self.tolerations
        copy.topology_spread = self.topology_spread
        copy.uid = self.uid
        return copy

    @property
    def key(self) -> str:
        """Return `ns/name`."""
        return f"{self.namespace}/{self.name}"

    def __repr__(self) -> str:
        return (
            f"Task({self.namespace}/{self.name} {self.status.value}{' on ' + self.node_name if self.node_name else ''})"
        )


_new_task = object.__new__
_NO_NAMES: frozenset[str] = frozenset()
_NO_ANNOTATIONS: Mapping[str, str] = MappingProxyType({})


_DECIMAL = re.compile(r"[+-]?[0-9]+")
_INT64 = range(-(2**63), 2**63)


def _name_index(name: str) -> int | None:
    """The pod's index in its task, as Volcano's GetPodIndexUnderTask and strconv.Atoi read it: the last
    of at least three dash-separated parts (`job-task-3`), a decimal integer that fits 64 bits."""
    parts = name.split("-")
    if len(parts) < 3 or not _DECIMAL.fullmatch(parts[-1]):
        return None
    index = int(parts[-1])
    return index if index in _INT64 else None


@hot_record
class PodGroupSpec:
    """What the scheduler reads from a PodGroup (or the one-pod group of a pod without one)."""

    name: str
    namespace: str
    queue: str
    min_member: int = 1
    min_resources: Resource | None = None
    min_task_member: Mapping[str, int] = field(default_factory=dict)
    priority_class_name: str = ""
    phase: PodGroupPhase = PodGroupPhase.PENDING
    creation: float = 0.0
    uid: str = ""
    shadow: bool = False
    conditions: tuple[Mapping[str, Any], ...] = ()
    annotations: Mapping[str, str] = field(default_factory=dict)
    min_resource_list: Mapping[str, float] = field(default_factory=dict)
    """`spec.minResources` as written, name -> amount in base units: quota names (`requests.cpu`,
    `count/pods`), which `min_resources` leaves out, included (the resourcequota plugin compares them)."""
    labels: Mapping[str, str] = field(default_factory=dict)
    network_topology: NetworkTopologySpec | None = None
    """`spec.networkTopology`: the job is placed inside one hypernode (hard) or prefers one (soft)."""
    key: JobID = field(init=False, repr=False, compare=False)
    """The job id, `ns/name`."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", JobID(f"{self.namespace}/{self.name}"))


@dataclass(slots=True)
class FitErrors:
    """Why a task fits no node: reason -> number of nodes, plus a task-level reason."""

    nodes: dict[str, int] = field(default_factory=dict)
    reason: str = ""

    def add(self, reason: str, count: int = 1) -> None:
        """Count `reason` for `count` more nodes."""
        self.nodes[reason] = self.nodes.get(reason, 0) + count

    def summary(self) -> str:
        """Return `0/N nodes are available: 2 Insufficient cpu, 1 node(s) had untolerated taint`."""
        if self.reason:
            return self.reason
        total = sum(self.nodes.values())
        parts = [f"{count} {reason}" for reason, count in sorted(self.nodes.items(), key=lambda kv: (-kv[1], kv[0]))]
        return f"0/{total} nodes are available: " + ", ".join(parts) if parts else "no nodes available"


class JobInfo:
    """A PodGroup and its tasks, indexed by status; `allocated` sums tasks that hold node resources."""

    __slots__ = (
        "allocated",
        "best_effort_pending",
        "creation",
        "fit_errors",
        "job_fit_error",
        "min_available",
        "min_resources",
        "name",
        "namespace",
        "phase",
        "pod_group",
        "priority",
        "queue",
        "ready_tasks",
        "scalars",
        "task_min_available",
        "task_status_index",
        "tasks",
        "total_request",
        "uid",
        "version",
    )

    def __init__(self, spec: PodGroupSpec, *, priority: int = 0) -> None:
        self.uid: JobID = spec.key
        self.name = spec.name
        self.namespace = spec.namespace
        self.queue = QueueID(spec.queue)
        self.min_available = spec.min_member
        self.min_resources = spec.min_resources
        self.task_min_available: Mapping[str, int] = spec.min_task_member
        self.phase = spec.phase
        self.priority = priority
        self.creation = spec.creation
        self.pod_group = spec
        self.tasks: dict[TaskID, TaskInfo] = {}
        self.task_status_index: dict[TaskStatus, dict[TaskID, TaskInfo]] = {}
        self.best_effort_pending = 0
        """Pending tasks that request nothing, counted as the index changes: job order asks on every
        comparison (gang's `is_ready`)."""
        self.ready_tasks = 0
        """Tasks in a ready status (`ready_task_num`), counted as the index changes, for the same reason."""
        self.allocated = Resource()
        self.total_request = Resource()
        self.fit_errors: dict[TaskID, FitErrors] = {}
        self.job_fit_error = ""
        self.version = 0
        """Counts the changes of `tasks` and their statuses: a job built for one snapshot is taken into
        the next only while it is unchanged (`BuiltJobs`)."""
        self.scalars: frozenset[str] | None = None
        """The scalar resources the tasks name in their init requests, once `scalar_names` asked."""

    def clone(self) -> JobInfo:
        """Return a copy with cloned tasks."""
        copy = JobInfo(self.pod_group, priority=self.priority)
        copy.queue = self.queue
        copy.phase = self.phase
        copy.min_available = self.min_available
        for task in self.tasks.values():
            copy.add_task(task.clone())
        return copy

    # Task index -----------------------------------------------------------------------------

    def add_task(self, task: TaskInfo) -> None:
        """Add a task and index it by status."""
        self.tasks[task.uid] = task
        self._index(task)
        self.total_request.add(task.resreq)
        self.version += 1
        self.scalars = None

    def scalar_names(self) -> frozenset[str]:
        """Return the scalar resources the job's tasks name in their init requests (kept until a task is added)."""
        names = self.scalars
        if names is None:
            names = _NO_NAMES
            for task in self.tasks.values():
                if task.init_resreq.scalars:
                    names = names.union(task.init_resreq.scalars)
            self.scalars = names
        return names

    def update_task_status(self, task: TaskInfo, status: TaskStatus) -> None:
        """Move the job's copy of `task` (and `task` itself) to `status`, keeping the index and `allocated` right."""
        own = self.tasks.get(task.uid, task)
        self.version += 1
        self._unindex(own)
        own.status = status
        task.status = status
        self._index(own)

    def _index(self, task: TaskInfo) -> None:
        self.task_status_index.setdefault(task.status, {})[task.uid] = task
        if task.status in _READY_SET:
            self.ready_tasks += 1
        if is_allocated_status(task.status):
            self.allocated.add(task.resreq)
        elif task.status is TaskStatus.PENDING and task.best_effort:
            self.best_effort_pending += 1

    def _unindex(self, task: TaskInfo) -> None:
        bucket = self.task_status_index.get(task.status)
        if bucket is not None:
            if bucket.pop(task.uid, None) is not None:
                if task.status in _READY_SET:
                    self.ready_tasks -= 1
                elif task.status is TaskStatus.PENDING and task.best_effort:
                    self.best_effort_pending -= 1
            if not bucket:
                del self.task_status_index[task.status]
        if is_allocated_status(task.status):
            self.allocated.sub_without_assert(task.resreq)

    def tasks_with(self, *statuses: TaskStatus) -> Iterable[TaskInfo]:
        """Yield the tasks in any of `statuses`."""
        for status in statuses:
            yield from self.task_status_index.get(status, {}).values()

    def count(self, *statuses: TaskStatus) -> int:
        """Return the number of tasks in any of `statuses`."""
        index = self.task_status_index
        if len(index) == 1:  # most jobs have all their tasks in one status
            status, bucket = next(iter(index.items()))
            return len(bucket) if status in statuses else 0
        total = 0
        for status in statuses:
            found = index.get(status)
            if found:
                total += len(found)
        return total

    # Gang arithmetic ------------------------------------------------------------------------

    def ready_task_num(self) -> int:
        """Tasks that hold resources or finished: Bound, Binding, Running, Allocated, Succeeded."""
        return self.ready_tasks

    def waiting_task_num(self) -> int:
        """Tasks pipelined onto resources that are being released."""
        return self.count(TaskStatus.PIPELINED)

    def pending_best_effort_task_num(self) -> int:
        """Pending tasks that request nothing."""
        return self.best_effort_pending

    def valid_task_num(self) -> int:
        """Tasks that can still count towards the gang."""
        return self.count(*_VALID)

    def role_counts(self, statuses: tuple[TaskStatus, ...], *, best_effort: bool = False) -> dict[str, int]:
        """Count the tasks in `statuses` per role; with `best_effort`, pending best-effort tasks count too."""
        counts: dict[str, int] = {}
        for task in self.tasks_with(*statuses):
            counts[task.role] = counts.get(task.role, 0) + 1
        if best_effort:
            for task in self.tasks_with(TaskStatus.PENDING):
                if task.best_effort:
                    counts[task.role] = counts.get(task.role, 0) + 1
        return counts

    def roles_are_loose(self) -> bool:
        """True when minMember is below the sum of minTaskMember: Volcano then checks no role's minimum."""
        return self.min_available < sum(self.task_min_available.values())

    def _roles_meet(self, statuses: tuple[TaskStatus, ...], *, best_effort: bool = False) -> bool:
        if not self.task_min_available or self.roles_are_loose():
            return True
        counts = self.role_counts(statuses, best_effort=best_effort)
        return all(counts.get(role, 0) >= minimum for role, minimum in self.task_min_available.items())

    def check_task_valid(self) -> bool:
        """True when every role in minTaskMember has enough valid tasks."""
        return self._roles_meet(_VALID)

    def check_task_ready(self) -> bool:
        """True when every role in minTaskMember has enough ready (or pending best-effort) tasks."""
        return self._roles_meet(_READY, best_effort=True)

    def check_task_pipelined(self) -> bool:
        """True when every role in minTaskMember has enough ready, pipelined or pending best-effort tasks."""
        return self._roles_meet((*_READY, TaskStatus.PIPELINED), best_effort=True)

    def need_continue_allocating(self, failed_roles: Collection[str]) -> bool:
        """Whether allocating the job's other tasks can still make its gang after tasks of `failed_roles`
        found no node (Volcano's NeedContinueAllocating; docs/semantics.md, "Allocate").

        Never when minMember covers every task. With loose roles, while ready tasks plus the pending tasks
        of the other roles reach minMember; otherwise while every failed role already has its minimum.
        """
        if self.min_available >= len(self.tasks):
            return False
        if self.roles_are_loose():
            left = sum(1 for task in self.tasks_with(TaskStatus.PENDING) if task.role not in failed_roles)
            return self.ready_task_num() + left >= self.min_available
        placed = self.role_counts(_READY, best_effort=True)
        return all(placed.get(role, 0) >= self.task_min_available.get(role, 0) for role in failed_roles)

    def is_ready(self) -> bool:
        """Ready tasks (and pending best-effort ones) reach minAvailable."""
        return self.ready_tasks + self.best_effort_pending >= self.min_available

    def is_pipelined(self) -> bool:
        """Pipelined, ready and pending best-effort tasks reach minAvailable (Volcano's IsPipelined)."""
        occupied = self.waiting_task_num() + self.ready_task_num()
        return occupied + self.pending_best_effort_task_num() >= self.min_available

    def is_starving(self) -> bool:
        """Ready plus pipelined tasks fall short of minAvailable."""
        return self.waiting_task_num() + self.ready_task_num() < self.min_available

    def is_pending(self) -> bool:
        """True while the PodGroup has not been admitted (phase Pending)."""
        return self.phase is PodGroupPhase.PENDING

    def __repr__(self) -> str:
        return f"Job({self.uid} queue={self.queue} phase={self.phase.value} tasks={len(self.tasks)})"
