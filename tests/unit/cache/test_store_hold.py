"""Holding the store: changes that come while a snapshot is taken off the event loop run after it, in order."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from structlog.testing import capture_logs

from py_volcano.aio import in_thread
from py_volcano.api import ClusterInfo, JobID, NodeUsage, PodGroupPhase
from py_volcano.cache.store import NODES, POD_GROUPS, PODS, Store
from tests.unit.cache.test_store import node, pod, pod_group, reconcile

Change = Callable[[Store], None]

#: One of every change the event loop makes to the store, in an order that makes each matter.
CHANGES: list[Change] = [
    lambda s: s.apply_event(PODS, "ADDED", pod("a", rv=10)),
    lambda s: s.apply_event(PODS, "ADDED", pod("b", rv=11, cpu="2")),
    lambda s: s.apply_event(POD_GROUPS, "ADDED", pod_group("g", rv=12)),
    lambda s: s.assume("ns/a", "n1"),
    lambda s: s.bind_settled("ns/a", ok=True),
    lambda s: s.apply_event(PODS, "MODIFIED", pod("a", rv=13, node="n1", phase="Running")),
    lambda s: s.assume("ns/b", "n2"),
    lambda s: s.bind_settled("ns/b", ok=False),
    lambda s: s.mark_releasing("ns/a"),
    lambda s: s.eviction_settled("ns/a", ok=None),
    lambda s: s.record_phases({JobID("ns/g"): (PodGroupPhase.INQUEUE, False)}),
    lambda s: s.set_node_usage({"n1": NodeUsage(cpu=0.5, memory=0.25, metrics_time=datetime(2026, 1, 1, tzinfo=UTC))}),
    lambda s: s.set_shard_peers(("a", "b")),
    lambda s: s.set_shard_nodes(frozenset({"n1"})),
    lambda s: s.apply_event(NODES, "ADDED", node("n3", rv=14)),
    lambda s: s.apply_event(PODS, "DELETED", pod("b", rv=15, cpu="2")),
]


def _fresh(clock: list[float]) -> Store:
    store = Store(scheduler_name="py-volcano", clock=lambda: clock[0])
    for kind in (PODS, NODES, POD_GROUPS):
        reconcile(store, kind, [], version=1, started=clock[0])
    store.apply_event(NODES, "ADDED", node("n1", rv=2))
    store.apply_event(NODES, "ADDED", node("n2", rv=3))
    return store


def _state(store: Store) -> dict[str, Any]:
    """What a cycle or a later change reads of the store."""
    return {
        "records": {
            kind: {key: (record.version, record.uid, record.raw, record.error) for key, record in records.items()}
            for kind, records in store.records.items()
        },
        "assumed": {key: (p.node, p.settled, p.unanswered) for key, p in store.assumed.items()},
        "releasing": {key: (p.settled, p.unanswered) for key, p in store.releasing.items()},
        "phases": dict(store.phases),
        "tombstones": store.tombstones,
        "synced": set(store.synced),
        "generation": store.generation,
        "arrivals": list(store.arrivals),
        "usage": dict(store.node_usage),
        "shard": (store.shard_nodes, store.shard_peers),
        "dirty": set(store.dirty),
        "freed": store.changes.freed,
    }


def _view(cluster: ClusterInfo) -> dict[str, Any]:
    """A snapshot's jobs (their tasks' statuses and nodes) and nodes (their idle CPU)."""
    return {
        "jobs": {
            uid: sorted((t.name, t.status.name, t.node_name) for t in job.tasks.values())
            for uid, job in cluster.jobs.items()
        },
        "nodes": {name: n.idle.milli_cpu for name, n in cluster.nodes.items()},
        "shard": cluster.shard_nodes,
    }


def test_held_changes_wait_and_then_run_in_order() -> None:
    clock = [100.0]
    held, direct = _fresh(clock), _fresh(clock)
    before = _state(held)
    with held.held():
        for change in CHANGES:
            change(held)
        assert _state(held) == before  # nothing moved while held
    for change in CHANGES:
        change(direct)
    assert _state(held) == _state(direct)
    assert _view(held.snapshot()) == _view(direct.snapshot())


def test_listing_waits_for_the_hold() -> None:
    clock = [100.0]
    held, direct = _fresh(clock), _fresh(clock)
    for store in (held, direct):
        store.apply_event(PODS, "ADDED", pod("ghost", rv=5))
    listed = [pod("a", rv=20), pod("b", rv=21)]
    with held.held():
        listing = held.listing(PODS, started=clock[0])
        listing.add(iter(listed))  # a page handed over as an iterator is read now, not when the hold ends
        listing.finish(version=22)
        assert set(held.records[PODS.name]) == {"ns/ghost"}
    reconcile(direct, PODS, listed, version=22, started=clock[0])
    assert set(held.records[PODS.name]) == {"ns/a", "ns/b"}
    assert _state(held) == _state(direct)


def test_a_snapshot_in_a_thread_reads_the_store_as_the_hold_found_it() -> None:
    """The runner's cycle: the snapshot runs in a worker thread while the loop applies events."""
    clock = [100.0]
    store = _fresh(clock)
    store.apply_event(PODS, "ADDED", pod("early", rv=9))
    expected = _view(_fresh_copy(store, clock).snapshot())
    taking = threading.Event()

    def snapshot() -> ClusterInfo:
        taking.set()
        time.sleep(0.05)  # the loop's changes come while the snapshot is being taken
        return store.snapshot()

    async def cycle() -> ClusterInfo:
        with store.held():
            work = asyncio.ensure_future(in_thread(snapshot))
            await asyncio.to_thread(taking.wait)
            for change in CHANGES:
                change(store)
            return await work

    taken = asyncio.run(cycle())
    assert _view(taken) == expected
    later = _view(store.snapshot())
    assert later["jobs"]["ns/podgroup-uid-a"] == [("a", "RELEASING", "n1")] and "n3" in later["nodes"]


def _fresh_copy(store: Store, clock: list[float]) -> Store:
    """A store given the same pod events as `store` after `_fresh`."""
    copy = _fresh(clock)
    copy.apply_event(PODS, "ADDED", pod("early", rv=9))
    return copy


def test_a_failing_held_change_is_logged_and_the_rest_still_run() -> None:
    store = _fresh([100.0])

    def broken() -> None:
        raise ValueError("boom")

    with capture_logs() as logs, store.held():
        store.run_or_hold(broken)
        store.apply_event(PODS, "ADDED", pod("a", rv=10))
    assert "ns/a" in store.records[PODS.name]
    assert [entry["change"] for entry in logs if entry["event"] == "held_change_failed"] == [
        "test_a_failing_held_change_is_logged_and_the_rest_still_run.<locals>.broken"
    ]
    assert store.held_changes is None


def test_a_hold_is_not_taken_twice() -> None:
    store = _fresh([100.0])
    with store.held(), pytest.raises(RuntimeError, match="held already"), store.held():
        pass
    assert store.held_changes is None


def test_the_pod_watch_stops_reading_while_the_store_is_held() -> None:
    """The informer waits for the hold to end before it applies (and reads on past) an event: the events
    wait in the stream, none is read only to be held."""
    from py_volcano.cache.informer import _follow

    store = _fresh([100.0])
    read: list[str] = []

    async def stream() -> AsyncIterator[tuple[int, Any]]:
        for name, rv in (("a", 10), ("b", 11)):
            read.append(name)
            yield 200, {"type": "ADDED", "object": pod(name, rv=rv)}

    async def scenario() -> tuple[list[str], list[str], int]:
        with store.held():
            following = asyncio.ensure_future(_follow(stream(), store, PODS, 1))
            await asyncio.sleep(0.05)
            during = (list(read), sorted(store.records[PODS.name]), len(store.held_changes or ()))
        version = await following
        assert sorted(store.records[PODS.name]) == ["ns/a", "ns/b"] and version == 11
        return during

    assert asyncio.run(scenario()) == (["a"], [], 0)
