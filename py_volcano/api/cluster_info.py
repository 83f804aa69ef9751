"""ClusterInfo: one snapshot of the cluster, assembled from parsed specs into fresh Job/Node infos.

A snapshot owns every mutable object in it (tasks are cloned from the parsed pods), so a scheduling
cycle can change it freely without touching the store it came from.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from py_volcano.api.job_info import JobInfo, PodGroupSpec
from py_volcano.api.manifests import ParsedPod, PdbSpec, PriorityClassSpec
from py_volcano.api.node_info import NodeInfo, NodeSpec
from py_volcano.api.queue_info import DEFAULT_QUEUE, QueueInfo
from py_volcano.api.types import JobID, PodGroupPhase, QueueID, TaskStatus

__all__ = ["ClusterInfo", "shadow_group_name"]

_TERMINATED = frozenset({TaskStatus.SUCCEEDED, TaskStatus.FAILED})


def shadow_group_name(pod_uid: str) -> str:
    """Return the name of the one-pod group of a pod that names no PodGroup."""
    return f"podgroup-{pod_uid}"


@dataclass(slots=True)
class ClusterInfo:
    """Jobs, nodes, queues, priority classes and PDBs of one snapshot, plus what could not be used."""

    jobs: dict[JobID, JobInfo] = field(default_factory=dict)
    nodes: dict[str, NodeInfo] = field(default_factory=dict)
    queues: dict[QueueID, QueueInfo] = field(default_factory=dict)
    priority_classes: dict[str, PriorityClassSpec] = field(default_factory=dict)
    pdbs: list[PdbSpec] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def build(
        cls,
        *,
        nodes: Iterable[NodeSpec],
        pods: Iterable[ParsedPod],
        queues: Iterable[QueueInfo],
        pod_groups: Iterable[PodGroupSpec],
        priority_classes: Mapping[str, PriorityClassSpec],
        pdbs: Iterable[PdbSpec] = (),
        scheduler_name: str = "py-volcano",
        shadow_phases: Mapping[JobID, PodGroupPhase] | None = None,
    ) -> ClusterInfo:
        """Assemble a snapshot; a pod naming a missing PodGroup or a group naming a missing queue is warned about."""
        info = cls(priority_classes=dict(priority_classes), pdbs=list(pdbs))
        info.nodes = {spec.name: NodeInfo(spec) for spec in nodes}
        info.queues = {queue.uid: queue for queue in queues}
        if DEFAULT_QUEUE not in info.queues:
            info.queues[QueueID(DEFAULT_QUEUE)] = QueueInfo(name=DEFAULT_QUEUE)
        for spec in pod_groups:
            info._add_job(spec)
        for parsed in pods:
            info._add_pod(parsed, scheduler_name, shadow_phases or {})
        return info

    def _job_priority(self, class_name: str) -> int:
        if class_name:
            pc = self.priority_classes.get(class_name)
            return pc.value if pc else 0
        default = next((pc for pc in self.priority_classes.values() if pc.global_default), None)
        return default.value if default else 0

    def _add_job(self, spec: PodGroupSpec) -> JobInfo:
        job = JobInfo(spec, priority=self._job_priority(spec.priority_class_name))
        self.jobs[job.uid] = job
        if job.queue not in self.queues and not spec.shadow:
            self.warnings.append(
                f"PodGroup {spec.namespace}/{spec.name}: field spec.queue: "
                f"queue {spec.queue!r} not found; the job waits"
            )
        return job

    def _job_for(self, parsed: ParsedPod, shadow_phases: Mapping[JobID, PodGroupPhase]) -> JobInfo | None:
        task = parsed.task
        if parsed.group:
            job = self.jobs.get(JobID(f"{task.namespace}/{parsed.group}"))
            if job is None:
                self.warnings.append(
                    f"Pod {task.key}: field metadata.annotations[scheduling.k8s.io/group-name]: "
                    f"PodGroup {parsed.group!r} not found; the pod waits"
                )
            return job
        name = shadow_group_name(parsed.uid)
        key = JobID(f"{task.namespace}/{name}")
        phase = shadow_phases.get(key)
        if phase is None:
            phase = PodGroupPhase.RUNNING if task.node_name else PodGroupPhase.PENDING
        spec = PodGroupSpec(
            name=name,
            namespace=task.namespace,
            queue=parsed.queue,
            min_member=1,
            priority_class_name=task.priority_class_name,
            phase=phase,
            creation=task.creation,
            uid=parsed.uid,
            shadow=True,
        )
        job = self._add_job(spec)
        job.priority = task.priority
        if job.queue not in self.queues:
            self.warnings.append(
                f"Pod {task.key}: field metadata.annotations[scheduling.volcano.sh/queue-name]: "
                f"queue {parsed.queue!r} not found; the pod waits"
            )
        return job

    def _add_pod(self, parsed: ParsedPod, scheduler_name: str, shadow_phases: Mapping[JobID, PodGroupPhase]) -> None:
        task = parsed.task.clone()
        if parsed.scheduler_name == scheduler_name:
            job = self._job_for(parsed, shadow_phases)
            if job is not None:
                task.job = job.uid
                job.add_task(task)
        if task.node_name and task.status not in _TERMINATED:
            node = self.nodes.get(task.node_name)
            if node is not None:
                node.add_task(task)
