"""One scheduling cycle: open a session over a snapshot, run the configured actions, close it."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime

import structlog

from py_volcano.api import ClusterInfo, CycleResult, JobID, JobInfo, PodGroupPhase, TaskInfo, TaskStatus
from py_volcano.framework.conf import SchedulerConf
from py_volcano.framework.memory import PluginMemory
from py_volcano.framework.node_search import NodesToFind
from py_volcano.framework.plugin import Registry, takes_jobs
from py_volcano.framework.session import Session, close_session, end_session, open_session, report_session

__all__ = ["run_cycle"]

log = structlog.get_logger(__name__)


def run_cycle(
    cluster: ClusterInfo,
    conf: SchedulerConf,
    registry: Registry,
    *,
    cycle: int = 0,
    now: datetime | None = None,
    memory: PluginMemory | None = None,
    skip: frozenset[JobID] = frozenset(),
    on_binds: Callable[[list[tuple[TaskInfo, str]]], None] | None = None,
    nodes_to_find: NodesToFind | None = None,
    keep: Callable[[Session], None] | None = None,
) -> CycleResult:
    """Run every action of `conf` in order over `cluster` (which the cycle then owns), at wall-clock time
    `now` (the current time when None), with what plugins kept from earlier cycles in `memory`, leaving
    out the jobs in `skip` (backed off by the runner: docs/semantics.md, "Backoff of unschedulable jobs").
    `on_binds` is handed each statement's binds as it commits (they are in the result too); `nodes_to_find`
    is how many feasible nodes a task's search stops at (Volcano's defaults when None).

    With `keep`, a session that allocates and whose plugins all take jobs (`takes_jobs`) is reported
    instead of closed and handed to `keep` open: the runner's fast path places arrivals in it
    (`actions.arrivals`) and ends it (`end_session`) before the next cycle opens. It is not kept when
    the next cycle may admit a group this one left waiting (`_admissions_stand`)."""
    ssn = open_session(
        cluster,
        conf,
        registry,
        cycle=cycle,
        now=now,
        memory=memory,
        skip=skip,
        nodes_to_find=nodes_to_find or NodesToFind(),
    )
    ssn.on_binds = on_binds
    durations: dict[str, float] = {}
    for name in conf.actions:
        action = registry.actions[name].new(conf.action_args[name])
        ssn.action = name
        started = time.perf_counter()
        action.execute(ssn)
        durations[name] = time.perf_counter() - started
    ssn.action = ""
    if keep is not None and "allocate" in conf.actions and all(takes_jobs(p) for p in ssn.plugins.values()):
        result = report_session(ssn)
        if _admissions_stand(ssn, result):
            keep(ssn)
        else:
            end_session(ssn)
    else:
        result = close_session(ssn)
    result.action_durations = durations
    log.debug(
        "cycle_done",
        cycle=cycle,
        binds=len(result.binds),
        evictions=len(result.evictions),
        pipelined=len(result.pipelined),
        duration_ms=round(sum(durations.values()) * 1000, 3),
    )
    return result


def _admissions_stand(ssn: Session, result: CycleResult) -> bool:
    """Whether the groups left waiting for room to be admitted (`_waits_for_room`) wait in the next
    cycle too, as far as this cycle can tell: none waits, or the cycle bound, pipelined and evicted
    nothing and no group left a phase in which it holds room enqueue counts as taken (`_holds_room`).
    Otherwise that room may come free in the next cycle (a group now Running, its minResources no
    longer held in queue), the next cycle may admit a waiting group, and allocate would place it before
    the arrivals the fast path places now. Other phase changes (a one-pod job shown Running while its
    pod is still Binding, reported Pending) leave what enqueue counts as it was. Jobs left Pending that
    need no room (one-pod jobs another shard instance places, left out of this cycle) or have no pod to
    place (the PodGroup the controller made for a pod already placed) take nothing from the arrivals."""
    waiting = next((uid for uid, job in ssn.jobs.items() if _waits_for_room(job)), None)
    if waiting is None:
        return True
    if result.binds or result.evictions or result.pipelined:
        log.debug("session_not_kept", waiting=waiting, reason="the cycle placed or evicted pods")
        return False
    for uid, status in result.pod_groups.items():
        job = ssn.jobs.get(uid)
        if job is not None and status.phase is not job.phase and _holds_room(job):
            log.debug("session_not_kept", waiting=waiting, reason=f"{uid}: {job.phase.value} -> {status.phase.value}")
            return False
    return True


def _waits_for_room(job: JobInfo) -> bool:
    """Whether the job waits for admission with pods to place and its admission asks the plugins for room
    (it has minResources: enqueue admits a group without them, a one-pod job, whatever the room)."""
    return job.is_pending() and job.min_resources is not None and job.count(TaskStatus.PENDING) > 0


def _holds_room(job: JobInfo) -> bool:
    """Whether enqueue counts room as taken for the job beyond its placed tasks while it keeps its phase:
    an Inqueue group's minResources (proportion's, capacity's and overcommit's inqueue), a Running one's
    part of them its placed tasks do not hold yet."""
    if job.phase is PodGroupPhase.INQUEUE:
        return True
    held = job.min_resources
    return job.phase is PodGroupPhase.RUNNING and held is not None and not held.exceeded_part(job.allocated).is_empty()
