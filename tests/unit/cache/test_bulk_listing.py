"""Pods that come before the pods' first listing ends, and before any snapshot, are noted in bulk
(`Store._note_pod_in_bulk`: a restart lists 150,000 of them): the store then holds, for the first
snapshot and for every change after it, what noting each pod on its own gives."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from py_volcano.api import JobID, PodGroupPhase
from py_volcano.cache.store import KINDS, PODS, Changes, Store
from py_volcano.framework import run_cycle, shares_backlog
from py_volcano.registry import default_registry
from tests.unit.cache.test_built_snapshot import _all_jobs, _decisions, echoes
from tests.unit.cache.test_store import pod, reconcile
from tests.unit.framework.test_backoff_equivalence import CONFS, clusters


def _stores(objects: list[dict[str, Any]]) -> tuple[Store, Store]:
    """The same objects in two stores: pods listed in one page with the pods' first listing (in bulk),
    and pods watched one by one after an empty first listing."""
    bulk, each = Store(scheduler_name="py-volcano"), Store(scheduler_name="py-volcano")
    reconcile(each, PODS, [], version=0, started=0.0)
    listing = bulk.listing(PODS, started=0.0)
    for kind in KINDS:
        for obj in objects:
            if obj["kind"] != kind.name:
                continue
            each.apply_event(kind, "ADDED", obj)
            if kind is PODS:
                listing.add([obj])
            else:
                bulk.apply_event(kind, "ADDED", obj)
    listing.finish(version=0)
    return bulk, each


def _noted(store: Store) -> tuple[Any, ...]:
    """What a store noted for later: named PodGroups, fractions, work, and what a kept session is told
    (the changes it cannot see are counted from the snapshot it was kept at: `outside_changes` since)."""
    return (
        dict(store._named),
        store.fractional,
        store.work_arrived.is_set(),
        list(store.arrivals),
        list(store.bound_elsewhere),
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.sampled_from(sorted(CONFS)), st.data())
def test_pods_noted_in_bulk_leave_the_store_as_noting_each_pod(
    objects: list[dict[str, Any]], name: str, data: Any
) -> None:
    """The first snapshot and cycle are the same, and so are the second after the same echoes and a
    PodGroup changed: its snapshot, what it carries, and what the store noted for the backoff and a
    kept session in between."""
    conf = CONFS[name]
    listed = [obj for obj in objects if obj["kind"] == "Pod"]
    if listed and data.draw(st.booleans(), label="a fraction"):  # no job settles while one is in the store
        fraction = copy.deepcopy(data.draw(st.sampled_from(listed), label="requests a fraction"))
        fraction["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1.0005"
        named = fraction["metadata"]["name"]
        objects = [fraction if obj["kind"] == "Pod" and obj["metadata"]["name"] == named else obj for obj in objects]
    bulk, each = _stores(objects)
    assert bulk.take_changes().everything or not any(obj["kind"] == "Pod" for obj in objects)
    assert _noted(bulk)[:3] == _noted(each)[:3]
    each.take_changes()

    firsts = [store.snapshot(token=conf, settle=shares_backlog(conf)) for store in (bulk, each)]
    outside = [store.outside_changes for store in (bulk, each)]
    assert _all_jobs(firsts[0]) == _all_jobs(firsts[1])
    results = [run_cycle(snapshot, conf, default_registry()) for snapshot in firsts]
    assert _decisions(results[0]) == _decisions(results[1])
    decided: dict[JobID, tuple[PodGroupPhase, bool]] = {
        job: (status.phase, status.shadow) for job, status in results[0].pod_groups.items()
    }
    pods = {obj["metadata"]["name"]: obj for obj in objects if obj["kind"] == "Pod"}
    changes = echoes(results[0], pods, data)
    groups = [obj for obj in objects if obj["kind"] == "PodGroup"]
    if groups:
        changed = copy.deepcopy(data.draw(st.sampled_from(groups), label="group changed"))
        changed["metadata"]["resourceVersion"] = "999"
        changed["spec"]["minMember"] = 1
    for store in (bulk, each):
        store.record_phases(decided)
        for task, node_name in results[0].binds:
            store.assume(task.key, node_name)
        for event, obj in changes:
            store.apply_event(PODS, event, obj)
        if groups:
            store.apply_event(next(kind for kind in KINDS if kind.name == "PodGroup"), "MODIFIED", changed)
    assert _noted(bulk) == _noted(each)
    assert bulk.outside_changes - outside[0] == each.outside_changes - outside[1]
    assert bulk.dirty == each.dirty
    assert bulk.take_changes() == each.take_changes()

    seconds = [store.snapshot(token=conf, settle=shares_backlog(conf)) for store in (bulk, each)]
    assert _all_jobs(seconds[0]) == _all_jobs(seconds[1])
    assert sorted(seconds[0].settled.entries) == sorted(seconds[1].settled.entries)
    results = [run_cycle(snapshot, conf, default_registry()) for snapshot in seconds]
    assert _decisions(results[0]) == _decisions(results[1])


def test_pods_listed_in_bulk_ask_for_a_cycle_over_everything_then_each_is_noted() -> None:
    """A waiting pod of ours in the pods' first listing raises `work_arrived` and the changes say
    everything (no job singled out); once the listing ended, a pod is noted on its own again."""
    store = Store(scheduler_name="py-volcano")
    listing = store.listing(PODS, started=0.0)
    listing.add([pod("bound", rv=1, node="n1"), pod("waits", rv=2)])
    assert store.work_arrived.is_set()
    assert store.take_changes() == Changes(everything=True)
    assert not store.dirty and not store.arrivals
    listing.finish(version=2)
    store.apply_event(PODS, "ADDED", pod("later", rv=3))
    assert store.take_changes() == Changes(jobs={JobID("ns/podgroup-uid-later")})
    assert list(store.arrivals) == ["ns/later"]
