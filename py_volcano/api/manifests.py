"""Parse plain Kubernetes manifests (dicts, as `kubectl apply` takes them) into scheduler specs.

This is the edge where untrusted objects enter: every parser raises an `ObjectError` subclass that
names the object and the field, and never lets a malformed object through half-read.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from py_volcano.api.hypernodes import parse_network_topology
from py_volcano.api.job_info import PodGroupSpec, TaskInfo, Toleration
from py_volcano.api.node_info import NodeSpec, Taint
from py_volcano.api.numatopology import PinnedContainer, pinned_cpus
from py_volcano.api.quantity import parse_quantity
from py_volcano.api.queue_info import DEFAULT_QUEUE, NodeGroupAffinity, QueueInfo
from py_volcano.api.records import hot_record
from py_volcano.api.resource_info import Resource
from py_volcano.api.shapes import ShapeError, check_affinity, check_amount, check_selector, check_string_map
from py_volcano.api.topology_spread import topology_spread_constraints
from py_volcano.api.types import JobID, PodGroupPhase, QueueState, TaskID, TaskStatus
from py_volcano.errors import (
    InvalidHyperNode,
    InvalidNode,
    InvalidNumatopology,
    InvalidPod,
    InvalidPodDisruptionBudget,
    InvalidPodGroup,
    InvalidPriorityClass,
    InvalidQueue,
    InvalidResourceQuota,
    ObjectError,
)

__all__ = [
    "GROUP_NAME_ANNOTATION",
    "HIERARCHY_ANNOTATION",
    "HIERARCHY_WEIGHTS_ANNOTATION",
    "PREEMPTABLE_KEY",
    "QUEUE_NAME_ANNOTATION",
    "TASK_SPEC_ANNOTATION",
    "OwnerRef",
    "ParsedPod",
    "PdbSpec",
    "PodSpecParts",
    "PriorityClassSpec",
    "ResourceQuotaSpec",
    "parse_node",
    "parse_object",
    "parse_pdb",
    "parse_pod",
    "parse_pod_group",
    "parse_priority_class",
    "parse_queue",
    "parse_resource_quota",
    "parse_timestamp",
    "pod_spec_parts",
]

GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
QUEUE_NAME_ANNOTATION = "scheduling.volcano.sh/queue-name"
TASK_SPEC_ANNOTATION = "volcano.sh/task-spec"
PREEMPTABLE_KEY = "volcano.sh/preemptable"
HIERARCHY_ANNOTATION = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS_ANNOTATION = "volcano.sh/hierarchy-weights"
#: Kubernetes' bounds of a pod's priority and a PriorityClass' value (int32).
_PRIORITY_MIN, _PRIORITY_MAX = -(2**31), 2**31 - 1

T = TypeVar("T")


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
class ResourceQuotaSpec:
    """A ResourceQuota's status: its hard limits and what the namespace uses, per resource name as written
    (`cpu`, `requests.memory`, `pods`, ...), in base units (cores, bytes, counts). Volcano reads only the
    status, which the API server's quota controller keeps."""

    name: str
    namespace: str
    hard: Mapping[str, float] = field(default_factory=dict)
    used: Mapping[str, float] = field(default_factory=dict)


@dataclass(slots=True, frozen=True)
class OwnerRef:
    """The controller of an object (its ownerReference with `controller: true`)."""

    api_version: str
    kind: str
    name: str
    uid: str


@hot_record
class ParsedPod:
    """A pod's task plus what links it to a job: its group annotation, queue annotation, scheduler, and the
    controller that owns it (the PodGroup controller groups pods by it)."""

    task: TaskInfo
    group: str
    queue: str
    scheduler_name: str
    uid: str
    owner: OwnerRef | None = None
    job_id: JobID = field(init=False)
    """The id of its job: its PodGroup's, else its one-pod group's (`shadow_group_name`)."""
    order: tuple[float, str] = field(init=False)
    """Where it goes in a snapshot: by creation, then `ns/name`."""

    def __post_init__(self) -> None:
        namespace = self.task.namespace
        group = self.group or shadow_group_name(self.uid)
        object.__setattr__(self, "job_id", JobID(f"{namespace}/{group}"))
        object.__setattr__(self, "order", (self.task.creation, self.task.key))


def shadow_group_name(pod_uid: str) -> str:
    """Return the name of the one-pod group of a pod that names no PodGroup."""
    return f"podgroup-{pod_uid}"


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if type(meta) is dict or isinstance(meta, Mapping) else {}


def _name(obj: Mapping[str, Any], *, namespaced: bool) -> str:
    meta = _meta(obj)
    name, namespace = meta.get("name"), meta.get("namespace")
    if not isinstance(name, str) or not name or not isinstance(namespace, str | None):
        return "<unnamed>"
    return f"{namespace or 'default'}/{name}" if namespaced else name


def _require_name(obj: Mapping[str, Any], error: type[ObjectError], *, namespaced: bool) -> str:
    name = _name(obj, namespaced=namespaced)
    if name == "<unnamed>":
        raise error(name, "metadata.name", "missing")
    return name


def parse_timestamp(value: object) -> float | None:
    """Return an RFC 3339 timestamp as epoch seconds, or None when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    return _epoch_seconds(value)


@functools.lru_cache(maxsize=4096)
def _epoch_seconds(value: str) -> float | None:
    """`parse_timestamp` of a string, kept: pods created in the same second share their timestamps, and a
    listing reads two a pod (creation, PodScheduled)."""
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
    if type(value) is not dict and not isinstance(value, Mapping):  # JSON gives dicts: skip the ABC check
        raise error(name, path, "expected a map")
    return value


def _int(
    value: object, error: type[ObjectError], name: str, path: str, default: int, minimum: int, maximum: int = 2**31 - 1
) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise error(name, path, f"expected an integer, got {value!r:.60}")
    if not minimum <= value <= maximum:
        raise error(name, path, f"must be between {minimum} and {maximum}, got {value}")
    return value


def _str(value: object, error: type[ObjectError], name: str, path: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise error(name, path, f"expected a string, got {value!r:.60}")
    return value


def _list(value: object, error: type[ObjectError], name: str, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise error(name, path, "expected a list")
    return value


def _shaped(check: Callable[[object, str], T], value: object, error: type[ObjectError], name: str, path: str) -> T:
    """Run a shape check of `shapes` on `value` at `path`; its ShapeError becomes the kind's error."""
    try:
        return check(value, path)
    except ShapeError as exc:
        raise error(name, exc.field, exc.reason) from None


_ERRORS: dict[str, type[ObjectError]] = {
    error.kind: error
    for error in (
        InvalidPod,
        InvalidNode,
        InvalidQueue,
        InvalidPodGroup,
        InvalidPriorityClass,
        InvalidPodDisruptionBudget,
        InvalidResourceQuota,
        InvalidHyperNode,
        InvalidNumatopology,
    )
}
_NAMESPACED = frozenset({"Pod", "PodGroup", "PodDisruptionBudget", "ResourceQuota"})


def parse_object(kind: str, obj: object, parse: Callable[[Mapping[str, Any]], T]) -> T:
    """Parse one manifest of `kind` under the guard every object goes through, whoever reads it.

    Any failure becomes the kind's `ObjectError` naming the object and the field: the parser's own
    error as it is; anything else it raises (a bug, an input no check foresaw) with the field
    `<unknown>` and the exception, chained. The caller reports the object and skips it.
    """
    error = _ERRORS[kind]
    if not isinstance(obj, Mapping):
        raise error("<unnamed>", "<object>", f"expected a map, got {type(obj).__name__}")
    try:
        return parse(obj)
    except ObjectError:
        raise
    except Exception as exc:
        name = _name(obj, namespaced=kind in _NAMESPACED)
        raise error(name, "<unknown>", f"cannot be parsed: {type(exc).__name__}: {exc}"[:300]) from exc


# Pods -----------------------------------------------------------------------------------------


def _container_requests(container: Mapping[str, Any], name: str, path: str) -> Resource:
    resources = _dict(container.get("resources"), InvalidPod, name, f"{path}.resources")
    limits = _dict(resources.get("limits"), InvalidPod, name, f"{path}.resources.limits")
    requests = dict(limits)
    requests.update(_dict(resources.get("requests"), InvalidPod, name, f"{path}.resources.requests"))
    return _resources(requests, InvalidPod, name, f"{path}.resources.requests")


def _container_limits(spec: Mapping[str, Any], name: str) -> tuple[Resource, ...]:
    """Each regular container's limits, when some container limits a scalar resource; else ()."""
    limits: list[Mapping[str, Any]] = []
    for i, container in enumerate(_containers(spec, "containers", name)):
        path = f"spec.containers[{i}].resources"
        resources = _dict(container.get("resources"), InvalidPod, name, path)
        limits.append(_dict(resources.get("limits"), InvalidPod, name, f"{path}.limits"))
    if not any("/" in key for container in limits for key in container):
        return ()
    return tuple(
        _resources(container, InvalidPod, name, f"spec.containers[{i}].resources.limits")
        for i, container in enumerate(limits)
    )


def _resource_claims(spec: Mapping[str, Any], name: str) -> tuple[str, ...]:
    """The names of the pod's `spec.resourceClaims` (Dynamic Resource Allocation)."""
    claims = _list(spec.get("resourceClaims"), InvalidPod, name, "spec.resourceClaims")
    for i, claim in enumerate(claims):
        if not isinstance(claim, Mapping) or not isinstance(claim.get("name"), str):
            raise InvalidPod(name, f"spec.resourceClaims[{i}].name", "expected a claim with a name")
    return tuple(claim["name"] for claim in claims)


def _containers(spec: Mapping[str, Any], key: str, name: str) -> list[Mapping[str, Any]]:
    containers = spec.get(key)
    if containers is None:
        return []
    if not isinstance(containers, list) or not all(type(c) is dict or isinstance(c, Mapping) for c in containers):
        raise InvalidPod(name, f"spec.{key}", "expected a list of containers")
    return containers


def pod_requests(spec: Mapping[str, Any], name: str) -> Resource:
    """Return what the pod requests, as Volcano's GetPodResourceRequest (docs/semantics.md, "Pod requests").

    Containers and sidecars (init containers with `restartPolicy: Always`) are summed; each other init
    container needs its own request plus the sidecars started before it; the pod requests the larger of
    the two, dimension by dimension, plus `spec.overhead`.
    """
    request = Resource()
    for i, container in enumerate(_containers(spec, "containers", name)):
        request.add(_container_requests(container, name, f"spec.containers[{i}]"))
    sidecars = Resource()
    init_peak = Resource()
    for i, container in enumerate(_containers(spec, "initContainers", name)):
        path = f"spec.initContainers[{i}]"
        need = _container_requests(container, name, path)
        if _str(container.get("restartPolicy"), InvalidPod, name, f"{path}.restartPolicy") == "Always":
            request.add(need)
            sidecars.add(need)
            init_peak.set_max_resource(sidecars)
        else:
            init_peak.set_max_resource(need.add(sidecars))
    request.set_max_resource(init_peak)
    return request.add(_resources(spec.get("overhead"), InvalidPod, name, "spec.overhead"))


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


_TOLERATION_FIELDS = ("key", "operator", "value", "effect")


def _tolerations(spec: Mapping[str, Any], name: str) -> tuple[Toleration, ...]:
    tolerations = []
    for i, raw in enumerate(_list(spec.get("tolerations"), InvalidPod, name, "spec.tolerations")):
        toleration = _dict(raw, InvalidPod, name, f"spec.tolerations[{i}]")
        fields = [toleration.get(field) for field in _TOLERATION_FIELDS]
        if all(field is None or type(field) is str for field in fields):
            fields = [field or "" for field in fields]
        else:  # name the field that is not a string
            fields = [
                _str(toleration.get(field), InvalidPod, name, f"spec.tolerations[{i}].{field}")
                for field in _TOLERATION_FIELDS
            ]
        tolerations.append(_toleration(*fields))
    return tuple(tolerations)


@functools.lru_cache(maxsize=1024)
def _toleration(key: str, operator: str, value: str, effect: str) -> Toleration:
    """One Toleration, shared by every pod that carries it (most pods carry the API server's defaults)."""
    return Toleration(key=key, operator=operator or "Equal", value=value, effect=effect)


def _host_ports(containers: list[Mapping[str, Any]], name: str) -> tuple[tuple[str, str, int], ...]:
    ports: list[tuple[str, str, int]] = []
    for i, container in enumerate(containers):
        for j, raw in enumerate(_list(container.get("ports"), InvalidPod, name, f"spec.containers[{i}].ports")):
            path = f"spec.containers[{i}].ports[{j}]"
            port = _dict(raw, InvalidPod, name, path)
            host_port = _int(port.get("hostPort"), InvalidPod, name, f"{path}.hostPort", 0, 0, 65535)
            if host_port:
                host_ip = _str(port.get("hostIP"), InvalidPod, name, f"{path}.hostIP") or "0.0.0.0"
                protocol = _str(port.get("protocol"), InvalidPod, name, f"{path}.protocol") or "TCP"
                ports.append((host_ip, protocol, host_port))
    return tuple(ports)


def _pod_priority(
    spec: Mapping[str, Any], priority_classes: Mapping[str, PriorityClassSpec], name: str
) -> tuple[int, bool]:
    class_name = _str(spec.get("priorityClassName"), InvalidPod, name, "spec.priorityClassName")
    pc = priority_classes.get(class_name) if class_name else _global_default(priority_classes)
    never = spec.get("preemptionPolicy") == "Never" or bool(pc and pc.preemption_never)
    priority = spec.get("priority")
    if priority is not None:
        return _int(priority, InvalidPod, name, "spec.priority", 0, _PRIORITY_MIN, _PRIORITY_MAX), never
    return (pc.value if pc else 0), never


def _global_default(priority_classes: Mapping[str, PriorityClassSpec]) -> PriorityClassSpec | None:
    return next((pc for pc in priority_classes.values() if pc.global_default), None)


def _controller(meta: Mapping[str, Any]) -> OwnerRef | None:
    """Return the ownerReference marked `controller: true`, None when there is none (or it is malformed)."""
    references = meta.get("ownerReferences")
    if not isinstance(references, list):
        return None
    for ref in references:
        if isinstance(ref, Mapping) and ref.get("controller") is True and ref.get("uid"):
            return OwnerRef(
                api_version=str(ref.get("apiVersion") or ""),
                kind=str(ref.get("kind") or ""),
                name=str(ref.get("name") or ""),
                uid=str(ref["uid"]),
            )
    return None


def _scheduled_at(status: Mapping[str, Any]) -> float | None:
    """Return when the pod's `PodScheduled` condition turned True, None without one (read by cdp)."""
    conditions = status.get("conditions")
    for condition in conditions if isinstance(conditions, list) else ():
        if (type(condition) is dict or isinstance(condition, Mapping)) and condition.get("type") == "PodScheduled":
            return parse_timestamp(condition.get("lastTransitionTime")) if condition.get("status") == "True" else None
    return None


_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})


def _preemptable(labels: Mapping[str, str], annotations: Mapping[str, str]) -> bool:
    """Volcano's GetPodPreemptable: `volcano.sh/preemptable` from the annotation, else the label, read as Go's
    ParseBool; a value ParseBool refuses means not preemptable, no value at all means preemptable."""
    value = annotations.get(PREEMPTABLE_KEY, labels.get(PREEMPTABLE_KEY))
    return value is None or value in _GO_TRUE


@dataclass(slots=True, frozen=True)
class PodSpecParts:
    """What a pod's task takes from its spec alone, nodeName and priority aside: the pods of one template
    (a ReplicaSet's, a Job's) share it, parsed once (`PodTemplates`). Read only, as task clones share it."""

    resreq: Resource
    node_selector: Mapping[str, str]
    affinity: Mapping[str, Any]
    tolerations: tuple[Toleration, ...]
    host_ports: tuple[tuple[str, str, int], ...]
    pinned_cpus: tuple[PinnedContainer, ...] | None
    container_limits: tuple[Resource, ...]
    resource_claims: tuple[str, ...]


def pod_spec_parts(spec: Mapping[str, Any], name: str) -> PodSpecParts:
    """Parse what `PodSpecParts` holds from the spec of pod `name` (named in any error)."""
    return PodSpecParts(
        resreq=pod_requests(spec, name),
        node_selector=_shaped(check_string_map, spec.get("nodeSelector"), InvalidPod, name, "spec.nodeSelector"),
        affinity=_shaped(check_affinity, spec.get("affinity"), InvalidPod, name, "spec.affinity"),
        tolerations=_tolerations(spec, name),
        host_ports=_host_ports(_containers(spec, "containers", name), name),
        pinned_cpus=pinned_cpus(spec, name),
        container_limits=_container_limits(spec, name),
        resource_claims=_resource_claims(spec, name),
    )


def parse_pod(
    obj: Mapping[str, Any],
    *,
    priority_classes: Mapping[str, PriorityClassSpec],
    creation: float = 0.0,
    spec_parts: Callable[[Mapping[str, Any], str], PodSpecParts] = pod_spec_parts,
) -> ParsedPod:
    """Parse a Pod; `creation` is used when the manifest carries no creationTimestamp; `spec_parts` reads
    the spec's parts (`PodTemplates.parts` takes them from the pods of the same template)."""
    name = _require_name(obj, InvalidPod, namespaced=True)
    meta = _meta(obj)
    spec = _dict(obj.get("spec"), InvalidPod, name, "spec")
    status = _dict(obj.get("status"), InvalidPod, name, "status")
    labels = _shaped(check_string_map, meta.get("labels"), InvalidPod, name, "metadata.labels")
    annotations = _shaped(check_string_map, meta.get("annotations"), InvalidPod, name, "metadata.annotations")
    node_name = _str(spec.get("nodeName"), InvalidPod, name, "spec.nodeName")
    priority, never = _pod_priority(spec, priority_classes, name)
    parts = spec_parts(spec, name)
    uid = str(meta.get("uid") or meta["name"])
    preemptable = _preemptable(labels, annotations)
    task = TaskInfo(
        uid=TaskID(str(meta.get("uid") or name)),
        name=str(meta["name"]),
        namespace=str(meta.get("namespace") or "default"),
        resreq=parts.resreq,
        node_name=node_name,
        status=_task_status(str(status.get("phase") or "Pending"), node_name, bool(meta.get("deletionTimestamp"))),
        priority=priority,
        priority_class_name=str(spec.get("priorityClassName") or ""),
        labels=labels,
        annotations=annotations,
        node_selector=parts.node_selector,
        affinity=parts.affinity,
        tolerations=parts.tolerations,
        host_ports=parts.host_ports,
        preemptable=preemptable,
        preemption_never=never,
        creation=parse_timestamp(meta.get("creationTimestamp")) or creation,
        role=str(annotations.get(TASK_SPEC_ANNOTATION, "")),
        scheduled_at=_scheduled_at(status),
        topology_spread=topology_spread_constraints(spec, labels, name),
        pinned_cpus=parts.pinned_cpus,
        container_limits=parts.container_limits,
        resource_claims=parts.resource_claims,
    )
    return ParsedPod(
        task=task,
        group=str(annotations.get(GROUP_NAME_ANNOTATION) or ""),
        queue=str(annotations.get(QUEUE_NAME_ANNOTATION) or DEFAULT_QUEUE),
        scheduler_name=str(spec.get("schedulerName") or "default-scheduler"),
        uid=uid,
        owner=_controller(meta),
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
    for i, raw in enumerate(_list(spec.get("taints"), InvalidNode, name, "spec.taints")):
        taint = _dict(raw, InvalidNode, name, f"spec.taints[{i}]")
        key, value, effect = (
            _str(taint.get(field), InvalidNode, name, f"spec.taints[{i}].{field}")
            for field in ("key", "value", "effect")
        )
        if not key:
            raise InvalidNode(name, f"spec.taints[{i}].key", "missing")
        taints.append(Taint(key, value, effect or "NoSchedule"))
    ready = True
    for condition in _list(status.get("conditions"), InvalidNode, name, "status.conditions"):
        if isinstance(condition, Mapping) and condition.get("type") == "Ready":
            ready = condition.get("status") == "True"
    return NodeSpec(
        name=name,
        allocatable=allocatable,
        capacity=capacity,
        labels=_shaped(check_string_map, _meta(obj).get("labels"), InvalidNode, name, "metadata.labels"),
        taints=tuple(taints),
        unschedulable=bool(spec.get("unschedulable")),
        ready=ready,
        annotations=_shaped(check_string_map, _meta(obj).get("annotations"), InvalidNode, name, "metadata.annotations"),
    )


def parse_queue(obj: Mapping[str, Any], *, creation: float = 0.0) -> QueueInfo:
    """Parse a Queue: weight (>= 1), capability, deserved, guarantee, parent, state, reclaimable, priority,
    the hierarchy annotations hierarchical drf reads, node-group affinity and annotations (nodegroup)."""
    name = _require_name(obj, InvalidQueue, namespaced=False)
    spec = _dict(obj.get("spec"), InvalidQueue, name, "spec")
    status = _dict(obj.get("status"), InvalidQueue, name, "status")
    guarantee = _dict(spec.get("guarantee"), InvalidQueue, name, "spec.guarantee")
    annotations = _dict(_meta(obj).get("annotations"), InvalidQueue, name, "metadata.annotations")
    state_text = status.get("state") or spec.get("state") or "Open"
    try:
        state = QueueState(state_text)
    except (ValueError, TypeError):
        raise InvalidQueue(name, "status.state", f"unknown state {state_text!r:.60}") from None
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
        parent=_str(spec.get("parent"), InvalidQueue, name, "spec.parent"),
        state=state,
        state_set=bool(status.get("state")),
        resource_version=str(_meta(obj).get("resourceVersion") or ""),
        reclaimable=reclaimable,
        priority=_int(spec.get("priority"), InvalidQueue, name, "spec.priority", 0, _PRIORITY_MIN, _PRIORITY_MAX),
        creation=parse_timestamp(_meta(obj).get("creationTimestamp")) or creation,
        hierarchy=str(annotations.get(HIERARCHY_ANNOTATION) or ""),
        hierarchy_weights=str(annotations.get(HIERARCHY_WEIGHTS_ANNOTATION) or ""),
        affinity=_node_group_affinity(spec.get("affinity"), name),
        annotations=_shaped(check_string_map, annotations, InvalidQueue, name, "metadata.annotations"),
    )


def _node_group_affinity(value: object, name: str) -> NodeGroupAffinity | None:
    """Read a Queue's `spec.affinity` (node groups); None when unset."""
    if value is None:
        return None
    affinity = _dict(value, InvalidQueue, name, "spec.affinity")
    groups: list[tuple[str, ...]] = []
    for rule in ("nodeGroupAffinity", "nodeGroupAntiAffinity"):
        terms = _dict(affinity.get(rule), InvalidQueue, name, f"spec.affinity.{rule}")
        for when in ("required", "preferred"):
            path = f"spec.affinity.{rule}.{when}DuringSchedulingIgnoredDuringExecution"
            listed = _list(terms.get(f"{when}DuringSchedulingIgnoredDuringExecution"), InvalidQueue, name, path)
            for index, group in enumerate(listed):
                if not isinstance(group, str):
                    raise InvalidQueue(name, f"{path}[{index}]", f"expected a string, got {group!r:.60}")
            groups.append(tuple(listed))
    return NodeGroupAffinity(required=groups[0], preferred=groups[1], anti_required=groups[2], anti_preferred=groups[3])


def parse_pod_group(obj: Mapping[str, Any], *, creation: float = 0.0) -> PodGroupSpec:
    """Parse a PodGroup: minMember, minResources, minTaskMember, queue, priorityClassName, networkTopology,
    phase, annotations."""
    name = _require_name(obj, InvalidPodGroup, namespaced=True)
    meta = _meta(obj)
    spec = _dict(obj.get("spec"), InvalidPodGroup, name, "spec")
    status = _dict(obj.get("status"), InvalidPodGroup, name, "status")
    phase_text = status.get("phase") or "Pending"
    try:
        phase = PodGroupPhase(phase_text)
    except (ValueError, TypeError):
        raise InvalidPodGroup(name, "status.phase", f"unknown phase {phase_text!r:.60}") from None
    min_task = {
        str(role): _int(value, InvalidPodGroup, name, f"spec.minTaskMember.{role}", 0, 0)
        for role, value in _dict(spec.get("minTaskMember"), InvalidPodGroup, name, "spec.minTaskMember").items()
    }
    conditions = _list(status.get("conditions"), InvalidPodGroup, name, "status.conditions")
    return PodGroupSpec(
        name=str(meta["name"]),
        namespace=str(meta.get("namespace") or "default"),
        queue=_str(spec.get("queue"), InvalidPodGroup, name, "spec.queue") or DEFAULT_QUEUE,
        min_member=_int(spec.get("minMember"), InvalidPodGroup, name, "spec.minMember", 1, 0),
        min_resources=_resources(spec["minResources"], InvalidPodGroup, name, "spec.minResources")
        if spec.get("minResources") is not None
        else None,
        min_resource_list={str(k): parse_quantity(v) for k, v in (spec.get("minResources") or {}).items()},
        min_task_member=min_task,
        priority_class_name=_str(spec.get("priorityClassName"), InvalidPodGroup, name, "spec.priorityClassName"),
        phase=phase,
        creation=parse_timestamp(meta.get("creationTimestamp")) or creation,
        uid=str(meta.get("uid") or name),
        conditions=tuple(c for c in conditions if isinstance(c, Mapping)),
        annotations=_shaped(check_string_map, meta.get("annotations"), InvalidPodGroup, name, "metadata.annotations"),
        labels=_shaped(check_string_map, meta.get("labels"), InvalidPodGroup, name, "metadata.labels"),
        network_topology=parse_network_topology(spec.get("networkTopology"), name),
    )


def parse_priority_class(obj: Mapping[str, Any]) -> PriorityClassSpec:
    """Parse a PriorityClass."""
    name = _require_name(obj, InvalidPriorityClass, namespaced=False)
    return PriorityClassSpec(
        name=name,
        value=_int(obj.get("value"), InvalidPriorityClass, name, "value", 0, _PRIORITY_MIN, _PRIORITY_MAX),
        global_default=bool(obj.get("globalDefault")),
        preemption_never=obj.get("preemptionPolicy") == "Never",
    )


def parse_pdb(obj: Mapping[str, Any]) -> PdbSpec:
    """Parse a PodDisruptionBudget (policy/v1)."""
    name = _require_name(obj, InvalidPodDisruptionBudget, namespaced=True)
    spec = _dict(obj.get("spec"), InvalidPodDisruptionBudget, name, "spec")
    status = _dict(obj.get("status"), InvalidPodDisruptionBudget, name, "status")
    allowed = status.get("disruptionsAllowed")
    selector = _dict(spec.get("selector"), InvalidPodDisruptionBudget, name, "spec.selector")
    _shaped(check_selector, selector, InvalidPodDisruptionBudget, name, "spec.selector")
    return PdbSpec(
        name=str(_meta(obj)["name"]),
        namespace=str(_meta(obj).get("namespace") or "default"),
        selector=selector,
        min_available=_shaped(
            check_amount, spec.get("minAvailable"), InvalidPodDisruptionBudget, name, "spec.minAvailable"
        ),
        max_unavailable=_shaped(
            check_amount, spec.get("maxUnavailable"), InvalidPodDisruptionBudget, name, "spec.maxUnavailable"
        ),
        disruptions_allowed=allowed if isinstance(allowed, int) and not isinstance(allowed, bool) else None,
    )


def parse_resource_quota(obj: Mapping[str, Any]) -> ResourceQuotaSpec:
    """Parse a ResourceQuota (v1): `status.hard` and `status.used`."""
    name = _require_name(obj, InvalidResourceQuota, namespaced=True)
    status = _dict(obj.get("status"), InvalidResourceQuota, name, "status")
    amounts: list[dict[str, float]] = []
    for part in ("hard", "used"):
        values = _dict(status.get(part), InvalidResourceQuota, name, f"status.{part}")
        try:
            amounts.append({str(key): parse_quantity(value) for key, value in values.items()})
        except ValueError as exc:
            raise InvalidResourceQuota(name, f"status.{part}", str(exc)) from None
    return ResourceQuotaSpec(
        name=str(_meta(obj)["name"]),
        namespace=str(_meta(obj).get("namespace") or "default"),
        hard=amounts[0],
        used=amounts[1],
    )
