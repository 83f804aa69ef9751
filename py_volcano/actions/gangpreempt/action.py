"""gangpreempt: a starving gang takes room from lower-priority jobs of its own queue, a whole bundle at a time
(Volcano's gangpreempt action).

Queues in queue order; in each, its starving jobs in job order. For a job, the running (or bound)
preemptable tasks of other jobs of the queue with a lower priority, whose PodGroup does not say
`volcano.sh/preemptable: "false"`, are grouped into bundles per job (bundles.py), offered to
`ssn.unified_evictable`, ranked (safe first, jobs last in job order first, best return first), and the
plan (plan.py) evicts the shortest ranked prefix that lets the whole gang be pipelined; the job's
statement is committed only when the job is then pipelined.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from py_volcano.actions.gangpreempt import bundles as bundling
from py_volcano.actions.gangpreempt.plan import gang_need, plan_eviction
from py_volcano.api import (
    JobID,
    JobInfo,
    QueueID,
    QueueInfo,
    TaskInfo,
    TaskStatus,
    has_preemptable_mark,
    job_preemptable,
)
from py_volcano.framework import Arguments, EvictionContext, EvictionKind, PriorityQueue, Session, Statement

__all__ = ["NAME", "GangEvictionArgs", "GangPreemptAction", "eligible_job", "new", "starving_jobs"]

NAME = "gangpreempt"
log = structlog.get_logger(__name__)
_DEFAULT_MAX_DOMAINS = 8
_VICTIM_STATUSES = (TaskStatus.BOUND, TaskStatus.RUNNING)


@dataclass(slots=True, frozen=True)
class GangEvictionArgs:
    """gangpreempt's and gangreclaim's `configurations` arguments."""

    max_domains: int = _DEFAULT_MAX_DOMAINS
    """`maxDomains` (default 8; 0 or less means 8): HyperNode domains scanned per job. py-volcano reads
    no HyperNodes, so its one domain is the whole cluster and this has no effect."""
    allow_whole_bundle: bool = True
    """`allowWholeBundle`: whether bundles that would break a victim job's gang may be chosen."""

    @classmethod
    def parse(cls, args: Arguments) -> GangEvictionArgs:
        """Read the arguments; ConfigError on a value of the wrong type."""
        max_domains = args.get_int("maxDomains", _DEFAULT_MAX_DOMAINS)
        return cls(
            max_domains=max_domains if max_domains > 0 else _DEFAULT_MAX_DOMAINS,
            allow_whole_bundle=args.get_bool("allowWholeBundle", True),
        )


def eligible_job(job: JobInfo) -> bool:
    """A victim job may lose tasks unless its PodGroup explicitly says it is not preemptable."""
    return job_preemptable(job) if has_preemptable_mark(job) else True


def starving_jobs(ssn: Session) -> tuple[PriorityQueue[QueueInfo], dict[QueueID, PriorityQueue[JobInfo]]]:
    """Queues of admitted, valid jobs in queue order, and per queue its starving jobs in job order."""
    queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn)
    seen: set[QueueID] = set()
    jobs: dict[QueueID, PriorityQueue[JobInfo]] = {}
    for job in ssn.jobs.values():
        if job.is_pending() or ssn.job_valid(job) is not None or job.queue not in ssn.queues:
            continue
        if job.queue not in seen:
            seen.add(job.queue)
            queues.push(ssn.queues[job.queue])
        if ssn.job_starving(job):
            jobs.setdefault(job.queue, PriorityQueue(ssn.job_order_fn)).push(job)
    return queues, jobs


def serve_starving_jobs(
    ssn: Session,
    *,
    action: str,
    plan: Callable[[Session, QueueInfo, JobInfo], Statement | None],
    skip_queue: Callable[[QueueInfo], bool] = lambda queue: False,
) -> None:
    """For each queue (but those `skip_queue` names) its starving jobs in order: `plan` evictions for the
    job, commit them when the job is then pipelined, discard them otherwise; log the action's summary."""
    started = time.perf_counter()
    evictions = len(ssn.evictions)
    queues, jobs_by_queue = starving_jobs(ssn)
    while not queues.empty():
        queue = queues.pop()
        if skip_queue(queue):
            continue
        jobs = jobs_by_queue.get(queue.uid)
        while jobs is not None and not jobs.empty():
            job = jobs.pop()
            stmt = plan(ssn, queue, job)
            if stmt is not None and ssn.job_pipelined(job):
                stmt.commit()
            elif stmt is not None:
                stmt.discard()
    log.info(
        f"{action}_done",
        cycle=ssn.cycle,
        action=action,
        evictions=len(ssn.evictions) - evictions,
        duration_ms=round((time.perf_counter() - started) * 1000, 3),
    )


def select_bundles(
    ssn: Session, context: EvictionContext, candidates: dict[JobID, list[TaskInfo]], rank: bundling.Ranking
) -> list[bundling.Bundle]:
    """Bundle the candidates per job, keep what `ssn.unified_evictable` allows, and rank them."""
    bundles = [b for uid, tasks in candidates.items() for b in bundling.create_job_bundles(ssn.jobs[uid], tasks)]
    if not bundles:
        return []
    bundles = rank(bundles)
    allowed = ssn.unified_evictable(context, bundling.flatten(bundles))
    if not allowed:
        return []
    return rank(bundling.apply_allowed(bundles, {task.uid for task in allowed}))


class GangPreemptAction:
    """Whole-gang preemption inside a queue."""

    name = NAME

    def __init__(self, args: GangEvictionArgs) -> None:
        self.args = args

    def execute(self, ssn: Session) -> None:
        """For each queue's starving jobs in order: plan, then commit when the job is pipelined."""
        serve_starving_jobs(ssn, action=NAME, plan=self._preempt_for)

    def _preempt_for(self, ssn: Session, queue: QueueInfo, job: JobInfo) -> Statement | None:
        """The plan that gets the job pipelined by evicting ranked bundles, or None."""
        need = gang_need(ssn, job)
        if need.is_empty():
            return None

        def rank(bundles: list[bundling.Bundle]) -> list[bundling.Bundle]:
            return bundling.sort_for_preempt(bundles, need, ssn.job_order_fn)

        context = EvictionContext(EvictionKind.GANG_PREEMPT, job)
        chosen = select_bundles(ssn, context, self._candidates(ssn, job), rank)
        if not self.args.allow_whole_bundle:
            chosen = [bundle for bundle in chosen if bundle.kind is bundling.BundleKind.SAFE]
        return plan_eviction(ssn, queue, job, chosen, reason=NAME) if chosen else None

    @staticmethod
    def _candidates(ssn: Session, preemptor: JobInfo) -> dict[JobID, list[TaskInfo]]:
        """Per victim job: its bound or running preemptable tasks, for lower-priority jobs of the same queue."""
        found: dict[JobID, list[TaskInfo]] = {}
        for node in ssn.node_list:
            for held in node.tasks.values():
                if held.status not in _VICTIM_STATUSES or not held.preemptable or held.job is None:
                    continue
                victim = ssn.jobs.get(held.job)
                if victim is None or victim.queue != preemptor.queue or victim.uid == preemptor.uid:
                    continue
                task = victim.tasks.get(held.uid)
                if task is not None and eligible_job(victim) and preemptor.priority > victim.priority:
                    found.setdefault(victim.uid, []).append(task)
        return found


def new(args: GangEvictionArgs) -> GangPreemptAction:
    """Build the action."""
    return GangPreemptAction(args)
