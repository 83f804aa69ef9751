"""Session: one scheduling cycle over a snapshot, and the node filtering and scoring actions share.

`open_session` builds the session from a `ClusterInfo` it owns, opens every configured plugin, and
resolves the tiers; `close_session` closes the plugins and returns the cycle's `CycleResult`. The
session never talks to an API server: decisions leave it only through the result.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

from py_volcano.api import (
    ZERO,
    ClusterInfo,
    CycleResult,
    FitErrors,
    JobID,
    JobInfo,
    MaskArray,
    NodeArrays,
    NodeInfo,
    PdbSpec,
    PodGroupPhase,
    PriorityClassSpec,
    QueueFigures,
    QueueID,
    QueueInfo,
    Resource,
    TaskInfo,
    TaskStatus,
)
from py_volcano.framework import statuses
from py_volcano.framework.conf import PluginOption, SchedulerConf
from py_volcano.framework.extension_points import ExtensionPoints
from py_volcano.framework.plugin import Plugin, Registry
from py_volcano.framework.priority_queue import PriorityQueue

__all__ = ["Session", "close_session", "open_session"]

IndexArray = npt.NDArray[np.intp]
_NO_NODES: IndexArray = np.zeros(0, dtype=np.intp)


class Session(ExtensionPoints):
    """The state of one cycle: jobs, nodes, queues, the plugins' functions, and the decisions so far."""

    def __init__(self, cluster: ClusterInfo, conf: SchedulerConf, *, cycle: int = 0) -> None:
        super().__init__(conf.tiers)
        self.uid = f"cycle-{cycle}"
        self.cycle = cycle
        self.conf = conf
        self.jobs: dict[JobID, JobInfo] = cluster.jobs
        self.nodes: dict[str, NodeInfo] = cluster.nodes
        self.node_list: list[NodeInfo] = list(cluster.nodes.values())
        self.queues: dict[QueueID, QueueInfo] = cluster.queues
        self.priority_classes: dict[str, PriorityClassSpec] = cluster.priority_classes
        self.pdbs: list[PdbSpec] = cluster.pdbs
        self.warnings: list[str] = list(cluster.warnings)
        self.total_resource = Resource()
        for node in self.node_list:
            self.total_resource.add(node.allocatable)
        self.arrays = NodeArrays(self.node_list, _scalar_names(cluster))
        self.plugins: dict[str, Plugin] = {}
        self.plugin_durations: dict[tuple[str, str], float] = {}
        self.binds: list[tuple[TaskInfo, str]] = []
        self.evictions: list[tuple[TaskInfo, str]] = []
        self.queue_figures: dict[str, QueueFigures] = {}
        self.preemption_attempts = 0
        self.preemption_victims: int | None = None
        self.ready_at_open: dict[JobID, int] = {job.uid: job.ready_task_num() for job in self.jobs.values()}
        self._predicate_plan: list[tuple[Callable[..., Any] | None, Callable[..., Any] | None]] | None = None

    def release(self) -> None:
        """Drop what ties a closed session into reference cycles (plugins and their functions, the
        predicate plan, the nodes' arrays), so reference counting frees the whole snapshot at once."""
        super().release()
        self.plugins.clear()
        self._predicate_plan = None
        self.arrays.detach()

    def warn(self, message: str) -> None:
        """Record a problem with an object that the cycle skipped (reported as a warning)."""
        if message not in self.warnings:
            self.warnings.append(message)

    # Node filtering -------------------------------------------------------------------------

    def _plan(self) -> list[tuple[Callable[..., Any] | None, Callable[..., Any] | None]]:
        if self._predicate_plan is None:
            batch = self._fns.get("batch_predicate", {})
            single = self._fns.get("predicate", {})
            self._predicate_plan = [
                (batch.get(option.name), single.get(option.name))
                for tier in self.tiers
                for option in tier
                if option.is_enabled("predicate") and (option.name in batch or option.name in single)
            ]
        return self._predicate_plan

    def predicate_mask(self, task: TaskInfo, *, for_preempt: bool = False) -> MaskArray:
        """Return, per node of `node_list`, whether every enabled predicate accepts the task.

        With `for_preempt`, failures that evicting pods could resolve do not count.
        """
        mask: MaskArray = np.ones(len(self.node_list), dtype=bool)
        for batch_fn, node_fn in self._plan():
            if batch_fn is not None:
                mask &= batch_fn(task, for_preempt)
            elif node_fn is not None:
                for index in np.flatnonzero(mask):
                    status = node_fn(task, self.node_list[index])
                    if status is not None and not (for_preempt and status.resolvable):
                        mask[index] = False
        return mask

    def fit_idle(self, task: TaskInfo) -> MaskArray:
        """Per node: the task's init request (and one pod slot) fits the idle resources (read-only mask)."""
        return self.arrays.fits_idle(task.init_resreq)

    def fit_future_idle(self, task: TaskInfo) -> MaskArray:
        """Per node: the task's init request fits Idle + Releasing - Pipelined (read-only mask)."""
        return self.arrays.fits_future_idle(task.init_resreq)

    def prioritize(self, task: TaskInfo, candidates: IndexArray) -> npt.NDArray[np.float64]:
        """Return the summed node scores of every enabled plugin for the candidate rows."""
        scores = np.zeros(len(candidates))
        for tier in self._tier_fns("batch_node_order"):
            for fn in tier:
                scores += fn(task, candidates)
        for tier in self._tier_fns("node_order"):
            for fn in tier:
                scores += np.fromiter((fn(task, self.node_list[i]) for i in candidates), float, len(candidates))
        return scores

    def best_node(self, task: TaskInfo, candidates: IndexArray) -> NodeInfo | None:
        """Return the highest-scoring candidate; the first in node order on ties."""
        if len(candidates) == 0:
            return None
        if len(candidates) == 1:
            return self.node_list[int(candidates[0])]
        scores = self.prioritize(task, candidates)
        return self.node_list[int(candidates[int(np.argmax(scores))])]

    def explain(self, task: TaskInfo, *, for_preempt: bool = False) -> FitErrors:
        """Say, node by node, why the task fits nowhere (slow path: only for tasks that failed)."""
        errors = FitErrors()
        request = task.init_resreq
        for node in self.node_list:
            status = self.predicate(task, node)
            if status is not None and not (for_preempt and status.resolvable):
                errors.add(status.reason)
                continue
            if node.future_idle_pods < 1:
                errors.add("Too many pods")
                continue
            fits, short = request.less_equal_with_resources_name(node.future_idle(), ZERO)
            if not fits:
                errors.add(f"Insufficient {short[0]}")
        return errors

    def jobs_by_queue(
        self, include: Callable[[JobInfo, QueueInfo], bool]
    ) -> tuple[PriorityQueue[QueueInfo], dict[QueueID, PriorityQueue[JobInfo]]]:
        """Return the queues (in queue order) of the jobs `include` accepts, and each queue's jobs in job order."""
        queues: PriorityQueue[QueueInfo] = PriorityQueue(self.queue_order_fn)
        jobs: dict[QueueID, PriorityQueue[JobInfo]] = {}
        for job in self.jobs.values():
            queue = self.queues.get(job.queue)
            if queue is None or not include(job, queue):
                continue
            if queue.uid not in jobs:
                jobs[queue.uid] = PriorityQueue(self.job_order_fn)
                queues.push(queue)
            jobs[queue.uid].push(job)
        return queues, jobs

    def candidate_nodes(self, task: TaskInfo) -> tuple[IndexArray, IndexArray]:
        """Return (nodes where the task fits idle now, nodes where it fits only future idle), both filtered."""
        mask = self.predicate_mask(task)
        if not mask.any():
            return _NO_NODES, _NO_NODES
        idle = mask & self.fit_idle(task)
        if idle.any():
            return np.flatnonzero(idle), _NO_NODES
        return _NO_NODES, np.flatnonzero(mask & self.fit_future_idle(task))


def _scalar_names(cluster: ClusterInfo) -> set[str]:
    names: set[str] = set()
    for node in cluster.nodes.values():
        names.update(node.allocatable.scalars)
    for job in cluster.jobs.values():
        for task in job.tasks.values():
            names.update(task.init_resreq.scalars)
    return names


def open_session(cluster: ClusterInfo, conf: SchedulerConf, registry: Registry, *, cycle: int = 0) -> Session:
    """Open a session over a snapshot it now owns: build plugins from `conf` and open each in tier order."""
    ssn = Session(cluster, conf, cycle=cycle)
    options: Iterable[PluginOption] = (option for tier in conf.tiers for option in tier)
    for option in options:
        plugin = registry.plugins[option.name].new(option.args)
        ssn.plugins[option.name] = plugin
        started = time.perf_counter()
        plugin.on_session_open(ssn)
        ssn.plugin_durations[option.name, "OnSessionOpen"] = time.perf_counter() - started
    if "enqueue" not in conf.actions:
        for job in ssn.jobs.values():
            if job.phase is PodGroupPhase.PENDING:
                job.phase = PodGroupPhase.INQUEUE
    return ssn


def close_session(ssn: Session) -> CycleResult:
    """Close every plugin and return the cycle's decisions and the status it wants on PodGroups, pods
    and Queues."""
    for name, plugin in ssn.plugins.items():
        started = time.perf_counter()
        plugin.on_session_close(ssn)
        ssn.plugin_durations[name, "OnSessionClose"] = time.perf_counter() - started
    result = CycleResult(
        binds=[(task, node) for task, node in ssn.binds],
        evictions=[(task, reason) for task, reason in ssn.evictions],
        warnings=list(ssn.warnings),
        plugin_durations=dict(ssn.plugin_durations),
        preemption_attempts=ssn.preemption_attempts,
        preemption_victims=ssn.preemption_victims,
    )
    bound = {task.job for task, _ in ssn.binds}
    for job in ssn.jobs.values():
        result.pod_groups[job.uid] = statuses.pod_group_status(
            job, ready_at_open=ssn.ready_at_open.get(job.uid, 0), ready=ssn.job_ready(job), bound=job.uid in bound
        )
        for task in job.tasks_with(TaskStatus.PIPELINED):
            result.pipelined[task.key] = task.node_name
        for uid, errors in job.fit_errors.items():
            failed = job.tasks.get(uid)
            if failed is not None and failed.status is TaskStatus.PENDING:
                result.unschedulable[failed.key] = errors.summary()
    result.pod_waits = statuses.pod_waits(ssn.jobs.values(), result.pod_groups)
    result.unplaced = statuses.unplaced_pods(ssn.jobs.values())
    for queue in ssn.queues.values():
        result.queues[queue.name] = ssn.queue_figures.get(queue.name) or _default_figures(ssn, queue)
    result.queue_statuses = statuses.queue_statuses(ssn.queues.values(), result.queues, result.pod_groups.values())
    ssn.release()
    return result


def _default_figures(ssn: Session, queue: QueueInfo) -> QueueFigures:
    allocated, request = Resource(), Resource()
    for job in ssn.jobs.values():
        if job.queue == queue.uid:
            allocated.add(job.allocated)
            request.add(job.total_request)
    return QueueFigures(weight=queue.weight, allocated=allocated, request=request, capability=queue.capability)
