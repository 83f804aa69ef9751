"""ClusterInfo: one snapshot of the cluster, assembled from parsed specs into fresh Job/Node infos.

A snapshot owns every mutable object in it (tasks are cloned from the parsed pods), so a scheduling
cycle can change it freely without touching the store it came from; the exceptions are its `backlog`,
jobs that no action or plugin changes, shared with the snapshots before and after it, and the jobs
and nodes `BuiltJobs` and `BuiltNodes` hand on from the snapshot before while no cycle changed them (a
cycle may change them; the next snapshot then builds them again).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from py_volcano.api.backlog import Backlog
from py_volcano.api.built_jobs import BuiltJob, BuiltJobs
from py_volcano.api.built_nodes import BuiltNodes, EitherOf
from py_volcano.api.hypernodes import HyperNodeTopology
from py_volcano.api.job_info import JobInfo, PodGroupSpec, TaskInfo
from py_volcano.api.manifests import ParsedPod, PdbSpec, PriorityClassSpec, ResourceQuotaSpec, shadow_group_name
from py_volcano.api.node_info import NodeInfo, NodeSpec
from py_volcano.api.queue_info import DEFAULT_QUEUE, QueueInfo
from py_volcano.api.results import POD_UNSCHEDULABLE
from py_volcano.api.settled import Settled, at_sight, settles
from py_volcano.api.types import TERMINATED, JobID, PodGroupPhase, QueueID, TaskStatus

__all__ = ["ClusterInfo", "SkippedPod", "shadow_group_name"]


@dataclass(slots=True, frozen=True)
class SkippedPod:
    """A pod of this scheduler that no cycle can take up, and its PodScheduled=False reason and message."""

    namespace: str
    name: str
    uid: str
    message: str
    reason: str = POD_UNSCHEDULABLE


@dataclass(slots=True)
class ClusterInfo:
    """Jobs, nodes, queues, priority classes, PDBs and ResourceQuotas of one snapshot, plus what could not be used:
    `warnings` name every unusable object, `skipped_pods` are this scheduler's pods left out (no job
    holds them), `invalid_queues` the errors of Queues that could not be parsed, by name."""

    jobs: dict[JobID, JobInfo] = field(default_factory=dict)
    nodes: dict[str, NodeInfo] = field(default_factory=dict)
    queues: dict[QueueID, QueueInfo] = field(default_factory=dict)
    priority_classes: dict[str, PriorityClassSpec] = field(default_factory=dict)
    pdbs: list[PdbSpec] = field(default_factory=list)
    resource_quotas: list[ResourceQuotaSpec] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    skipped_pods: list[SkippedPod] = field(default_factory=list)
    invalid_queues: dict[str, str] = field(default_factory=dict)
    hyper_nodes: HyperNodeTopology | None = None
    """The HyperNode tree over `nodes` (same order); None when the cluster has no HyperNode."""
    backlog: Backlog = field(default_factory=Backlog)
    """The jobs of `jobs` shared with other snapshots, unchanged and left out of every walk (`Backlog`)."""
    shard_nodes: frozenset[str] | None = None
    """The nodes this instance may place pods on (its NodeShard's `spec.nodesDesired`); None: every node."""
    built_jobs: Mapping[JobID, BuiltJob] = field(default_factory=dict)
    """Per job (the backlog's aside), how it was built or taken from the snapshot before (`BuiltJobs`)."""
    settled: Settled = field(default_factory=Settled)
    """The jobs left out of `jobs` because no cycle under the configuration can change them (`Settled`)."""

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
        resource_quotas: Iterable[ResourceQuotaSpec] = (),
        scheduler_name: str = "py-volcano",
        shadow_phases: Mapping[JobID, PodGroupPhase] | None = None,
        skipped_pods: Iterable[SkippedPod] = (),
        invalid_queues: Mapping[str, str] | None = None,
        invalid_pod_groups: Mapping[str, str] | None = None,
        backlog: Backlog | None = None,
        built_nodes: BuiltNodes | None = None,
        built_jobs: BuiltJobs | None = None,
        settled: Settled | None = None,
        token: object = None,
        carried: Mapping[JobID, BuiltJob] | None = None,
    ) -> ClusterInfo:
        """Assemble a snapshot; a pod naming a missing PodGroup or a group naming a missing queue is warned about.

        `skipped_pods` are pods of this scheduler the caller could not parse; `invalid_queues` and
        `invalid_pod_groups` the parse errors of Queues (by name) and PodGroups (by `ns/name`), so a job
        or pod that names one is told why it waits. Every job of `backlog` is taken as it is, in the place
        its PodGroup (or, for a pod without one, its pod) has in the listing; its pods are not read again.
        `built_nodes` and `built_jobs` (the store's, kept from snapshot to snapshot) build the nodes and
        jobs; fresh ones build them all. `pods` come in listing order (`ParsedPod.order`): a node looked at
        again merges its kept pods and the newly placed ones in that order (`BuiltNodes.build_changed`).
        With `settled` (the store's, kept from snapshot to snapshot), the jobs that settle under
        configuration `token` move there out of `jobs` (`api.settled`). `carried` are settled jobs of
        the last snapshot that nothing changed since, whose pods and PodGroups are not in `pods` and
        `pod_groups`: they stay settled as they are, their pods where they sit (every node spec must be
        the one built before).
        """
        info = cls(priority_classes=dict(priority_classes), pdbs=list(pdbs), resource_quotas=list(resource_quotas))
        info.skipped_pods = list(skipped_pods)
        info.invalid_queues = dict(invalid_queues or {})
        node_specs = list(nodes)
        placed: dict[str, list[tuple[ParsedPod, TaskInfo]]] = {spec.name: [] for spec in node_specs}
        info.queues = {queue.uid: queue for queue in queues}
        if DEFAULT_QUEUE not in info.queues:
            info.queues[QueueID(DEFAULT_QUEUE)] = QueueInfo(name=DEFAULT_QUEUE)
        reused = backlog.entries if backlog is not None else {}
        jobs = built_jobs if built_jobs is not None else BuiltJobs()
        members: dict[JobID, list[ParsedPod]] = {}
        pods = list(pods)
        for parsed in pods:
            if parsed.scheduler_name == scheduler_name:
                members.setdefault(parsed.job_id, []).append(parsed)
        sources: dict[JobID, tuple[PodGroupSpec | ParsedPod, PodGroupPhase | None]] = {}
        taken: set[JobID] = set()
        for spec in pod_groups:
            entry = reused.get(spec.key)
            if entry is not None:
                info.jobs[spec.key] = entry.job
                continue
            sources[spec.key] = (spec, None)
            job = None
            if spec.queue in info.queues:
                priority = info._job_priority(spec.priority_class_name)
                job = jobs.take(spec.key, spec, None, members.get(spec.key, []), priority)
            if job is not None:
                info.jobs[spec.key] = job
                taken.add(spec.key)
            else:
                info._add_job(spec)
        foreign: set[JobID] = set()
        phases = shadow_phases or {}
        sharing = bool(reused or jobs.jobs)
        nodes_built = built_nodes if built_nodes is not None else BuiltNodes()
        in_place = sharing and nodes_built.covers(node_specs)  # a taken job's pods sit where they sat
        for parsed in pods:
            key = parsed.job_id
            if sharing:
                entry = reused.get(key)
                if entry is not None:
                    info.jobs.setdefault(entry.job.uid, entry.job)
                    continue
                if parsed.scheduler_name == scheduler_name and (
                    key in taken or info._take(parsed, key, jobs, taken, phases)
                ):
                    if not in_place:
                        _place(placed, parsed, info.jobs[key].tasks[parsed.task.uid])
                    continue
            info._add_pod(parsed, scheduler_name, phases, invalid_pod_groups or {}, placed)
            if parsed.group and parsed.scheduler_name != scheduler_name:
                foreign.add(parsed.job_id)
        info._drop_foreign_jobs(foreign)
        carried = carried or {}
        if carried and not in_place:
            raise ValueError("settled jobs are carried only into a snapshot over the same node specs")
        dropped = settled.dropped(carried) if settled is not None and carried else None
        touched = jobs.touched(taken, carried, dropped) if in_place else set()
        for key, job in info.jobs.items():
            if key not in reused:
                source, phase = sources.get(key) or (members[key][0], phases.get(key))
                jobs.record(job, source, phase, members.get(key, []))
        jobs.carry(carried)
        info.built_jobs = jobs.seal()
        if in_place:
            held = EitherOf(info.jobs, carried) if carried else info.jobs
            kept = EitherOf(taken, carried) if carried else taken
            info.nodes = nodes_built.build_changed(node_specs, placed, held, kept, touched)
        else:
            info.nodes = nodes_built.build(node_specs, placed, info.jobs)
        if backlog is not None:
            info.backlog = backlog
        if settled is not None:
            info._settle(settled, token, taken, foreign, carried)
        return info

    def _settle(
        self,
        settled: Settled,
        token: object,
        taken: set[JobID],
        foreign: set[JobID],
        carried: Mapping[JobID, BuiltJob],
    ) -> None:
        """Keep the `carried` jobs settled and move out of `jobs` into `settled` the `taken` jobs that
        settle (`api.settled.settles`) and the others, not `foreign`, that settle at sight
        (`api.settled.at_sight`); no new one when a job is not `whole`."""
        if settled.token is not token:
            settled.reset(token)
        built = self.built_jobs
        fresh: dict[JobID, BuiltJob] = {}
        sighted: list[JobID] = []
        whole = True
        queues = self.queues
        for key, job in self.jobs.items():
            entry = built.get(key)
            if entry is None:  # a backlog job
                continue
            entry.settled = False
            if not entry.whole:
                whole = False
            elif key in foreign:
                continue
            elif key in taken and entry.status is not None:
                if settles(job, entry, token, queues):
                    fresh[key] = entry
            elif at_sight(job, queues):
                fresh[key] = entry
                sighted.append(key)
        settled.fractional = not whole
        if not whole:
            fresh, sighted = {}, []  # and the store carries none while a job requests a fraction
        for entry in fresh.values():
            entry.settled = True
        settled.update(carried, fresh, sighted)
        if fresh:
            self.jobs = {key: job for key, job in self.jobs.items() if key not in fresh}
        self.settled = settled

    def _drop_foreign_jobs(self, referenced: set[JobID]) -> None:
        """Leave out the PodGroups whose every pod belongs to another scheduler: they are its jobs.

        Volcano takes up every PodGroup whatever its pods' scheduler; beside another scheduler that
        makes both write the same status (docs/semantics.md, "Deliberate differences from Volcano").
        """
        for uid in referenced:
            job = self.jobs.get(uid)
            if job is not None and not job.tasks:
                del self.jobs[uid]

    def _job_priority(self, class_name: str) -> int:
        if class_name:
            pc = self.priority_classes.get(class_name)
            return pc.value if pc else 0
        default = next((pc for pc in self.priority_classes.values() if pc.global_default), None)
        return default.value if default else 0

    def _add_job(self, spec: PodGroupSpec, priority: int | None = None) -> JobInfo:
        """Add the job of `spec` with `priority`, by default its priority class's (a one-pod group's is its pod's)."""
        if priority is None:
            priority = self._job_priority(spec.priority_class_name)
        job = JobInfo(spec, priority=priority)
        self.jobs[job.uid] = job
        if job.queue not in self.queues and not spec.shadow:
            self.warnings.append(
                f"PodGroup {spec.namespace}/{spec.name}: field spec.queue: "
                f"queue {spec.queue!r} not found; the job waits"
            )
        return job

    def _job_for(
        self, parsed: ParsedPod, shadow_phases: Mapping[JobID, PodGroupPhase], invalid_groups: Mapping[str, str]
    ) -> JobInfo | None:
        task = parsed.task
        if parsed.group:
            key = parsed.job_id
            job = self.jobs.get(key)
            if job is None:
                error = invalid_groups.get(key)
                why = f"PodGroup {key} is invalid: {error}" if error else f"PodGroup {key} not found"
                self.warnings.append(
                    f"Pod {task.key}: field metadata.annotations[scheduling.k8s.io/group-name]: "
                    f"PodGroup {parsed.group!r} not found; the pod waits"
                )
                if task.status is TaskStatus.PENDING:
                    self.skipped_pods.append(SkippedPod(task.namespace, task.name, task.uid, f"{why}; the pod waits"))
            return job
        name = shadow_group_name(parsed.uid)
        key = parsed.job_id
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
        job = self._add_job(spec, task.priority)
        if job.queue not in self.queues:
            self.warnings.append(
                f"Pod {task.key}: field metadata.annotations[scheduling.volcano.sh/queue-name]: "
                f"queue {parsed.queue!r} not found; the pod waits"
            )
        return job

    def _take(
        self,
        parsed: ParsedPod,
        key: JobID,
        jobs: BuiltJobs,
        taken: set[JobID],
        shadow_phases: Mapping[JobID, PodGroupPhase],
    ) -> bool:
        """Take the one-pod group of `parsed` (a pod of this scheduler without a PodGroup) from the
        snapshot before, in its pod's place, if it is unchanged; return whether it was."""
        if parsed.group or parsed.queue not in self.queues:
            return False
        job = jobs.take(key, parsed, shadow_phases.get(key), [parsed], parsed.task.priority)
        if job is None:
            return False
        self.jobs[key] = job
        taken.add(key)
        return True

    def _add_pod(
        self,
        parsed: ParsedPod,
        scheduler_name: str,
        shadow_phases: Mapping[JobID, PodGroupPhase],
        invalid_groups: Mapping[str, str],
        placed: dict[str, list[tuple[ParsedPod, TaskInfo]]],
    ) -> None:
        task = parsed.task.clone()
        if parsed.scheduler_name == scheduler_name:
            job = self._job_for(parsed, shadow_phases, invalid_groups)
            if job is not None:
                task.job = job.uid
                job.add_task(task)
        _place(placed, parsed, task)


def _place(placed: dict[str, list[tuple[ParsedPod, TaskInfo]]], parsed: ParsedPod, task: TaskInfo) -> None:
    """Put the task (of pod `parsed`) on its node's list when it holds a node the snapshot has."""
    if task.node_name and task.status not in TERMINATED:
        on_node = placed.get(task.node_name)
        if on_node is not None:
            on_node.append((parsed, task))
