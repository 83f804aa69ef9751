"""Victim bundles of the gang-aware actions: a victim job's candidate tasks split into what it can lose and
stay gang-ready ("safe") and what would break its gang ("whole", costing the whole job), then ranked.

A bundle's return on investment is what its tasks free towards the preemptor's need (each dimension
capped at the need) over what evicting it costs: nothing for a safe bundle (ROI infinite), the whole
job's request for a whole one. Volcano's actions/utils/bundle.go.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from functools import cmp_to_key
from typing import TypeVar

from py_volcano.api import JobInfo, QueueID, QueueInfo, Resource, TaskInfo, TaskStatus, is_allocated_status

T = TypeVar("T")

__all__ = [
    "Bundle",
    "BundleKind",
    "Ranking",
    "apply_allowed",
    "create_job_bundles",
    "flatten",
    "sort_for_preempt",
    "sort_for_reclaim",
]


class BundleKind(IntEnum):
    """Safe bundles sort before whole ones."""

    SAFE = 0
    WHOLE = 1


@dataclass(slots=True)
class Bundle:
    """Candidate tasks of one victim job, with what they free (`local`) and what evicting them costs (`cost`)."""

    kind: BundleKind
    job: JobInfo
    tasks: list[TaskInfo]
    local: Resource = field(default_factory=Resource)
    cost: Resource = field(default_factory=Resource)


Ranking = Callable[[list[Bundle]], list[Bundle]]
"""Orders bundles: the most worthwhile to evict first."""


def _sum(tasks: Iterable[TaskInfo]) -> Resource:
    total = Resource()
    for task in tasks:
        total.add(task.resreq)
    return total


def create_job_bundles(job: JobInfo, candidates: list[TaskInfo]) -> list[Bundle]:
    """Split a job's candidates (lowest priority first, then by uid) into a safe and a whole bundle.

    A task is safe while the job keeps more ready tasks than minMember and, when minMember covers the
    roles' minimums, its role keeps more than its minTaskMember; a job already below minMember is one
    safe bundle."""
    tasks = sorted(candidates, key=lambda task: (task.priority, task.uid))
    surplus = job.ready_task_num() - job.min_available
    if surplus < 0:
        return [Bundle(BundleKind.SAFE, job, tasks, _sum(tasks))]
    roles = _role_surplus(job) if job.min_available >= sum(job.task_min_available.values()) else {}
    safe: list[TaskInfo] = []
    whole: list[TaskInfo] = []
    for task in tasks:
        role_safe = task.role not in roles or roles[task.role] > 0
        if surplus > 0 and role_safe:
            safe.append(task)
            surplus -= 1
            if task.role in roles:
                roles[task.role] -= 1
        else:
            whole.append(task)
    bundles = [Bundle(BundleKind.SAFE, job, safe, _sum(safe))] if safe else []
    if whole:
        bundles.append(Bundle(BundleKind.WHOLE, job, whole, _sum(whole), _sum(job.tasks.values())))
    return bundles


def _role_surplus(job: JobInfo) -> dict[str, int]:
    """Per role with a minimum: ready tasks (allocated, succeeded, or pending best-effort) above it."""
    ready: dict[str, int] = {}
    for task in job.tasks.values():
        counted = is_allocated_status(task.status) or task.status is TaskStatus.SUCCEEDED
        if counted or (task.status is TaskStatus.PENDING and task.init_resreq.is_empty()):
            ready[task.role] = ready.get(task.role, 0) + 1
    return {role: ready.get(role, 0) - minimum for role, minimum in job.task_min_available.items()}


def flatten(bundles: Iterable[Bundle]) -> list[TaskInfo]:
    """Every bundle's tasks, in bundle order."""
    return [task for bundle in bundles for task in bundle.tasks]


def apply_allowed(bundles: Iterable[Bundle], allowed: set[str]) -> list[Bundle]:
    """Keep the allowed tasks of safe bundles, and whole bundles only when all their tasks are allowed."""
    valid: list[Bundle] = []
    for bundle in bundles:
        approved = [task for task in bundle.tasks if task.uid in allowed]
        if bundle.kind is BundleKind.WHOLE:
            if approved and len(approved) == len(bundle.tasks):
                valid.append(bundle)
        elif approved:
            valid.append(Bundle(bundle.kind, bundle.job, approved, _sum(approved), bundle.cost))
    return valid


def _score(resource: Resource, need: Resource, *, cap: bool) -> float:
    score = 0.0
    for name in need.names():
        wanted = need.get(name)
        if wanted <= 0:
            continue
        value = resource.get(name)
        score += (min(value, wanted) if cap else value) / wanted
    return score


def return_on_investment(bundle: Bundle, need: Resource) -> float:
    """What the bundle frees towards `need` over what it costs; infinite when it costs nothing."""
    cost = _score(bundle.cost, need, cap=False)
    return math.inf if cost == 0 else _score(bundle.local, need, cap=True) / cost


def _sort(bundles: list[Bundle], need: Resource, before: Callable[[Bundle, Bundle], int]) -> list[Bundle]:
    """Stable sort: safe first, then `before` (an ordering of the bundles' jobs or queues), then higher
    return first, then by job uid, first task uid and size."""
    roi = {id(bundle): return_on_investment(bundle, need) for bundle in bundles}

    def compare(l: Bundle, r: Bundle) -> int:
        if l.kind != r.kind:
            return -1 if l.kind < r.kind else 1
        decided = before(l, r)
        if decided:
            return decided
        if roi[id(l)] != roi[id(r)]:
            return -1 if roi[id(l)] > roi[id(r)] else 1
        return -1 if _stable_key(l) < _stable_key(r) else 1 if _stable_key(r) < _stable_key(l) else 0

    return sorted(bundles, key=cmp_to_key(compare))


def _stable_key(bundle: Bundle) -> tuple[str, str, int]:
    return (bundle.job.uid, bundle.tasks[0].uid if bundle.tasks else "", len(bundle.tasks))


def _by(less: Callable[[T, T], bool], l: T, r: T) -> int:
    """-1, 1 or 0 from a `less` that may call both directions less (or neither)."""
    forward, backward = less(l, r), less(r, l)
    if forward == backward:
        return 0
    return -1 if forward else 1


def sort_for_preempt(
    bundles: list[Bundle], need: Resource, job_order: Callable[[JobInfo, JobInfo], bool]
) -> list[Bundle]:
    """Rank preempt bundles: jobs last in job order first (`job_order(l, r)`: l goes before r)."""

    def before(l: Bundle, r: Bundle) -> int:
        if l.job.uid == r.job.uid:
            return 0
        return _by(lambda a, b: not job_order(a, b), l.job, r.job)

    return _sort(bundles, need, before)


def sort_for_reclaim(
    bundles: list[Bundle],
    need: Resource,
    queue_less: Callable[[QueueInfo, QueueInfo], bool],
    queues: Mapping[QueueID, QueueInfo],
) -> list[Bundle]:
    """Rank reclaim bundles: queues first in victim-queue order first."""

    def before(l: Bundle, r: Bundle) -> int:
        lq, rq = queues.get(l.job.queue), queues.get(r.job.queue)
        if lq is None or rq is None or lq.uid == rq.uid:
            return 0
        return _by(queue_less, lq, rq)

    return _sort(bundles, need, before)
