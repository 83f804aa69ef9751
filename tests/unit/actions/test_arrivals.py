"""The fast path (`actions.arrivals`): one-pod jobs that arrive after a cycle, placed in that cycle's kept
session, are placed exactly as the next whole cycle over the same store would place them, and the
queues' figures after it are that cycle's; what the fast path does not take waits for the cycle."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from py_volcano.actions.arrivals import place_arrivals, take_in_binds
from py_volcano.api import CycleResult, JobID, JobInfo, PodGroupPhase, QueueFigures, TaskInfo, TaskStatus
from py_volcano.cache.store import PODS, Store
from py_volcano.framework import (
    PluginMemory,
    SchedulerConf,
    Session,
    default_conf_text,
    end_session,
    open_session,
    report_session,
    run_cycle,
)
from py_volcano.framework.backlog import shares_backlog
from py_volcano.plugins.drf import DrfPlugin
from py_volcano.plugins.overcommit import OvercommitPlugin
from py_volcano.registry import default_registry, load_conf
from tests.builders import cluster, node, pod, pod_group, queue
from tests.unit.cache.test_built_snapshot import _exact, _feed
from tests.unit.cache.test_settled_equivalence import running_clusters

CONF = load_conf(None)
#: Hierarchical drf orders the queues itself, without proportion (which it conflicts with).
HIERARCHICAL = load_conf(
    default_conf_text()
    .replace("- name: drf", "- name: drf\n    enableHierarchy: true")
    .replace("  - name: proportion\n", "")
)
CAPACITY = load_conf(
    """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: capacity
  - name: nodeorder
"""
)


def _quota(figures: QueueFigures) -> tuple[Any, ...]:
    """What allocate's quota checks read (a session's inqueue is its opening's: admissions, not placements)."""
    quota = (figures.allocated, figures.request, figures.deserved)
    return (*(_exact(resource) for resource in quota), figures.share, figures.overused)


def _binds(binds: list[tuple[TaskInfo, str]]) -> list[tuple[str, str]]:
    return sorted((task.key, node_name) for task, node_name in binds)


def _kept_cycle(store: Store, conf: SchedulerConf, memory: PluginMemory) -> tuple[CycleResult, list[Session]]:
    """One cycle over the store as the runner runs it, keeping its session; its binds held in the store."""
    kept: list[Session] = []
    snapshot = store.snapshot(token=conf, settle=shares_backlog(conf))
    result = run_cycle(snapshot, conf, default_registry(), memory=memory, keep=kept.append)
    store.record_phases({job: (status.phase, status.shadow) for job, status in result.pod_groups.items()})
    for task, node_name in result.binds:
        store.assume(task.key, node_name)
    return result, kept


def _kept_or_waiting(objects: list[dict[str, Any]], first: CycleResult, kept: list[Session]) -> Session | None:
    """The kept session; None only after a cycle that placed or evicted pods, or moved a group out of a
    phase in which enqueue counts room for it, while a group waited for admission (`run_cycle`'s rule):
    the next cycle may admit it."""
    if kept:
        assert len(kept) == 1
        return kept[0]
    phases = {
        f"default/{obj['metadata']['name']}": obj["status"]["phase"] for obj in objects if obj["kind"] == "PodGroup"
    }
    plain_pods = any(not obj["metadata"]["annotations"] for obj in objects if obj["kind"] == "Pod")
    assert "Pending" in phases.values() or plain_pods  # a pod without a PodGroup has one, Pending at first
    assert (
        first.binds
        or first.evictions
        or first.pipelined
        or any(
            status.phase.value != phases.get(uid, PodGroupPhase.PENDING.value)
            for uid, status in first.pod_groups.items()
        )
    )
    event("no session kept: a group waits for admission after a cycle that changed something")
    return None


def _arrive(store: Store, arrivals: list[dict[str, Any]]) -> list[JobInfo]:
    for obj in arrivals:
        store.apply_event(PODS, "ADDED", obj)
    jobs, others = store.take_arrivals()
    assert others == 0
    return jobs


@st.composite
def arrivals(draw: st.DrawFn, queues: list[str]) -> list[dict[str, Any]]:
    """One to four pods without a PodGroup, in named queues or the default one, some with a priority."""
    count = draw(st.integers(1, 6))
    return [
        pod(
            name=f"arrival-{i}",
            cpu=draw(st.sampled_from(["1", "2", "3", "6", "500m"])),
            queue=draw(st.sampled_from(["", *queues])),
            priority=draw(st.sampled_from([None, 0, 10])),
        )
        for i in range(count)
    ]


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(objects=running_clusters(), hierarchical=st.booleans(), data=st.data())
def test_the_fast_path_places_arrivals_as_the_next_cycle_would(
    objects: list[dict[str, Any]], hierarchical: bool, data: Any
) -> None:
    """Also under hierarchical drf (every queue a leaf under the root, weighted), whose tree takes the
    arrivals' leaves."""
    queues = [obj["metadata"]["name"] for obj in objects if obj["kind"] == "Queue"]
    conf = HIERARCHICAL if hierarchical else CONF
    if hierarchical:
        for obj in objects:
            if obj["kind"] == "Queue":
                weight = obj["spec"]["weight"]
                obj["metadata"]["annotations"] = {
                    "volcano.sh/hierarchy": f"root/{obj['metadata']['name']}",
                    "volcano.sh/hierarchy-weights": f"1/{weight}",
                }
    new = data.draw(arrivals(queues), label="arrivals")
    kept_store = Store(scheduler_name="py-volcano")
    _feed(kept_store, objects)
    first, kept = _kept_cycle(kept_store, conf, PluginMemory(datetime.now(UTC)))
    ssn = _kept_or_waiting(objects, first, kept)
    if ssn is None:
        return
    fast: list[tuple[TaskInfo, str]] = []
    ssn.on_binds = fast.extend
    place_arrivals(ssn, _arrive(kept_store, new))
    after = report_session(ssn).queues
    end_session(ssn)

    fresh = Store(scheduler_name="py-volcano")
    _feed(fresh, objects + new)
    fresh.record_phases({job: (status.phase, status.shadow) for job, status in first.pod_groups.items()})
    for task, node_name in first.binds:
        fresh.assume(task.key, node_name)
    cycle = run_cycle(fresh.snapshot(), conf, default_registry())

    assert _binds(fast) == _binds(cycle.binds)
    assert {name: _quota(figures) for name, figures in after.items()} == {
        name: _quota(figures) for name, figures in cycle.queues.items()
    }


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(objects=running_clusters(), data=st.data())
def test_binds_made_elsewhere_are_counted_as_the_next_cycle_counts_them(
    objects: list[dict[str, Any]], data: Any
) -> None:
    """Under hard sharding another instance binds pods of ours: some it owns arrive first and join the
    kept session counted and left alone (`leave`), some arrive already bound, some waited in the cycle's
    snapshot. Taken in where they were bound, the session then places new arrivals exactly as a cycle over
    the store would, and leaves every queue's figures as that cycle does."""
    queues = [obj["metadata"]["name"] for obj in objects if obj["kind"] == "Queue"]
    nodes = [obj["metadata"]["name"] for obj in objects if obj["kind"] == "Node"]
    theirs = [
        {**manifest, "metadata": {**manifest["metadata"], "name": f"theirs-{i}"}}
        for i, manifest in enumerate(data.draw(arrivals(queues), label="theirs"))
    ]
    seen_first = [data.draw(st.booleans(), label=f"{each['metadata']['name']} arrives unbound") for each in theirs]
    new = data.draw(arrivals(queues), label="arrivals")
    kept_store = Store(scheduler_name="py-volcano")
    _feed(kept_store, objects)
    first, kept = _kept_cycle(kept_store, conf := CONF, PluginMemory(datetime.now(UTC)))
    ssn = _kept_or_waiting(objects, first, kept)
    if ssn is None:
        return
    fast: list[tuple[TaskInfo, str]] = []
    ssn.on_binds = fast.extend
    tasks = [task for job in ssn.jobs.values() for task in job.tasks.values()]
    waiting = {task.key for task in tasks if task.status is TaskStatus.PENDING}
    left_waiting = [obj for obj in objects if obj["kind"] == "Pod" and f"default/{obj['metadata']['name']}" in waiting]
    elsewhere = [obj for obj in left_waiting if not obj["metadata"]["annotations"] and data.draw(st.booleans())]
    early = _arrive(kept_store, [manifest for manifest, seen in zip(theirs, seen_first, strict=True) if seen])
    assert place_arrivals(ssn, early, leave={job.uid for job in early}) == []

    bound = []
    for manifest in [*theirs, *elsewhere]:
        where = data.draw(st.sampled_from(nodes), label=f"{manifest['metadata']['name']} bound on")
        bound.append({**manifest, "spec": {**manifest["spec"], "nodeName": where}})
        known = manifest in elsewhere or seen_first[theirs.index(manifest)]
        kept_store.apply_event(PODS, "MODIFIED" if known else "ADDED", bound[-1])
    names = {manifest["metadata"]["name"] for manifest in bound}
    fresh = Store(scheduler_name="py-volcano")
    _feed(fresh, [obj for obj in objects if obj["metadata"]["name"] not in names] + bound + new)
    fresh.record_phases({job: (status.phase, status.shadow) for job, status in first.pod_groups.items()})
    for task, node_name in first.binds:
        fresh.assume(task.key, node_name)
    cycle = run_cycle(fresh.snapshot(), conf, default_registry())

    taken, others = kept_store.take_bound_elsewhere()
    assert others == 0 and len(taken) == len(bound)
    counted = take_in_binds(ssn, taken)
    event(f"binds elsewhere counted: {counted}")
    # A node the binds leave overcommitted changes the cluster total (docs/semantics.md,
    # "Overcommitted nodes"): the session cannot show that, and ends.
    assert counted == {manifest["spec"]["nodeName"] for manifest in bound}.isdisjoint(cycle.overcommitted_nodes)
    if not counted:
        end_session(ssn)
        return
    place_arrivals(ssn, _arrive(kept_store, new))
    after = report_session(ssn).queues
    end_session(ssn)

    assert _binds(fast) == _binds(cycle.binds)
    assert {name: _quota(figures) for name, figures in after.items()} == {
        name: _quota(figures) for name, figures in cycle.queues.items()
    }


def test_a_bind_elsewhere_the_session_cannot_count_ends_it() -> None:
    """A bind on a node the session does not have, or of a task the session placed itself, is refused."""
    objects = [node(name="n1", cpu="4"), queue(name="q"), pod(name="mine", cpu="1")]
    ssn = _session(CONF, objects)
    assert ssn is not None
    store = Store(scheduler_name="py-volcano")
    _feed(store, objects)
    store.snapshot()
    for manifest in (pod(name="lost", node_name="gone"), pod(name="mine", node_name="n1")):
        store.apply_event(PODS, "ADDED" if manifest["metadata"]["name"] == "lost" else "MODIFIED", manifest)
        taken, _ = store.take_bound_elsewhere()
        assert not take_in_binds(ssn, taken)
    end_session(ssn)


def _session(conf: SchedulerConf, objects: list[dict[str, Any]]) -> Session | None:
    store = Store(scheduler_name="py-volcano")
    _feed(store, objects)
    _, kept = _kept_cycle(store, conf, PluginMemory(datetime.now(UTC)))
    return kept[0] if kept else None


def test_only_a_session_whose_plugins_all_take_jobs_is_kept() -> None:
    """The default configuration keeps its session; one with capacity (which cannot count a job added
    to an open session) closes it as before."""
    objects = [node(name="n1", cpu="4"), queue(name="q")]
    kept = _session(CONF, objects)
    assert kept is not None
    end_session(kept)
    assert _session(CAPACITY, objects) is None


def test_no_session_is_kept_when_the_next_cycle_may_admit_a_waiting_group() -> None:
    """g1's pod is placed, so g1 turns Running and overcommit no longer holds its minResources in queue:
    the next cycle admits g2, refused in this one, and places its pod on the last CPU before a one-pod
    arrival of the same queue. Kept, the session would have given that CPU to the arrival. A cycle that
    places nothing and changes no phase keeps its session while a group waits."""
    objects = [
        node(name="n0", cpu="9"),
        queue(name="q0"),
        pod_group(name="g0", queue="q0", phase="Running"),
        *(pod(name=f"g0-{i}", group="g0", node_name="n0", phase="Running") for i in range(2)),
        pod_group(name="g1", queue="q0", phase="Inqueue", min_resources={"cpu": "3"}),
        pod(name="g1-0", group="g1"),
        pod(name="g1-1", group="g1", cpu="2", node_name="n0", phase="Running"),
        pod(name="g1-2", group="g1", cpu="3", node_name="n0", phase="Running"),
        pod_group(name="g2", queue="q0", min_resources={"cpu": "1"}),
        pod(name="g2-0", group="g2"),
    ]
    store = Store(scheduler_name="py-volcano")
    _feed(store, objects)
    first, kept = _kept_cycle(store, CONF, PluginMemory(datetime.now(UTC)))
    assert _binds(first.binds) == [("default/g1-0", "n0")]
    assert first.pod_groups[JobID("default/g2")].phase is PodGroupPhase.PENDING
    assert kept == []
    _arrive(store, [pod(name="arrival-0", queue="q0")])
    assert _binds(run_cycle(store.snapshot(), CONF, default_registry()).binds) == [("default/g2-0", "n0")]

    unchanged = [obj for obj in objects if obj["metadata"]["name"] not in ("g1-0", "g1", "g2")]
    unchanged += [
        pod_group(name="g1", queue="q0", phase="Running", min_resources={"cpu": "3"}),
        pod_group(name="g2", queue="q0", min_resources={"cpu": "5"}),  # more than the cluster can admit
    ]
    store = Store(scheduler_name="py-volcano")
    _feed(store, unchanged)
    first, kept = _kept_cycle(store, CONF, PluginMemory(datetime.now(UTC)))
    assert first.binds == [] and first.pod_groups[JobID("default/g2")].phase is PodGroupPhase.PENDING
    assert len(kept) == 1
    end_session(kept[0])


def test_a_session_is_kept_while_a_group_waits_when_only_a_one_pod_job_binding_changes_phase() -> None:
    """A pod the fast path placed is still Binding at the next cycle: its one-pod job shows Running (a
    placed pod's) and the cycle reports it Pending (Binding does not count yet). Enqueue counted no
    room for it beyond its pod either way, so with g2 still waiting the session is kept."""
    objects = [
        node(name="n0", cpu="9"),
        queue(name="q0"),
        pod_group(name="g2", queue="q0", min_resources={"cpu": "50"}),  # more than the cluster can admit
        pod(name="g2-0", group="g2"),
    ]
    store = Store(scheduler_name="py-volcano")
    _feed(store, objects)
    memory = PluginMemory(datetime.now(UTC))
    _, kept = _kept_cycle(store, CONF, memory)
    assert len(kept) == 1
    placed: list[tuple[TaskInfo, str]] = []
    kept[0].on_binds = placed.extend
    assert place_arrivals(kept[0], _arrive(store, [pod(name="solo", queue="q0")])) == []
    end_session(kept[0])
    assert _binds(placed) == [("default/solo", "n0")]
    store.assume("default/solo", "n0")
    second, kept = _kept_cycle(store, CONF, memory)
    solo = JobID("default/podgroup-solo")
    assert second.pod_groups[solo].phase is PodGroupPhase.PENDING
    assert len(kept) == 1 and kept[0].jobs[solo].phase is PodGroupPhase.RUNNING
    assert kept[0].jobs[JobID("default/g2")].is_pending()
    end_session(kept[0])


def test_a_session_is_kept_while_only_jobs_that_need_no_room_wait() -> None:
    """One-pod jobs another shard instance places are left out of the cycle and stay Pending, and a
    PodGroup made for a pod already placed has nothing to place: neither waits for room (enqueue admits a
    job without minResources whatever the room), so a cycle that binds keeps its session beside them."""
    objects = [
        node(name="n0", cpu="9"),
        queue(name="q0"),
        pod(name="theirs", queue="q0"),
        pod(name="mine", queue="q0"),
        pod_group(name="made", queue="q0", min_resources={"cpu": "50"}),  # more than the cluster can admit
        pod(name="made-0", group="made", node_name="n0", phase="Running"),
    ]
    store = Store(scheduler_name="py-volcano")
    _feed(store, objects)
    kept: list[Session] = []
    theirs = JobID("default/podgroup-theirs")
    result = run_cycle(store.snapshot(), CONF, default_registry(), skip=frozenset({theirs}), keep=kept.append)
    assert _binds(result.binds) == [("default/mine", "n0")]
    assert len(kept) == 1 and kept[0].jobs[theirs].is_pending()
    assert kept[0].jobs[JobID("default/made")].is_pending()
    end_session(kept[0])


def test_what_the_fast_path_leaves_for_the_next_cycle() -> None:
    """A best-effort pod (backfill's), a pod whose queue is closed, and a pod that fits no node stay
    pending and are returned; a pod that fits is placed beside them."""
    objects = [node(name="n1", cpu="4"), queue(name="q"), {**queue(name="shut"), "status": {"state": "Closed"}}]
    ssn = _session(CONF, objects)
    assert ssn is not None
    store = Store(scheduler_name="py-volcano")
    _feed(store, objects)
    store.snapshot()
    arrivals = [
        pod(name="best-effort", cpu="", memory=""),
        pod(name="closed", queue="shut"),
        pod(name="too-big", cpu="8"),
        pod(name="fits", queue="q"),
    ]
    placed: list[tuple[TaskInfo, str]] = []
    ssn.on_binds = placed.extend
    left = place_arrivals(ssn, _arrive(store, arrivals))
    end_session(ssn)
    assert sorted(task.name for job in left for task in job.tasks.values()) == ["best-effort", "closed", "too-big"]
    assert _binds(placed) == [("default/fits", "n1")]


def test_a_job_added_to_an_open_session_is_counted_as_its_opening_counts_it() -> None:
    """An admitted group with minResources added after the opening: overcommit's claim, proportion's
    figures and drf's share are those of a session opened with it."""
    base = [node(name="n1", cpu="8"), queue(name="q"), pod(name="running", cpu="2", node_name="n1", queue="q")]
    group = [
        pod_group(name="g", queue="q", min_member=1, phase="Inqueue", min_resources={"cpu": "3"}),
        pod(name="g-0", group="g", cpu="3"),
    ]
    registry = default_registry()
    opened = open_session(cluster(*base, *group), CONF, registry)
    added = open_session(cluster(*base), CONF, registry)
    job = cluster(*base, *group).jobs[JobID("default/g")]
    added.add_job(job)
    for ssn in (opened, added):
        report_session(ssn)
    overcommit = [cast(OvercommitPlugin, ssn.plugins["overcommit"]).inqueue for ssn in (opened, added)]
    assert _exact(overcommit[0]) == _exact(overcommit[1]) == (3000.0, 0.0, [])
    assert _quota(opened.queue_figures["q"]) == _quota(added.queue_figures["q"])
    shares = [cast(DrfPlugin, ssn.plugins["drf"]).shares for ssn in (opened, added)]
    assert [repr(s.attrs[job.uid]) for s in shares if s is not None] == [repr(shares[0].attrs[job.uid])] * 2
