"""The workload controllers whose annotations the PodGroup controller reads, as last seen.

Volcano's controller reads the annotations of batch/v1 Jobs, ReplicaSets (so Deployments), StatefulSets
and DaemonSets; kopf watches these four kinds into an `OwnerIndex` (a GET fills in an owner the watch
has not shown yet). Pods of any other controller (a JobSet's pods are owned by its Jobs; a training
operator makes its own PodGroups) still get one PodGroup per owner, with minMember 1.

The index also answers the scheduler's question of which pods to hold back (`holds`): an unbound pod
without a group annotation waits while its owner asks for a gang, or while its owner is of a watched
kind and not yet read, so a gang is never placed pod by pod before the controller has grouped it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from py_volcano.api import OwnerRef, ParsedPod, TaskStatus
from py_volcano.controller.podgroups import MIN_MEMBER_ANNOTATION, inherited

__all__ = ["WATCHED", "Owner", "OwnerIndex", "OwnerKind", "parse_owner", "watched_kind"]


@dataclass(slots=True, frozen=True)
class OwnerKind:
    """A watched workload kind and where it is served."""

    group: str
    version: str
    kind: str
    plural: str
    scalable: bool

    @property
    def api_version(self) -> str:
        """Return `group/version`."""
        return f"{self.group}/{self.version}"

    def path(self, namespace: str, name: str) -> str:
        """Return an object's API path."""
        return f"/apis/{self.group}/{self.version}/namespaces/{namespace}/{self.plural}/{name}"


#: The owners Volcano reads annotations of; a ReplicaSet or StatefulSet scaled to 0 loses its PodGroup.
WATCHED = (
    OwnerKind("batch", "v1", "Job", "jobs", scalable=False),
    OwnerKind("apps", "v1", "ReplicaSet", "replicasets", scalable=True),
    OwnerKind("apps", "v1", "StatefulSet", "statefulsets", scalable=True),
    OwnerKind("apps", "v1", "DaemonSet", "daemonsets", scalable=False),
)
_BY_REFERENCE = {(kind.api_version, kind.kind): kind for kind in WATCHED}


def watched_kind(owner: OwnerRef) -> OwnerKind | None:
    """Return the watched kind an owner reference points to, None for any other controller."""
    return _BY_REFERENCE.get((owner.api_version, owner.kind))


@dataclass(slots=True, frozen=True)
class Owner:
    """A watched owner as last seen: the annotations it passes on, and its replicas when scalable."""

    kind: OwnerKind
    namespace: str
    name: str
    uid: str
    annotations: Mapping[str, str] = field(default_factory=dict)
    replicas: int | None = None

    @property
    def asks_for_gang(self) -> bool:
        """Return whether the owner carries `scheduling.volcano.sh/group-min-member`."""
        return MIN_MEMBER_ANNOTATION in self.annotations

    @property
    def scaled_to_zero(self) -> bool:
        """Return whether a ReplicaSet or StatefulSet asks for no pods (its PodGroup goes)."""
        return self.kind.scalable and self.replicas == 0

    @property
    def reference(self) -> dict[str, str]:
        """Return an ObjectReference to the owner (for events)."""
        return {
            "apiVersion": self.kind.api_version,
            "kind": self.kind.kind,
            "namespace": self.namespace,
            "name": self.name,
            "uid": self.uid,
        }


def parse_owner(kind: OwnerKind, obj: Mapping[str, Any]) -> Owner | None:
    """Read a watched object; None when it has no uid or name (nothing to key it by)."""
    meta = obj.get("metadata") or {}
    uid, name = meta.get("uid"), meta.get("name")
    if not uid or not name:
        return None
    annotations = meta.get("annotations") or {}
    replicas = (obj.get("spec") or {}).get("replicas", 1) if kind.scalable else None
    return Owner(
        kind=kind,
        namespace=str(meta.get("namespace") or "default"),
        name=str(name),
        uid=str(uid),
        annotations=inherited({str(k): str(v) for k, v in annotations.items()})
        if isinstance(annotations, Mapping)
        else {},
        replicas=replicas if isinstance(replicas, int) else None,
    )


class OwnerIndex:
    """Watched owners by uid; `on_change` is called when what `holds` answers may have changed."""

    def __init__(self, on_change: Callable[[], None]) -> None:
        self._owners: dict[str, Owner] = {}
        self._on_change = on_change

    def __len__(self) -> int:
        return len(self._owners)

    def get(self, uid: str) -> Owner | None:
        """Return the owner with this uid, None when not (yet) seen."""
        return self._owners.get(uid)

    def owners(self) -> list[Owner]:
        """Return every owner known."""
        return list(self._owners.values())

    def put(self, owner: Owner) -> Owner | None:
        """Record an owner as seen now; return what was known before."""
        previous = self._owners.get(owner.uid)
        self._owners[owner.uid] = owner
        if previous is None or previous.asks_for_gang != owner.asks_for_gang:
            self._on_change()
        return previous

    def drop(self, uid: str) -> Owner | None:
        """Forget a deleted owner; return it."""
        return self._owners.pop(uid, None)

    def holds(self, pod: ParsedPod) -> bool:
        """Return whether a pending, unbound pod without a group annotation must wait to be grouped: its
        owner asks for a gang, or is of a watched kind and not read yet."""
        owner = pod.owner
        if owner is None or pod.group or pod.task.node_name or pod.task.status is not TaskStatus.PENDING:
            return False
        known = self._owners.get(owner.uid)
        if known is None:
            return watched_kind(owner) is not None
        return known.asks_for_gang
