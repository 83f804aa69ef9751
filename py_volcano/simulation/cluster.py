"""An in-memory cluster for scenarios: manifests that play out a cycle's decisions like a real cluster.

Between cycles a bound pod runs on its node, an evicted pod is gone, and the PodGroup phases the
scheduler wrote are kept (FORMAT.md, Between cycles).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from py_volcano.api import (
    ClusterInfo,
    JobID,
    NodeSpec,
    ParsedPod,
    PdbSpec,
    PodGroupPhase,
    PodGroupSpec,
    PriorityClassSpec,
    QueueInfo,
    parse_node,
    parse_pdb,
    parse_pod,
    parse_pod_group,
    parse_priority_class,
    parse_queue,
)
from py_volcano.errors import ObjectError, ScenarioError
from py_volcano.framework import CycleResult

__all__ = ["InMemoryCluster"]

_EPOCH = 1_700_000_000.0


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace') or 'default'}/{meta['name']}"


class InMemoryCluster:
    """The scenario's objects, in listing order, with the scheduler's decisions applied between cycles."""

    def __init__(self, objects: Iterable[Mapping[str, Any]], *, source: str) -> None:
        self.source = source
        self.objects: list[dict[str, Any]] = [copy.deepcopy(dict(obj)) for obj in objects]
        self.creation = {id(obj): _EPOCH + position for position, obj in enumerate(self.objects)}
        self.shadow_phases: dict[JobID, PodGroupPhase] = {}
        self.warnings: list[str] = []
        self._check_parse()

    def _of(self, kind: str) -> list[dict[str, Any]]:
        return [obj for obj in self.objects if obj.get("kind") == kind]

    def pod(self, key: str) -> dict[str, Any] | None:
        """Return the pod manifest `ns/name`, or None when it does not exist (any more)."""
        return next((obj for obj in self._of("Pod") if _key(obj) == key), None)

    def _priority_classes(self) -> dict[str, PriorityClassSpec]:
        classes = (parse_priority_class(obj) for obj in self._of("PriorityClass"))
        return {pc.name: pc for pc in classes}

    def _check_parse(self) -> None:
        """Parse every object once so that a malformed one is a scenario error, not a warning."""
        known = {"Node", "Pod", "Namespace", "PriorityClass", "Queue", "PodGroup", "PodDisruptionBudget"}
        for obj in self.objects:
            if obj.get("kind") not in known:
                self.warnings.append(f"{obj.get('kind')} {_key(obj)}: kind not simulated; ignored")
        try:
            self.snapshot(scheduler_name="py-volcano")
        except ObjectError as exc:
            raise ScenarioError(f"{self.source}: {exc}") from None

    def snapshot(self, *, scheduler_name: str) -> ClusterInfo:
        """Parse the current objects into a fresh snapshot."""
        classes = self._priority_classes()
        nodes: list[NodeSpec] = [parse_node(obj) for obj in self._of("Node")]
        queues: list[QueueInfo] = [parse_queue(obj, creation=self.creation[id(obj)]) for obj in self._of("Queue")]
        groups: list[PodGroupSpec] = [
            parse_pod_group(obj, creation=self.creation[id(obj)]) for obj in self._of("PodGroup")
        ]
        pods: list[ParsedPod] = [
            parse_pod(obj, priority_classes=classes, creation=self.creation[id(obj)]) for obj in self._of("Pod")
        ]
        pdbs: list[PdbSpec] = [parse_pdb(obj) for obj in self._of("PodDisruptionBudget")]
        return ClusterInfo.build(
            nodes=nodes,
            pods=pods,
            queues=queues,
            pod_groups=groups,
            priority_classes=classes,
            pdbs=pdbs,
            scheduler_name=scheduler_name,
            shadow_phases=self.shadow_phases,
        )

    def apply(self, result: CycleResult) -> None:
        """Play a cycle's decisions: bound pods run, evicted pods go, PodGroup phases are written."""
        for task, node in result.binds:
            pod = self.pod(task.key)
            if pod is not None:
                pod.setdefault("spec", {})["nodeName"] = node
                pod.setdefault("status", {})["phase"] = "Running"
        evicted = {task.key for task, _ in result.evictions}
        self.objects = [obj for obj in self.objects if not (obj.get("kind") == "Pod" and _key(obj) in evicted)]
        groups = {_key(obj): obj for obj in self._of("PodGroup")}
        for job_id, status in result.pod_groups.items():
            if status.shadow:
                self.shadow_phases[job_id] = status.phase
            elif job_id in groups:
                groups[job_id].setdefault("status", {})["phase"] = status.phase.value
