"""Sharing backlog jobs between snapshots changes nothing (docs/semantics.md, "Backoff of unschedulable
jobs"): a cycle over a snapshot that takes its backed-off, all-pending jobs from an earlier one decides
and reports exactly what a cycle over a snapshot built from scratch decides, before and after a change
to one job, and only configurations whose actions and plugins were checked share at all."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from py_volcano.api import ClusterInfo, CycleResult, JobID
from py_volcano.cache.store import KINDS, PODS, Store
from py_volcano.framework import SchedulerConf, run_cycle, shares_backlog
from py_volcano.registry import default_registry, load_conf
from tests.builders import node, pod, queue
from tests.unit.framework.test_backoff_equivalence import clusters

DEFAULT = load_conf(None)


def fed(objects: list[dict[str, Any]]) -> Store:
    """A store fed `objects` as the runner's watches feed it."""
    store = Store(scheduler_name="py-volcano")
    for kind in KINDS:
        for obj in objects:
            if obj["kind"] == kind.name:
                store.apply_event(kind, "ADDED", obj)
    return store


def report(result: CycleResult) -> tuple[object, ...]:
    """Everything a cycle hands the runner, comparable (figures through their repr)."""
    return (
        [(task.key, host) for task, host in result.binds],
        [task.key for task, _ in result.evictions],
        result.pipelined,
        list(result.pod_groups.items()),
        repr(result.queues),
        repr(result.queue_statuses),
        list(result.pod_waits.items()),
        result.unplaced,
        result.unschedulable,
        result.unschedulable_jobs,
        repr(result.job_waits),
        result.warnings,
    )


def jobs_of(cluster: ClusterInfo) -> list[tuple[object, ...]]:
    """Each job of a snapshot as it opens a session, in order."""
    return [
        (
            uid,
            job.phase,
            job.priority,
            job.queue,
            job.min_available,
            repr(job.total_request),
            [(task.uid, task.status, repr(task.resreq)) for task in job.tasks.values()],
        )
        for uid, job in cluster.jobs.items()
    ]


def with_lone_pods(objects: list[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """Add `count` pending pods without a PodGroup (one-pod jobs), too big for most nodes."""
    return objects + [pod(name=f"lone-{i}", cpu=str(3 + 2 * i), memory="1Gi") for i in range(count)]


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(clusters(), st.integers(0, 3))
def test_shared_snapshots_decide_as_fresh_ones(objects: list[dict[str, Any]], lone: int) -> None:
    """Back off the jobs the first cycle could not place: the next two cycles (the first builds the
    backlog, the second shares it) report exactly what a cycle over a fresh store reports."""
    objects = with_lone_pods(objects, lone)
    store = fed(objects)
    failed = frozenset(run_cycle(store.snapshot(), DEFAULT, default_registry()).unschedulable_jobs)
    expected = run_cycle(fed(objects).snapshot(), DEFAULT, default_registry(), skip=failed)
    for _ in range(2):
        snapshot = store.snapshot(backlog=failed, token=DEFAULT)
        assert set(snapshot.backlog.entries) <= failed
        assert jobs_of(snapshot) == jobs_of(fed(objects).snapshot())
        assert report(run_cycle(snapshot, DEFAULT, default_registry(), skip=failed)) == report(expected)


def backlog_cluster() -> list[dict[str, Any]]:
    """Two nodes, a queue, three one-pod jobs that never fit and one that does."""
    return [
        node(name="n0", cpu="4"),
        node(name="n1", cpu="4"),
        queue(name="q", weight=1),
        *(pod(name=f"big-{i}", cpu="16", queue="q") for i in range(3)),
        pod(name="small", cpu="1", queue="q"),
    ]


def test_a_backlog_job_is_built_once_and_shared() -> None:
    """The second snapshot takes every backed-off job as the first built it: the same objects."""
    store = fed(backlog_cluster())
    failed = frozenset(run_cycle(store.snapshot(), DEFAULT, default_registry()).unschedulable_jobs)
    assert len(failed) == 3
    first = store.snapshot(backlog=failed, token=DEFAULT)
    second = store.snapshot(backlog=failed, token=DEFAULT)
    assert set(second.backlog.entries) == failed
    assert all(second.jobs[job] is first.jobs[job] for job in failed)
    small = next(job for job in second.jobs if job not in failed)
    assert small not in second.backlog


def test_a_changed_job_is_rebuilt_and_the_rest_still_shared() -> None:
    """A pod that changes (here: a label) rebuilds its job only; the snapshot equals a fresh one."""
    objects = backlog_cluster()
    store = fed(objects)
    failed = frozenset(run_cycle(store.snapshot(), DEFAULT, default_registry()).unschedulable_jobs)
    first = store.snapshot(backlog=failed, token=DEFAULT)
    changed = copy.deepcopy(next(obj for obj in objects if obj["metadata"]["name"] == "big-1"))
    changed["metadata"]["labels"] = {"team": "a"}
    changed["metadata"]["resourceVersion"] = "99"
    store.apply_event(PODS, "MODIFIED", changed)
    second = store.snapshot(backlog=failed, token=DEFAULT)
    rebuilt = [job for job in failed if second.jobs[job] is not first.jobs[job]]
    assert [second.jobs[job].name for job in rebuilt] == [first.jobs[rebuilt[0]].name]
    assert len(rebuilt) == 1 and "big-1" in next(iter(second.jobs[rebuilt[0]].tasks.values())).key
    fresh = fed([changed if obj["metadata"]["name"] == "big-1" else obj for obj in objects]).snapshot()
    assert jobs_of(second) == jobs_of(fresh)


def test_a_job_no_longer_backed_off_or_a_new_configuration_is_built_afresh() -> None:
    """Only the jobs backed off for this cycle are shared, and only under the same configuration."""
    store = fed(backlog_cluster())
    failed = frozenset(run_cycle(store.snapshot(), DEFAULT, default_registry()).unschedulable_jobs)
    first = store.snapshot(backlog=failed, token=DEFAULT)
    retried = sorted(failed)[0]
    second = store.snapshot(backlog=failed - {retried}, token=DEFAULT)
    assert retried in first.jobs and retried not in second.backlog
    other = load_conf(None)
    third = store.snapshot(backlog=failed, token=other)
    assert third.backlog.token is other and all(third.backlog.get(job).status is None for job in failed)


def test_backlog_sums_follow_their_members() -> None:
    """The per-queue sums count every member's request, and drop a member that leaves."""
    store = fed(backlog_cluster())
    failed = frozenset(run_cycle(store.snapshot(), DEFAULT, default_registry()).unschedulable_jobs)
    backlog = store.snapshot(backlog=failed, token=DEFAULT).backlog
    ((queue_id, sums),) = list(backlog.queues())
    assert (queue_id, sums.jobs, sums.request.milli_cpu) == ("q", 3, 48_000)
    backlog.drop(sorted(failed)[0])
    ((_, sums),) = list(backlog.queues())
    assert (sums.jobs, sums.request.milli_cpu) == (2, 32_000)


def conf(text: str) -> SchedulerConf:
    """Parse a configuration with the default registry."""
    return load_conf(text)


def test_only_checked_configurations_share_the_backlog() -> None:
    """The default configuration shares; another action or plugin, no enqueue, or a hierarchy does not."""
    plugins = "tiers:\n- plugins: [{name: gang}, {name: drf%s}, {name: proportion}]\n"
    assert shares_backlog(DEFAULT)
    assert shares_backlog(conf('actions: "enqueue, allocate"\n' + plugins % ""))
    assert not shares_backlog(conf('actions: "allocate, backfill"\n' + plugins % ""))
    assert not shares_backlog(conf('actions: "enqueue, allocate, preempt"\n' + plugins % ""))
    hierarchy = 'actions: "enqueue, allocate"\ntiers:\n- plugins: [{name: gang}, {name: drf, enableHierarchy: true}]\n'
    assert not shares_backlog(conf(hierarchy))
    assert not shares_backlog(conf('actions: "enqueue, allocate"\ntiers:\n- plugins: [{name: capacity}]\n'))


def test_unchanged_backlog_skips_nothing_else() -> None:
    """A job id in the backlog set that the store does not know is simply not shared."""
    store = fed(backlog_cluster())
    snapshot = store.snapshot(backlog=frozenset({JobID("default/nothing")}), token=DEFAULT)
    assert not snapshot.backlog
