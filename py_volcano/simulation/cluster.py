"""An in-memory cluster for scenarios: manifests that play out a cycle's decisions like a real cluster.

The pods are first admitted as a real API server admits them (`admission.py`: LimitRange defaults,
PriorityClass, RuntimeClass overhead, ResourceQuota), in listing order.

The manifests feed the scheduler's own `Store` as watch events do, and each cycle reads
`Store.snapshot()`, the runner's path. Between cycles a bound pod runs on its node, an evicted pod is
gone, and the PodGroup phases the scheduler wrote are kept (docs/scenarios.md, "Between cycles"): each change is
one more watch event, with the next resourceVersion.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from py_volcano.api import (
    ClusterInfo,
    CycleResult,
    parse_hyper_node,
    parse_node,
    parse_numatopology,
    parse_object,
    parse_pdb,
    parse_pod,
    parse_pod_group,
    parse_priority_class,
    parse_queue,
    parse_resource_quota,
)
from py_volcano.api.manifests import parse_timestamp

# The one import of the cache outside the runner: the store is pure memory (see the import-linter
# contracts in pyproject.toml).
from py_volcano.cache.store import KINDS, POD_GROUPS, PODS, RESOURCE_QUOTAS, Kind, Store
from py_volcano.errors import ObjectError, ScenarioError
from py_volcano.simulation.admission import SYSTEM_PRIORITY_CLASSES, Admission

__all__ = ["InMemoryCluster"]

#: Creation time of the first object; object `i` is created `i` whole seconds later, so its stamped
#: creationTimestamp reads back exactly and the store's creation order is the listing order.
_EPOCH = 1_700_000_000


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace') or 'default'}/{meta['name']}"


def _stamp_creation(obj: dict[str, Any], position: int) -> None:
    """Give an object without a (readable) creationTimestamp the one its listing position implies."""
    meta = obj.get("metadata")
    if isinstance(meta, dict) and not parse_timestamp(meta.get("creationTimestamp")):
        meta["creationTimestamp"] = datetime.fromtimestamp(_EPOCH + position, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class InMemoryCluster:
    """The scenario's objects, in listing order, with the scheduler's decisions applied between cycles."""

    def __init__(self, objects: Iterable[Mapping[str, Any]], *, source: str, scheduler_name: str) -> None:
        self.source = source
        self.objects: list[dict[str, Any]] = [copy.deepcopy(dict(obj)) for obj in objects]
        for position, obj in enumerate(self.objects):
            _stamp_creation(obj, position)
        self.warnings: list[str] = []
        #: The wall-clock time the first cycle runs at unless the scenario says `now`: one second after
        #: the last object's stamped creation.
        self.clock_start = datetime.fromtimestamp(_EPOCH + len(self.objects), UTC)
        self.store = Store(scheduler_name=scheduler_name)
        self._version = 0
        self.admission = Admission(self.objects, source=source)
        self.admission.admit(self._of("Pod"))
        named = {str(obj["metadata"]["name"]) for obj in self._of("PriorityClass")}
        self.objects += [copy.deepcopy(pc) for pc in SYSTEM_PRIORITY_CLASSES if pc["metadata"]["name"] not in named]
        self._check_parse()
        for kind in KINDS:  # priority classes first, so pods parse with their classes
            for obj in self._of(kind.name):
                self._event(kind, "ADDED", obj)

    def _of(self, kind: str) -> list[dict[str, Any]]:
        return [obj for obj in self.objects if obj.get("kind") == kind]

    def pod(self, key: str) -> dict[str, Any] | None:
        """Return the pod manifest `ns/name`, or None when it does not exist (any more)."""
        return next((obj for obj in self._of("Pod") if _key(obj) == key), None)

    def _check_parse(self) -> None:
        """Parse every object once before the store sees it: a malformed one is a scenario error (the
        store would skip it with a warning, as it must for a live cluster)."""
        known = {kind.name for kind in KINDS} | {"Namespace", "RuntimeClass", "LimitRange"}
        for obj in self.objects:
            if obj.get("kind") not in known:
                self.warnings.append(f"{obj.get('kind')} {_key(obj)}: kind not simulated; ignored")
        try:
            found = (parse_object("PriorityClass", obj, parse_priority_class) for obj in self._of("PriorityClass"))
            classes = {pc.name: pc for pc in found}
            parsers: dict[str, Callable[[Mapping[str, Any]], object]] = {
                "Node": parse_node,
                "Queue": parse_queue,
                "PodGroup": parse_pod_group,
                "Pod": functools.partial(parse_pod, priority_classes=classes),
                "PodDisruptionBudget": parse_pdb,
                "ResourceQuota": parse_resource_quota,
                "HyperNode": parse_hyper_node,
                "Numatopology": parse_numatopology,
            }
            for kind, parse in parsers.items():
                for obj in self._of(kind):
                    parse_object(kind, obj, parse)  # the guard every object goes through, as in the store
        except ObjectError as exc:
            raise ScenarioError(f"{self.source}: {exc}") from None

    def _event(self, kind: Kind, event_type: str, obj: dict[str, Any]) -> None:
        """Hand the store one watch event of `obj`, stamped with the next resourceVersion."""
        self._version += 1
        obj["metadata"]["resourceVersion"] = str(self._version)
        self.store.apply_event(kind, event_type, obj)

    def snapshot(self) -> ClusterInfo:
        """Return the store's fresh snapshot of the current objects."""
        return self.store.snapshot()

    def apply(self, result: CycleResult) -> None:
        """Play a cycle's decisions: bound pods (with the annotations their bind writes) run, evicted pods go,
        PodGroup phases are written."""
        pods = {_key(obj): obj for obj in self._of("Pod")}
        for task, node in result.binds:
            pod = pods.get(task.key)
            if pod is not None:
                if task.bind_annotations:  # the binder PATCHes these before it binds
                    pod["metadata"]["annotations"] = {
                        **(pod["metadata"].get("annotations") or {}),
                        **task.bind_annotations,
                    }
                pod.setdefault("spec", {})["nodeName"] = node
                pod.setdefault("status", {})["phase"] = "Running"
                self._event(PODS, "MODIFIED", pod)
        evicted = {task.key for task, _ in result.evictions}
        kept: list[dict[str, Any]] = []
        for obj in self.objects:
            if obj.get("kind") == "Pod" and _key(obj) in evicted:
                self._event(PODS, "DELETED", obj)
            else:
                kept.append(obj)
        self.objects = kept
        if evicted:  # the resourcequota controller recounts what the namespaces use
            self.admission.quotas.recount(self._of("Pod"))
            for quota in self.admission.quotas.write_status():
                self._event(RESOURCE_QUOTAS, "MODIFIED", quota)
        # As the runner does: the store holds the decided phases (a pod without a PodGroup has its
        # phase nowhere else); the written PodGroups then come back as watch events.
        self.store.record_phases({job: (status.phase, status.shadow) for job, status in result.pod_groups.items()})
        groups = {_key(obj): obj for obj in self._of("PodGroup")}
        for job_id, status in result.pod_groups.items():
            group = groups.get(job_id)
            if group is not None and not status.shadow:
                group.setdefault("status", {})["phase"] = status.phase.value
                self._event(POD_GROUPS, "MODIFIED", group)
