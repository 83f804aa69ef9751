"""Session: one scheduling cycle over a snapshot, and the node filtering and scoring actions share.

`open_session` builds the session from a `ClusterInfo` it owns, opens every configured plugin, and
resolves the tiers; `close_session` closes the plugins and returns the cycle's `CycleResult`. The
session never talks to an API server: decisions leave it only through the result.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterable
from datetime import datetime
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from py_volcano.api import (
    BuiltJob,
    ClusterInfo,
    CycleResult,
    FitErrors,
    HyperNodeTopology,
    JobID,
    JobInfo,
    MaskArray,
    NodeArrays,
    NodeInfo,
    PdbSpec,
    PodGroupPhase,
    PodGroupStatus,
    PriorityClassSpec,
    QueueFigures,
    QueueID,
    QueueInfo,
    Resource,
    ResourceQuotaSpec,
    TaskInfo,
    TaskStatus,
    is_allocated_status,
    job_fingerprint,
    request_shape,
)
from py_volcano.framework import reasons, shortfalls, statuses, waits
from py_volcano.framework.cluster_total import NodeTotals
from py_volcano.framework.conf import PluginOption, SchedulerConf
from py_volcano.framework.extension_points import EventHandler, ExtensionPoints, PredicateStatus
from py_volcano.framework.memory import KeptNodes, PluginMemory
from py_volcano.framework.node_picks import NodePicks
from py_volcano.framework.node_scores import NodeScores
from py_volcano.framework.node_search import NodesToFind
from py_volcano.framework.plugin import JobTaker, Plugin, Registry
from py_volcano.framework.priority_queue import PriorityQueue

__all__ = ["Session", "close_session", "end_session", "open_session", "report_session"]

#: Plugins whose job-ready verdict reads nothing but the job: a job the cycle left unchanged keeps its status.
_PURE_JOB_READY = frozenset({"gang"})

IndexArray = npt.NDArray[np.intp]
_NO_NODES: IndexArray = np.zeros(0, dtype=np.intp)
#: An enabled filter: its batch function, its per-node function and its batch mask key (each may be None).
_Filter = tuple[Callable[..., Any] | None, Callable[..., Any] | None, Callable[[TaskInfo], Hashable | None] | None]
_EVERY_DEFAULT = NodesToFind()
#: Why a node outside this instance's NodeShard refuses every task (Volcano's message).
_NOT_IN_SHARD = PredicateStatus("node isn't in scheduler node shard")


class Session(ExtensionPoints):
    """The state of one cycle: jobs, nodes, queues, the plugins' functions, and the decisions so far."""

    def __init__(
        self,
        cluster: ClusterInfo,
        conf: SchedulerConf,
        *,
        cycle: int = 0,
        now: datetime | None = None,
        memory: PluginMemory | None = None,
        skip: frozenset[JobID] = frozenset(),
        nodes_to_find: NodesToFind = _EVERY_DEFAULT,
    ) -> None:
        super().__init__(conf.tiers)
        self.uid = f"cycle-{cycle}"
        self.cycle = cycle
        self.conf = conf
        self._now = now if now is not None else datetime.now().astimezone()
        #: Whether a plugin read `now`: then the next cycle may decide otherwise with nothing else changed.
        self.reads_clock = False
        #: What plugins keep between the sessions of this process (a fresh one keeps nothing).
        self.memory = memory if memory is not None else PluginMemory(self._now)
        #: How many feasible nodes a task's search stops at (Volcano's flags of the same names).
        self.nodes_to_find = nodes_to_find
        self.jobs: dict[JobID, JobInfo] = cluster.jobs
        self.nodes: dict[str, NodeInfo] = cluster.nodes
        self.node_list: list[NodeInfo] = list(cluster.nodes.values())
        #: The nodes of this instance's NodeShard (`--scheduler-sharding-mode=hard`); None: every node.
        self.shard_nodes = cluster.shard_nodes
        self._shard_mask = _shard_mask(cluster.shard_nodes, self.node_list)
        self.queues: dict[QueueID, QueueInfo] = cluster.queues
        self.priority_classes: dict[str, PriorityClassSpec] = cluster.priority_classes
        self.pdbs: list[PdbSpec] = cluster.pdbs
        self.resource_quotas: list[ResourceQuotaSpec] = cluster.resource_quotas
        self.warnings: list[str] = list(cluster.warnings)
        #: Jobs backed off by the runner: every action leaves them out of its job walks (`is_backed_off`).
        self.skipped = skip
        #: The backed-off jobs shared with other cycles, unchanged (`api.Backlog`); all are in `jobs` and
        #: `skipped`. Plugins that read every job read its per-queue sums instead of walking them.
        self.backlog = cluster.backlog
        #: Per job, how the snapshot built it or took it from the one before (statuses carry over).
        self.built_jobs = cluster.built_jobs
        #: The jobs left out of `jobs` because nothing this cycle runs can change them (`api.Settled`):
        #: plugins that read every job read their sums per key instead.
        self.settled = cluster.settled
        kept, self.memory.nodes = self.memory.nodes, None
        self.arrays = NodeArrays(self.node_list, _scalar_names(cluster), kept.arrays if kept else None)
        self._totals = NodeTotals(self.node_list, self.arrays.stale, kept.totals if kept else None)
        #: Per task shape, every node's summed batch score (`framework.node_scores`).
        self.node_scores = NodeScores(self.arrays)
        #: Sum of max(allocatable, used) per node (docs/semantics.md, "Overcommitted nodes").
        self.total_resource = self._totals.total.clone()
        #: Sum of every node's used resources.
        self.used_resource = self._totals.used.clone()
        self.overcommitted = self._totals.overcommitted
        self.skipped_pods = cluster.skipped_pods
        self.invalid_queues = cluster.invalid_queues
        #: The first task of each job that its queue's quota refused, with the message allocate wrote then.
        self.quota_refusals: dict[JobID, tuple[QueueInfo, TaskInfo, str]] = {}
        #: The HyperNode tree over `node_list` (only the virtual top when the cluster has none).
        self.hyper_nodes = _topology(cluster, self.node_list)
        #: Per job with a network topology, the lowest hypernode holding its allocated tasks (-1: none
        #: yet); dropped when a task leaves, recomputed on demand (`allocated_hyper_node`).
        self.job_hyper_nodes: dict[JobID, int] = {}
        self.plugins: dict[str, Plugin] = {}
        self.plugin_durations: dict[tuple[str, str], float] = {}
        self.binds: list[tuple[TaskInfo, str]] = []
        #: Handed each statement's binds as it commits (`run_cycle`'s `on_binds`); None: nobody listens.
        self.on_binds: Callable[[list[tuple[TaskInfo, str]]], None] | None = None
        self.evictions: list[tuple[TaskInfo, str]] = []
        self.queue_figures: dict[str, QueueFigures] = {}
        self.preemption_attempts = 0
        self.preemption_victims: int | None = None
        #: Per action, the jobs it took up, numbered in the order of their first turn (`record_turn`).
        self.turns: dict[str, dict[JobID, int]] = {}
        self._predicate_plan: list[_Filter] | None = None
        #: The picks of the last run of alike tasks (`framework.node_picks`).
        self._picks = NodePicks()

    @property
    def now(self) -> datetime:
        """The wall-clock time of this cycle (timezone-aware); plugins read time only here."""
        self.reads_clock = True
        return self._now

    def release(self) -> None:
        """Drop what ties a closed session into reference cycles (plugins and their functions, the
        predicate plan, the nodes' arrays), so reference counting frees the whole snapshot at once."""
        super().release()
        self.plugins.clear()
        self._predicate_plan = None
        self.arrays.detach()
        self.memory.nodes = KeptNodes(self.arrays, self._totals)

    def add_job(self, job: JobInfo) -> None:
        """Take up a job that arrived after the session opened: every plugin counts it as it would have
        at open (`on_job_added`; only sessions whose plugins all have it take jobs: `actions.arrivals`)."""
        self.jobs[job.uid] = job
        for plugin in self.plugins.values():
            cast(JobTaker, plugin).on_job_added(self, job)

    def allocated_hyper_node(self, job: JobInfo) -> int:
        """The lowest hypernode holding every node the job's allocated tasks are on, -1 when none is placed
        (Volcano's JobInfo.AllocatedHyperNode, recovered from the tasks as its session does)."""
        found = self.job_hyper_nodes.get(job.uid)
        if found is None:
            nodes = self.nodes
            rows = (
                nodes[task.node_name].index
                for task in job.tasks.values()
                if task.node_name in nodes and is_allocated_status(task.status)
            )
            found = self.job_hyper_nodes[job.uid] = self.hyper_nodes.hyper_node_of(rows)
        return found

    def _placed_in_hyper_node(self, task: TaskInfo) -> None:
        found = self.job_hyper_nodes.get(task.job) if task.job else None
        node = self.nodes.get(task.node_name)
        if task.job and found is not None and node is not None:
            leaf = int(self.hyper_nodes.lowest[node.index])
            self.job_hyper_nodes[task.job] = self.hyper_nodes.lca(found, leaf if leaf != -1 else self.hyper_nodes.top)

    def _left_hyper_node(self, task: TaskInfo) -> None:
        if task.job:
            self.job_hyper_nodes.pop(task.job, None)

    def record_turn(self, job: JobInfo) -> None:
        """Note that the running action takes up `job`; its first turn counts (the order `explain` reports)."""
        turns = self.turns.setdefault(self.action, {})
        turns.setdefault(job.uid, len(turns))

    def warn(self, message: str) -> None:
        """Record a problem with an object that the cycle skipped (reported as a warning)."""
        if message not in self.warnings:
            self.warnings.append(message)

    def hierarchy_enabled(self, plugin: str) -> bool:
        """True when the first entry of `plugin` writes `enableHierarchy: true` (unlike other switches,
        unset is off: docs/semantics.md, "Switches")."""
        for tier in self.tiers:
            for option in tier:
                if option.name == plugin:
                    return option.switches.get("hierarchy", False)
        return False

    # Node filtering -------------------------------------------------------------------------

    def _plan(self) -> list[_Filter]:
        if self._predicate_plan is None:
            batch = self._fns.get("batch_predicate", {})
            single = self._fns.get("predicate", {})
            self._predicate_plan = [
                (batch.get(option.name), single.get(option.name), self._mask_keys.get(option.name))
                for tier in self.tiers
                for option in tier
                if option.is_enabled("predicate") and (option.name in batch or option.name in single)
            ]
        return self._predicate_plan

    def mask_key(self, task: TaskInfo) -> tuple[Hashable, ...] | None:
        """The key of the task's `predicate_mask` (not for preemption) when every enabled filter is a batch
        one that gives a key for it (`add_batch_predicate_fn`); None otherwise."""
        keys = []
        for batch_fn, _, key_of in self._plan():
            key = key_of(task) if batch_fn is not None and key_of is not None else None
            if key is None:
                return None
            keys.append(key)
        return tuple(keys)

    def predicate_mask(self, task: TaskInfo, *, for_preempt: bool = False) -> MaskArray:
        """Return, per node of `node_list`, whether every enabled predicate accepts the task.

        With `for_preempt`, failures that evicting pods could resolve do not count.
        """
        shard = self._shard_mask
        mask: MaskArray = np.ones(len(self.node_list), dtype=bool) if shard is None else shard.copy()
        for batch_fn, node_fn, _ in self._plan():
            if batch_fn is not None:
                mask &= batch_fn(task, for_preempt)
            elif node_fn is not None:
                for index in np.flatnonzero(mask):
                    status = node_fn(task, self.node_list[index])
                    if status is not None and not (for_preempt and status.resolvable):
                        mask[index] = False
        return mask

    def predicate(self, task: TaskInfo, node: NodeInfo) -> PredicateStatus | None:
        """Return why the node does not suit the task: outside this instance's shard first (Volcano's hard
        sharding), else the first failing per-node filter; None when it suits."""
        if self.shard_nodes is not None and node.name not in self.shard_nodes:
            return _NOT_IN_SHARD
        return super().predicate(task, node)

    def fit_idle(self, task: TaskInfo) -> MaskArray:
        """Per node: the task's init request (and one pod slot) fits the idle resources (read-only mask)."""
        return self.arrays.fits_idle(task.init_resreq)

    def fit_future_idle(self, task: TaskInfo) -> MaskArray:
        """Per node: the task's init request fits Idle + Releasing - Pipelined (read-only mask)."""
        return self.arrays.fits_future_idle(task.init_resreq)

    def prioritize(self, task: TaskInfo, candidates: IndexArray) -> npt.NDArray[np.float64]:
        """Return the summed node scores of every enabled plugin for the candidate rows (kept per task
        shape when the plugins allow: `framework.node_scores`)."""
        key = self.score_key(task)
        if key is None:
            return self._score_rows(task, candidates)
        return self.node_scores.at(key, candidates, lambda rows: self._score_rows(task, rows))

    def _score_rows(self, task: TaskInfo, candidates: IndexArray) -> npt.NDArray[np.float64]:
        scores = np.zeros(len(candidates))
        for tier in self._tier_fns("batch_node_order"):
            for fn in tier:
                scores += fn(task, candidates)
        for tier in self._tier_fns("node_order"):
            for fn in tier:
                scores += np.fromiter((fn(task, self.node_list[i]) for i in candidates), float, len(candidates))
        return scores

    def pick_node(self, task: TaskInfo, within: MaskArray | None = None) -> tuple[NodeInfo, bool] | None:
        """Return the node allocate puts the task on and whether it fits idle room there (else the task is
        pipelined there), or None when no node (of `within`) suits it: the best of `candidate_nodes`'
        idle nodes, else of its future ones. Tasks alike, one after the other, take their picks from one
        run of windows (`framework.node_picks`), with the same outcome."""
        if within is None:
            picked = self._take_pick(task)
            if picked is not None:
                return picked
        idle, future = self.candidate_nodes(task, within)
        if len(idle) == 0 and len(future) == 0:
            return None
        node = self.best_node(task, idle if len(idle) else future)
        assert node is not None
        return node, len(idle) > 0

    def _take_pick(self, task: TaskInfo) -> tuple[NodeInfo, bool] | None:
        """The task's pick from the run of alike tasks, planning a new run when the last one cannot give
        it; None when the task searches alone."""
        mask_key = self.mask_key(task)
        score_key = self.score_key(task) if mask_key is not None else None
        if score_key is None:
            return None
        key = (mask_key, request_shape(task.init_resreq), score_key)
        picks, start = self._picks, self.memory.next_node
        picked = picks.take(key, start, self.arrays)
        if picked is None:
            if not picks.worth_planning(key):
                return None
            mask = picks.mask(mask_key, lambda: self.predicate_mask(task))
            fits, future = self.fit_idle(task), self.fit_future_idle(task)
            idle = mask & fits
            picks.plan(
                key,
                idle if future is fits else idle | (mask & future),
                idle,
                self.node_scores.every(score_key, lambda rows: self._score_rows(task, rows)),
                start,
                self.nodes_to_find.count(len(mask)),
                self.arrays.version,
            )
            picked = picks.take(key, start, self.arrays)
            if picked is None:
                return None
        row, idle_room, self.memory.next_node = picked
        return self.node_list[row], idle_room

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
        return shortfalls.explain(self, task, for_preempt=for_preempt)

    def is_backed_off(self, job: JobInfo) -> bool:
        """True when the runner backed the job off for this cycle: no action takes it up."""
        return job.uid in self.skipped

    def refuse_quota(self, job: JobInfo, queue: QueueInfo, task: TaskInfo) -> None:
        """Note that `queue`'s quota refused `task` of `job` (allocatable); the job's status names it.

        The job's fit error says so at once; the cycle's close replaces it with what the queue's figures
        show (or with "no node can hold" when that is the truth), unless a later failure replaced it.
        The last refusal counts, as the last fit error does.
        """
        message = f"queue {queue.name} has no quota left for pod {task.key}"
        self.quota_refusals[job.uid] = (queue, task, message)
        job.job_fit_error = message

    def victim_order_fn(self, l: TaskInfo, r: TaskInfo, preemptor: TaskInfo) -> bool:
        """True when victim `l` is evicted before `r` (Volcano's BuildVictimsPriorityQueue).

        Inside a job the reverse of task order; a task whose job is gone first; across queues the victim
        queue order; otherwise the reverse of job order, or of task order when the job order plugins tie
        (docs/semantics.md, "Victim order").
        """
        if l.job == r.job:
            return self.task_order_fn(r, l)
        l_job = self.jobs.get(l.job) if l.job else None
        r_job = self.jobs.get(r.job) if r.job else None
        if l_job is None or r_job is None:
            return l_job is None if (l_job is None) != (r_job is None) else self.task_order_fn(r, l)
        preemptor_job = self.jobs.get(preemptor.job) if preemptor.job else None
        queues = self.queues
        if (
            preemptor_job is not None
            and l_job.queue != r_job.queue
            and {l_job.queue, r_job.queue, preemptor_job.queue} <= queues.keys()
        ):
            return self.victim_queue_order_fn(queues[l_job.queue], queues[r_job.queue], queues[preemptor_job.queue])
        compare = self.job_order_compare(l_job, r_job)
        return compare > 0 if compare != 0 else self.task_order_fn(r, l)

    def jobs_by_queue(
        self, include: Callable[[JobInfo, QueueInfo], bool], among: Iterable[JobInfo] | None = None
    ) -> tuple[PriorityQueue[QueueInfo], dict[QueueID, PriorityQueue[JobInfo]]]:
        """Return the queues (in queue order) of the jobs `include` accepts, and each queue's jobs in job
        order; of the jobs `among` when given, else of every job."""
        queues: PriorityQueue[QueueInfo] = PriorityQueue(self.queue_order_fn, strict=True)
        jobs: dict[QueueID, PriorityQueue[JobInfo]] = {}
        skipped = self.skipped
        for job in self.jobs.values() if among is None else among:
            if job.uid in skipped:
                continue
            queue = self.queues.get(job.queue)
            if queue is None or not include(job, queue):
                continue
            if queue.uid not in jobs:
                jobs[queue.uid] = PriorityQueue(self.job_order_fn, strict=True)
                queues.push(queue)
            jobs[queue.uid].push(job)
        return queues, jobs

    def candidate_nodes(self, task: TaskInfo, within: MaskArray | None = None) -> tuple[IndexArray, IndexArray]:
        """Return (nodes where the task fits idle now, nodes where it fits only future idle), both filtered;
        only nodes of `within` (a hypernode's) when given."""
        mask = self.predicate_mask(task)
        if within is not None:
            mask &= within
        if not mask.any():
            return _NO_NODES, _NO_NODES
        idle = mask & self.fit_idle(task)
        rows = len(mask) if within is None else int(np.count_nonzero(within))
        if self.nodes_to_find.count(rows) < rows:  # a large cluster: Volcano scores the nodes its search finds
            found = self.search_nodes(idle | (mask & self.fit_future_idle(task)), within)
            idle_found = found[idle[found]]
            return (idle_found, _NO_NODES) if len(idle_found) else (_NO_NODES, found)
        if idle.any():
            return np.flatnonzero(idle), _NO_NODES
        return _NO_NODES, np.flatnonzero(mask & self.fit_future_idle(task))

    def search_nodes(self, feasible: MaskArray, within: MaskArray | None = None) -> IndexArray:
        """Return the rows of `feasible` nodes the task's search takes (all of them up to `nodes_to_find`;
        only rows of `within` when given), moving where the next search starts (`framework.node_search`)."""
        rows = None if within is None else np.flatnonzero(within)
        found, self.memory.next_node = self.nodes_to_find.search(
            feasible if rows is None else feasible[rows], self.memory.next_node
        )
        return found if rows is None else rows[found]


def _shard_mask(shard: frozenset[str] | None, nodes: list[NodeInfo]) -> MaskArray | None:
    """Per node of `nodes`, whether it is in the shard; None without sharding."""
    if shard is None:
        return None
    return np.fromiter((node.name in shard for node in nodes), bool, len(nodes))


def _topology(cluster: ClusterInfo, nodes: list[NodeInfo]) -> HyperNodeTopology:
    """The cluster's HyperNode tree when it was resolved over these nodes, else a tree of the top alone."""
    names = [node.name for node in nodes]
    if cluster.hyper_nodes is not None and cluster.hyper_nodes.node_names == tuple(names):
        return cluster.hyper_nodes
    return HyperNodeTopology.resolve((), nodes)


def _scalar_names(cluster: ClusterInfo) -> set[str]:
    names: set[str] = set()
    for node in cluster.nodes.values():
        names.update(node.allocatable.scalars)
    backlog = cluster.backlog
    for job in cluster.jobs.values():
        if job.uid not in backlog.entries:
            names.update(job.scalar_names())
    names.update(backlog.scalar_names())
    names.update(cluster.settled.scalar_names())
    return names


def open_session(
    cluster: ClusterInfo,
    conf: SchedulerConf,
    registry: Registry,
    *,
    cycle: int = 0,
    now: datetime | None = None,
    memory: PluginMemory | None = None,
    skip: frozenset[JobID] = frozenset(),
    nodes_to_find: NodesToFind = _EVERY_DEFAULT,
) -> Session:
    """Open a session over a snapshot it now owns: build plugins from `conf` and open each in tier order.

    `now` is the cycle's wall-clock time (the current time when None); `memory` what plugins kept from
    earlier sessions of the same process (none when None); `skip` the jobs the runner backed off, which
    no action takes up (they still count in every queue's figures); `nodes_to_find` how many feasible
    nodes a task's search stops at."""
    ssn = Session(cluster, conf, cycle=cycle, now=now, memory=memory, skip=skip, nodes_to_find=nodes_to_find)
    if any(job.pod_group.network_topology is not None for job in ssn.jobs.values()):
        ssn.add_event_handler(EventHandler(allocate=ssn._placed_in_hyper_node, deallocate=ssn._left_hyper_node))
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
    _close_plugins(ssn)
    result = _result(ssn)
    ssn.release()
    return result


def report_session(ssn: Session) -> CycleResult:
    """Return what `close_session` would, leaving the session open: the fast path places arrivals in it
    (`actions.arrivals`) until `end_session`. Plugins that report at close (`report`) report now."""
    for plugin in ssn.plugins.values():
        report = getattr(plugin, "report", None)
        if report is not None:
            report(ssn)
    return _result(ssn)


def end_session(ssn: Session) -> None:
    """Close every plugin of a session `report_session` left open, and release it."""
    _close_plugins(ssn)
    ssn.release()


def _close_plugins(ssn: Session) -> None:
    for name, plugin in ssn.plugins.items():
        started = time.perf_counter()
        plugin.on_session_close(ssn)
        ssn.plugin_durations[name, "OnSessionClose"] = time.perf_counter() - started


def _result(ssn: Session) -> CycleResult:
    result = CycleResult(
        binds=[(task, node) for task, node in ssn.binds],
        evictions=[(task, reason) for task, reason in ssn.evictions],
        warnings=list(ssn.warnings),
        plugin_durations=dict(ssn.plugin_durations),
        preemption_attempts=ssn.preemption_attempts,
        preemption_victims=ssn.preemption_victims,
        reads_clock=ssn.reads_clock,
        overcommitted_nodes=dict(ssn.overcommitted),
    )
    for queue in ssn.queues.values():
        result.queues[queue.name] = ssn.queue_figures.get(queue.name) or _default_figures(ssn, queue)
    reasons.explain_quota_refusals(
        ssn.jobs, ssn.quota_refusals, result.queues, lambda task: shortfalls.unholdable(ssn, task)
    )
    shared = ssn.backlog.entries
    moving = [job for job in ssn.jobs.values() if job.uid not in shared] if shared else list(ssn.jobs.values())
    reasons.note_queue_blockers(moving, ssn.queues, ssn.invalid_queues, ssn.skipped)
    bound = {task.job for task, _ in ssn.binds}
    built = ssn.built_jobs if ssn.plugins_at("job_ready") <= _PURE_JOB_READY else {}
    for job in ssn.jobs.values():
        entry = shared.get(job.uid)
        if entry is not None:  # the same objects and configuration decide the same status
            if entry.status is None:
                entry.status = statuses.pod_group_status(job, ready=ssn.job_ready(job), bound=False)
            result.pod_groups[job.uid] = entry.status
            continue
        result.pod_groups[job.uid] = _pod_group_status(ssn, job, built.get(job.uid), job.uid in bound)
        pipelined = job.task_status_index.get(TaskStatus.PIPELINED)
        if pipelined:
            for task in pipelined.values():
                result.pipelined[task.key] = task.node_name
        for uid, errors in job.fit_errors.items():
            failed = job.tasks.get(uid)
            if failed is not None and failed.status is TaskStatus.PENDING:
                result.unschedulable[failed.key] = errors.summary()
    waiting = moving
    if shared:
        groups = result.pod_groups
        waiting = [job for job in ssn.jobs.values() if job.uid not in shared or groups[job.uid].unschedulable]
    result.pod_waits = statuses.pod_waits(waiting, result.pod_groups)
    result.unplaced = statuses.unplaced_pods(moving)
    result.unplaced.update(*(entry.task_ids for entry in shared.values()))
    skipped_waits = reasons.skipped_pod_waits(ssn.skipped_pods)
    result.pod_waits.update(skipped_waits)
    result.unplaced.update(skipped_waits)
    # A cycle that evicted backs off no job: preempt commits the evictions of a job already ready (gang's
    # JobPipelined) that then places nothing, so backing that job off would drop evictions it caused.
    result.unschedulable_jobs = (
        set() if ssn.evictions else reasons.unschedulable_jobs(moving, result.pod_groups, bound, ssn.skipped)
    )
    result.settled, result.settled_update = ssn.settled.entries, ssn.settled.last_update()
    settled = ssn.settled.sums("queue_statuses", _status_queue, _no_figures)
    result.queue_statuses = statuses.queue_statuses(
        ssn.queues.values(),
        result.queues,
        result.pod_groups.values(),
        {key: count for key, (count, _) in settled.items()},
    )
    result.job_waits = waits.job_waits(ssn, result.pod_groups)
    result.backed_off = ssn.skipped
    _decide_sighted(ssn, result)
    return result


def _decide_sighted(ssn: Session, result: CycleResult) -> None:
    """Decide and report the status of each job that settled at sight (`api.settled.at_sight`), as this
    session would have decided it (nothing the cycle ran could change such a job); the Queue status
    counted it among the settled ones already. Thereafter it stands, as any settled job's."""
    settled = ssn.settled
    if not settled.undecided:
        return
    entries, conf = settled.entries, ssn.conf
    for uid in settled.undecided:
        entry = entries[uid]
        entry.status = statuses.pod_group_status(entry.job, ready=ssn.job_ready(entry.job), bound=False)
        entry.token = conf
        result.pod_groups[uid] = entry.status
    settled.undecided = {}


def _pod_group_status(ssn: Session, job: JobInfo, built: BuiltJob | None, bound: bool) -> PodGroupStatus:
    """The job's PodGroup status; a job the cycle left as the snapshot built it, under the configuration
    of the cycle that last decided its status, keeps that status (the same job decides the same one)."""
    if built is not None and not bound:
        status = built.decided(ssn.conf)
        if status is None:
            status = statuses.pod_group_status(job, ready=ssn.job_ready(job), bound=False)
            if job_fingerprint(job) == built.fingerprint:
                built.status, built.token = status, ssn.conf
        return status
    return statuses.pod_group_status(job, ready=ssn.job_ready(job), bound=bound)


def _default_figures(ssn: Session, queue: QueueInfo) -> QueueFigures:
    allocated, request = Resource(), Resource()
    for job in ssn.jobs.values():
        if job.queue == queue.uid:
            allocated.add(job.allocated)
            request.add(job.total_request)
    settled = ssn.settled.sums("figures", _queue_of, _allocated_and_request).get(queue.uid)
    if settled is not None:
        allocated.add(settled[1][0])
        request.add(settled[1][1])
    return QueueFigures(weight=queue.weight, allocated=allocated, request=request, capability=queue.capability)


def _status_queue(job: JobInfo) -> tuple[str, PodGroupPhase]:
    """The queue a settled job's PodGroup status counts in (`PodGroupStatus.queue`), and its phase (the
    group's, which the decided status has: `api.settled.settles`)."""
    return str(job.queue), job.phase


def _no_figures(job: JobInfo) -> tuple[Resource | None, ...]:
    return ()


def _queue_of(job: JobInfo) -> QueueID:
    return job.queue


def _allocated_and_request(job: JobInfo) -> tuple[Resource | None, ...]:
    return job.allocated, job.total_request
