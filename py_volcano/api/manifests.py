"""Parse plain Kubernetes manifests (dicts, as `kubectl apply` takes them) into scheduler specs.

This is the edge where untrusted objects enter: every parser raises an `ObjectError` subclass that
names the object and the field, and never lets a malformed object through half-read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from py_volcano.api.job_info import PodGroupSpec, TaskInfo, Toleration
from py_volcano.api.node_info import NodeSpec, Taint
from py_volcano.api.queue_info import DEFAULT_QUEUE, QueueInfo
from py_volcano.api.resource_info import Resource
from py_volcano.api.types import PodGroupPhase, QueueState, TaskID, TaskStatus
from py_volcano.errors import (
    InvalidNode,
    InvalidPod,
    InvalidPodDisruptionBudget,
    InvalidPodGroup,
    InvalidPriorityClass,
    InvalidQueue,
    ObjectError,
)

__all__ = [
    "GROUP_NAME_ANNOTATION",
    "PREEMPTABLE_KEY",
    "QUEUE_NAME_ANNOTATION",
    "TASK_SPEC_ANNOTATION",
    "ParsedPod",
    "PdbSpec",
    "PriorityClassSpec",
    "parse_node",
    "parse_pdb",
    "parse_pod",
    "parse_pod_group",
    "parse_priority_class",
    "parse_queue",
    "parse_timestamp",
]

GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
QUEUE_NAME_ANNOTATION = "scheduling.volcano.sh/queue-name"
TASK_SPEC_ANNOTATION = "volcano.sh/task-spec"
PREEMPTABLE_KEY = "volcano.sh/preemptable"


@dataclass(slots=True, frozen=True)
class PriorityClassSpec:
    """A PriorityClass: value, whether it is the global default, and its preemption policy."""

    name: str
    value: int
    global_default: bool = False
    preemption_never: bool = False


@dataclass(slots=True, frozen=True)
class PdbSpec:
    """A PodDisruptionBudget: the pods it selects and how many may be disrupted now."""

    name: str
    namespace: str
    selector: Mapping[str, Any] = field(default_factory=dict)
    min_available: int | str | None = None
    max_unavailable: int | str | None = None
    disruptions_allowed: int | None = None

    @property
    def key(self) -> str:
        """Return `ns/name`."""
        return f"{self.namespace}/{self.name}"


@dataclass(slots=True, frozen=True)
class ParsedPod:
    """A pod's task plus what links it to a job: its group annotation, queue annotation, scheduler."""

    task: TaskInfo
    group: str
    queue: str
    scheduler_name: str
    uid: str


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _name(obj: Mapping[str, Any], *, namespaced: bool) -> str:
    meta = _meta(obj)
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        return "<unnamed>"
    return f"{meta.get('namespace') or 'default'}/{name}" if namespaced else name


def _require_name(obj: Mapping[str, Any], error: type[ObjectError], *, namespaced: bool) -> str:
    name = _name(obj, namespaced=namespaced)
    if name == "<unnamed>":
        raise error(name, "metadata.name", "missing")
    return name


def parse_timestamp(value: object) -> float | None:
    """Return an RFC 3339 timestamp as epoch seconds, or None when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _resources(value: object, error: type[ObjectError], name: str, path: str) -> Resource:
    if value is None:
        return Resource()
    if not isinstance(value, Mapping):
        raise error(name, path, "expected a map of resource quantities")
    try:
        return Resource.from_list(value)
    except ValueError as exc:
        key, _, reason = str(exc).partition(": ")
        raise error(name, f"{path}.{key}", reason) from None


def _dict(value: object, error: type[ObjectError], name: str, path: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise error(name, path, "expected a map")
    return value


def _int(value: object, error: type[ObjectError], name: str, path: str, default: int, minimum: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise error(name, path, f"expected an integer, got {value!r}")
    if value < minimum:
        raise error(name, path, f"must be >= {minimum}, got {value}")
    return value


# Pods -----------------------------------------------------------------------------------------


def _container_requests(container: Mapping[str, Any], name: str, path: str) -> Resource:
    resources = _dict(container.get("resources"), InvalidPod, name, f"{path}.resources")
    limits = _dict(resources.get("limits"), InvalidPod, name, f"{path}.resources.limits")
    requests = dict(limits)
    requests.update(_dict(resources.get("requests"), InvalidPod, name, f"{path}.resources.requests"))
    return _resources(requests, InvalidPod, name, f"{path}.resources.requests")


def _containers(spec: Mapping[str, Any], key: str, name: str) -> list[Mapping[str, Any]]:
    containers = spec.get(key) or []
    if not isinstance(containers, list) or not all(isinstance(c, Mapping) for c in containers):
        raise InvalidPod(name, f"spec.{key}", "expected a list of containers")
    return containers


def pod_requests(spec: Mapping[str, Any], name: str) -> tuple[Resource, Resource]:
    """Return (resreq, init_resreq): the sum of containers, and its max with each init container, plus overhead."""
    resreq = Resource()
    for i, container in enumerate(_containers(spec, "containers", name)):
        resreq.add(_container_requests(container, name, f"spec.containers[{i}]"))
    init_resreq = resreq.clone()
    for i, container in enumerate(_containers(spec, "initContainers", name)):
        init_resreq.set_max_resource(_container_requests(container, name, f"spec.initContainers[{i}]"))
    overhead = _resources(spec.get("overhead"), InvalidPod, name, "spec.overhead")
    resreq.add(overhead)
    init_resreq.add(overhead)
    return resreq, init_resreq


def _task_status(phase: str, node_name: str, deleting: bool) -> TaskStatus:
    if phase in ("Running", "Pending") and deleting:
        return TaskStatus.RELEASING
    if phase == "Running":
        return TaskStatus.RUNNING
    if phase == "Pending":
        return TaskStatus.BOUND if node_name else TaskStatus.PENDING
    if phase == "Succeeded":
        return TaskStatus.SUCCEEDED
    if phase == "Failed":
        return TaskStatus.FAILED
    return TaskStatus.UNKNOWN


def _tolerations(spec: Mapping[str, Any], name: str) -> tuple[Toleration, ...]:
    raw = spec.get("tolerations") or []
    if not isinstance(raw, list):
        raise InvalidPod(name, "spec.tolerations", "expected a list")
    return tuple(
        Toleration(
            key=str(t.get("key") or ""),
            operator=str(t.get("operator") or "Equal"),
            value=str(t.get("value") or ""),
            effect=str(t.get("effect") or ""),
        )
        for t in raw
        if isinstance(t, Mapping)
    )


def _host_ports(spec: Mapping[str, Any], name: str) -> tuple[tuple[str, str, int], ...]:
    ports: list[tuple[str, str, int]] = []
    for container in _containers(spec, "containers", name):
        for port in container.get("ports") or []:
            if isinstance(port, Mapping) and port.get("hostPort"):
                ports.append(
                    (str(port.get("hostIP") or "0.0.0.0"), str(port.get("protocol") or "TCP"), int(port["hostPort"]))
                )
    return tuple(ports)


def _pod_priority(spec: Mapping[str, Any], priority_classes: Mapping[str, PriorityClassSpec]) -> tuple[int, bool]:
    class_name = spec.get("priorityClassName") or ""
    pc = priority_classes.get(class_name) if class_name else _global_default(priority_classes)
    never = spec.get("preemptionPolicy") == "Never" or bool(pc and pc.preemption_never)
    if isinstance(spec.get("priority"), int):
        return int(spec["priority"]), never
    return (pc.value if pc else 0), never


def _global_default(priority_classes: Mapping[str, PriorityClassSpec]) -> PriorityClassSpec | None:
    return next((pc for pc in priority_classes.values() if pc.global_default), None)


def parse_pod(
    obj: Mapping[str, Any], *, priority_classes: Mapping[str, PriorityClassSpec], creation: float = 0.0
) -> ParsedPod:
    """Parse a Pod; `creation` is used when the manifest carries no creationTimestamp."""
    name = _require_name(obj, InvalidPod, namespaced=True)
    meta = _meta(obj)
    spec = _dict(obj.get("spec"), InvalidPod, name, "spec")
    status = _dict(obj.get("status"), InvalidPod, name, "status")
    labels = _dict(meta.get("labels"), InvalidPod, name, "metadata.labels")
    annotations = _dict(meta.get("annotations"), InvalidPod, name, "metadata.annotations")
    resreq, init_resreq = pod_requests(spec, name)
    node_name = str(spec.get("nodeName") or "")
    priority, never = _pod_priority(spec, priority_classes)
    uid = str(meta.get("uid") or meta["name"])
    preemptable = str(labels.get(PREEMPTABLE_KEY, annotations.get(PREEMPTABLE_KEY, "true"))).lower() != "false"
    task = TaskInfo(
        uid=TaskID(str(meta.get("uid") or name)),
        name=str(meta["name"]),
        namespace=str(meta.get("namespace") or "default"),
        resreq=resreq,
        init_resreq=init_resreq,
        node_name=node_name,
        status=_task_status(str(status.get("phase") or "Pending"), node_name, bool(meta.get("deletionTimestamp"))),
        priority=priority,
        priority_class_name=str(spec.get("priorityClassName") or ""),
        labels=labels,
        annotations=annotations,
        node_selector=_dict(spec.get("nodeSelector"), InvalidPod, name, "spec.nodeSelector"),
        affinity=_dict(spec.get("affinity"), InvalidPod, name, "spec.affinity"),
        tolerations=_tolerations(spec, name),
        host_ports=_host_ports(spec, name),
        preemptable=preemptable,
        preemption_never=never,
        creation=parse_timestamp(meta.get("creationTimestamp")) or creation,
        role=str(annotations.get(TASK_SPEC_ANNOTATION, "")),
    )
    return ParsedPod(
        task=task,
        group=str(annotations.get(GROUP_NAME_ANNOTATION) or ""),
        queue=str(annotations.get(QUEUE_NAME_ANNOTATION) or DEFAULT_QUEUE),
        scheduler_name=str(spec.get("schedulerName") or "default-scheduler"),
        uid=uid,
    )


# Nodes, queues, groups, classes, budgets --------------------------------------------------------


def parse_node(obj: Mapping[str, Any]) -> NodeSpec:
    """Parse a Node: allocatable (else capacity), labels, taints, unschedulable, Ready condition."""
    name = _require_name(obj, InvalidNode, namespaced=False)
    spec = _dict(obj.get("spec"), InvalidNode, name, "spec")
    status = _dict(obj.get("status"), InvalidNode, name, "status")
    if status.get("allocatable") is None:
        capacity = _resources(status.get("capacity"), InvalidNode, name, "status.capacity")
        allocatable = capacity.clone()
    else:
        allocatable = _resources(status.get("allocatable"), InvalidNode, name, "status.allocatable")
        capacity = _resources(status.get("capacity"), InvalidNode, name, "status.capacity")
    taints = []
    for i, taint in enumerate(spec.get("taints") or []):
        if not isinstance(taint, Mapping) or not taint.get("key"):
            raise InvalidNode(name, f"spec.taints[{i}].key", "missing")
        taints.append(Taint(str(taint["key"]), str(taint.get("value") or ""), str(taint.get("effect") or "NoSchedule")))
    ready = True
    for condition in status.get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == "Ready":
            ready = condition.get("status") == "True"
    return NodeSpec(
        name=name,
        allocatable=allocatable,
        capacity=capacity,
        labels=_dict(_meta(obj).get("labels"), InvalidNode, name, "metadata.labels"),
        taints=tuple(taints),
        unschedulable=bool(spec.get("unschedulable")),
        ready=ready,
    )


def parse_queue(obj: Mapping[str, Any], *, creation: float = 0.0) -> QueueInfo:
    """Parse a Queue: weight (>= 1), capability, deserved, guarantee, parent, state, reclaimable, priority."""
    name = _require_name(obj, InvalidQueue, namespaced=False)
    spec = _dict(obj.get("spec"), InvalidQueue, name, "spec")
    status = _dict(obj.get("status"), InvalidQueue, name, "status")
    guarantee = _dict(spec.get("guarantee"), InvalidQueue, name, "spec.guarantee")
    state_text = status.get("state") or spec.get("state") or "Open"
    try:
        state = QueueState(state_text)
    except ValueError:
        raise InvalidQueue(name, "status.state", f"unknown state {state_text!r}") from None
    reclaimable = spec.get("reclaimable", True)
    if not isinstance(reclaimable, bool):
        raise InvalidQueue(name, "spec.reclaimable", f"expected true or false, got {reclaimable!r}")
    return QueueInfo(
        name=name,
        weight=_int(spec.get("weight"), InvalidQueue, name, "spec.weight", 1, 1),
        capability=_resources(spec["capability"], InvalidQueue, name, "spec.capability")
        if spec.get("capability")
        else None,
        deserved=_resources(spec["deserved"], InvalidQueue, name, "spec.deserved") if spec.get("deserved") else None,
        guarantee=_resources(guarantee.get("resource"), InvalidQueue, name, "spec.guarantee.resource")
        if guarantee.get("resource")
        else None,
        parent=str(spec.get("parent") or ""),
        state=state,
        reclaimable=reclaimable,
        priority=_int(spec.get("priority"), InvalidQueue, name, "spec.priority", 0, -(2**31)),
        creation=parse_timestamp(_meta(obj).get("creationTimestamp")) or creation,
    )


def parse_pod_group(obj: Mapping[str, Any], *, creation: float = 0.0) -> PodGroupSpec:
    """Parse a PodGroup: minMember, minResources, minTaskMember, queue, priorityClassName, phase."""
    name = _require_name(obj, InvalidPodGroup, namespaced=True)
    meta = _meta(obj)
    spec = _dict(obj.get("spec"), InvalidPodGroup, name, "spec")
    status = _dict(obj.get("status"), InvalidPodGroup, name, "status")
    phase_text = status.get("phase") or "Pending"
    try:
        phase = PodGroupPhase(phase_text)
    except ValueError:
        raise InvalidPodGroup(name, "status.phase", f"unknown phase {phase_text!r}") from None
    min_task = _dict(spec.get("minTaskMember"), InvalidPodGroup, name, "spec.minTaskMember")
    for role, value in min_task.items():
        _int(value, InvalidPodGroup, name, f"spec.minTaskMember.{role}", 0, 0)
    conditions = status.get("conditions") or []
    return PodGroupSpec(
        name=str(meta["name"]),
        namespace=str(meta.get("namespace") or "default"),
        queue=str(spec.get("queue") or DEFAULT_QUEUE),
        min_member=_int(spec.get("minMember"), InvalidPodGroup, name, "spec.minMember", 1, 0),
        min_resources=_resources(spec["minResources"], InvalidPodGroup, name, "spec.minResources")
        if spec.get("minResources") is not None
        else None,
        min_task_member=dict(min_task),
        priority_class_name=str(spec.get("priorityClassName") or ""),
        phase=phase,
        creation=parse_timestamp(meta.get("creationTimestamp")) or creation,
        uid=str(meta.get("uid") or name),
        conditions=tuple(c for c in conditions if isinstance(c, Mapping)),
    )


def parse_priority_class(obj: Mapping[str, Any]) -> PriorityClassSpec:
    """Parse a PriorityClass."""
    name = _require_name(obj, InvalidPriorityClass, namespaced=False)
    value = obj.get("value", 0)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidPriorityClass(name, "value", f"expected an integer, got {value!r}")
    return PriorityClassSpec(
        name=name,
        value=value,
        global_default=bool(obj.get("globalDefault")),
        preemption_never=obj.get("preemptionPolicy") == "Never",
    )


def parse_pdb(obj: Mapping[str, Any]) -> PdbSpec:
    """Parse a PodDisruptionBudget (policy/v1)."""
    name = _require_name(obj, InvalidPodDisruptionBudget, namespaced=True)
    spec = _dict(obj.get("spec"), InvalidPodDisruptionBudget, name, "spec")
    status = _dict(obj.get("status"), InvalidPodDisruptionBudget, name, "status")
    allowed = status.get("disruptionsAllowed")
    return PdbSpec(
        name=str(_meta(obj)["name"]),
        namespace=str(_meta(obj).get("namespace") or "default"),
        selector=_dict(spec.get("selector"), InvalidPodDisruptionBudget, name, "spec.selector"),
        min_available=spec.get("minAvailable"),
        max_unavailable=spec.get("maxUnavailable"),
        disruptions_allowed=allowed if isinstance(allowed, int) and not isinstance(allowed, bool) else None,
    )
