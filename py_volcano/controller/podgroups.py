"""The PodGroup Volcano's podgroup controller builds for a pod: its name, spec and metadata (pure functions).

One PodGroup per controlling owner, named `podgroup-<owner uid>`, or per pod without one,
`podgroup-<pod uid>` (the name the scheduler already gives such a pod's one-pod job, so the job keeps
its identity once grouped). minMember comes from the owner's `scheduling.volcano.sh/group-min-member`
(absent: 1; not an int32 or negative: 1 and an error to report, as Volcano), minResources is the
pod's request (containers or init containers, whichever is larger, plus overhead) times minMember,
the priority class is the pod's, the queue the pod's `scheduling.volcano.sh/queue-name`, else the
owner's, else `default` (written out: the CRDs default an absent queue to it anyway). The owner's
`volcano.sh/*` (Volcano's inheritance prefix) and `scheduling.volcano.sh/*` annotations are copied,
then the pod's own preemptable, cooldown, revocable-zone and JDB keys override them, as in Volcano's
`buildPodGroupFromPod`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from py_volcano.api import DEFAULT_QUEUE, QUEUE_NAME_ANNOTATION, ParsedPod
from py_volcano.cache.status_diff import map_patch

__all__ = [
    "API_VERSION",
    "GROUP_PREFIX",
    "INHERITED_PREFIXES",
    "MIN_MEMBER_ANNOTATION",
    "DesiredGroup",
    "MinMember",
    "desired_group",
    "group_name",
    "inherited",
    "parse_min_member",
    "update_patch",
]

API_VERSION = "scheduling.volcano.sh/v1beta1"
GROUP_PREFIX = "podgroup-"
MIN_MEMBER_ANNOTATION = "scheduling.volcano.sh/group-min-member"
#: Owner annotations copied onto the PodGroup.
INHERITED_PREFIXES = ("volcano.sh/", "scheduling.volcano.sh/")
#: Pod annotations that override inherited ones.
_POD_ANNOTATIONS = ("volcano.sh/preemptable", "volcano.sh/cooldown-time", "volcano.sh/revocable-zone")
#: Pod labels copied onto the PodGroup's labels.
_POD_LABELS = ("volcano.sh/preemptable", "volcano.sh/cooldown-time")
#: At most one of these is copied, the first the pod carries.
_JDB = ("volcano.sh/jdb-min-available", "volcano.sh/jdb-max-unavailable")
#: Go's strconv.ParseInt(s, 10, 32): an optional sign and decimal digits, nothing else.
_INTEGER = re.compile(r"[+-]?[0-9]+")
_INT32_MAX = 2**31 - 1


@dataclass(slots=True, frozen=True)
class MinMember:
    """The minMember an owner's annotation asks for; `error` says why the annotation was not used."""

    value: int
    error: str = ""


def parse_min_member(annotations: Mapping[str, str]) -> MinMember:
    """Read `scheduling.volcano.sh/group-min-member` as Volcano does: absent 1; unreadable or negative 1
    with an error; 0 is kept."""
    text = annotations.get(MIN_MEMBER_ANNOTATION)
    if text is None:
        return MinMember(1)
    if not _INTEGER.fullmatch(text) or abs(int(text)) > _INT32_MAX:
        return MinMember(1, f"{MIN_MEMBER_ANNOTATION}: {text!r} is not a 32-bit integer; minMember stays 1")
    value = int(text)
    if value < 0:
        return MinMember(1, f"{MIN_MEMBER_ANNOTATION}: {value} is negative; minMember stays 1")
    return MinMember(value)


def group_name(pod: ParsedPod) -> str:
    """Return the PodGroup name of a pod: by its controlling owner, else by the pod itself."""
    return GROUP_PREFIX + (pod.owner.uid if pod.owner is not None else pod.uid)


def inherited(annotations: Mapping[str, str]) -> dict[str, str]:
    """Return the annotations an owner passes on to its PodGroup."""
    return {key: value for key, value in annotations.items() if key.startswith(INHERITED_PREFIXES)}


@dataclass(slots=True, frozen=True)
class DesiredGroup:
    """A PodGroup as the controller wants it: spec fields (None: absent), annotations, labels, owner."""

    namespace: str
    name: str
    spec: dict[str, Any]
    annotations: dict[str, str]
    labels: dict[str, str]
    owner_reference: dict[str, Any]

    @property
    def key(self) -> str:
        """Return `ns/name`."""
        return f"{self.namespace}/{self.name}"

    def body(self) -> dict[str, Any]:
        """Return the object to create."""
        metadata: dict[str, Any] = {
            "name": self.name,
            "namespace": self.namespace,
            "ownerReferences": [self.owner_reference],
        }
        if self.annotations:
            metadata["annotations"] = self.annotations
        if self.labels:
            metadata["labels"] = self.labels
        spec = {key: value for key, value in self.spec.items() if value is not None}
        return {"apiVersion": API_VERSION, "kind": "PodGroup", "metadata": metadata, "spec": spec}


def _owner_reference(pod: ParsedPod) -> dict[str, Any]:
    """The PodGroup's controller: the pod's own controller, else the pod, so it is collected with them."""
    if pod.owner is not None:
        owner = pod.owner
        return {
            "apiVersion": owner.api_version,
            "kind": owner.kind,
            "name": owner.name,
            "uid": owner.uid,
            "controller": True,
        }
    task = pod.task
    return {"apiVersion": "v1", "kind": "Pod", "name": task.name, "uid": pod.uid, "controller": True}


def desired_group(pod: ParsedPod, owner_annotations: Mapping[str, str], min_member: int) -> DesiredGroup:
    """Return the PodGroup for `pod`, whose owner carries `owner_annotations` and asks for `min_member`."""
    task = pod.task
    annotations = inherited(owner_annotations)
    for key in _POD_ANNOTATIONS:
        if key in task.annotations:
            annotations[key] = str(task.annotations[key])
    jdb = next((key for key in _JDB if key in task.annotations), None)
    if jdb is not None:
        annotations[jdb] = str(task.annotations[jdb])
    labels = {key: str(task.labels[key]) for key in _POD_LABELS if key in task.labels}
    queue = task.annotations.get(QUEUE_NAME_ANNOTATION) or owner_annotations.get(QUEUE_NAME_ANNOTATION)
    spec: dict[str, Any] = {
        "minMember": min_member,
        "minResources": task.init_resreq.clone().multi(min_member).to_quantities(),
        "queue": str(queue or DEFAULT_QUEUE),
        "priorityClassName": task.priority_class_name or None,
    }
    return DesiredGroup(task.namespace, group_name(pod), spec, annotations, labels, _owner_reference(pod))


def update_patch(current: Mapping[str, Any], desired: DesiredGroup) -> dict[str, Any] | None:
    """Return the merge patch turning the PodGroup `current` into `desired`, None when it already is.

    Only what the controller owns changes: the four spec fields, minResources replaced whole, the
    annotations under the inherited prefixes and the copied labels; other keys and fields stay.
    """
    meta = current.get("metadata") or {}
    spec = current.get("spec") or {}
    patch: dict[str, Any] = {}
    spec_patch = {}
    for key, value in desired.spec.items():
        if key == "minResources":
            resources = map_patch(spec.get(key) or {}, value)
            if resources:
                spec_patch[key] = resources
        elif spec.get(key) != value:
            spec_patch[key] = value
    if spec_patch:
        patch["spec"] = spec_patch
    annotations = map_patch(inherited(meta.get("annotations") or {}), desired.annotations)
    current_labels = {key: value for key, value in (meta.get("labels") or {}).items() if key in _POD_LABELS}
    labels = map_patch(current_labels, desired.labels)
    metadata = {key: value for key, value in (("annotations", annotations), ("labels", labels)) if value}
    if metadata:
        patch["metadata"] = metadata
    return patch or None
