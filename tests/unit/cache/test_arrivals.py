"""What the store keeps for the fast path: the pods that arrived since the last snapshot (`take_arrivals`),
the pods of ours someone else bound since then (`take_bound_elsewhere`), and the count of changes a
session kept open since then cannot see (`outside_changes`)."""

from __future__ import annotations

from typing import Any

from py_volcano.api import TaskStatus
from py_volcano.cache.store import NODES, POD_GROUPS, PODS, PRIORITY_CLASSES, QUEUES, Store
from tests.unit.cache.test_store import node, pod, pod_group, reconcile


def _store() -> Store:
    store = Store(scheduler_name="py-volcano")
    reconcile(store, PODS, [], version=0, started=0.0)  # pods listed: each change is noted on its own
    store.apply_event(NODES, "ADDED", node("n1", rv=1))
    return store


def _in_group(manifest: dict[str, Any], group: str) -> dict[str, Any]:
    manifest["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": group}
    return manifest


def test_arrivals_are_the_waiting_pods_of_ours_since_the_last_snapshot_each_taken_once() -> None:
    """Unbound pods of ours without a PodGroup, in creation order, as one-pod jobs; a pod bound meanwhile,
    one whose bind of ours is in flight and another scheduler's are left out; a pod in a PodGroup is only
    counted (a cycle takes it); a snapshot takes them all."""
    store = _store()
    store.apply_event(PODS, "ADDED", pod("b", rv=2, creationTimestamp="2026-11-27T10:00:02Z"))
    store.apply_event(PODS, "ADDED", pod("a", rv=3, creationTimestamp="2026-11-27T10:00:01Z"))
    store.apply_event(PODS, "ADDED", pod("bound", rv=4, node="n1"))
    theirs = pod("theirs", rv=5)
    theirs["spec"]["schedulerName"] = "default-scheduler"
    store.apply_event(PODS, "ADDED", theirs)
    store.apply_event(PODS, "ADDED", pod("assumed", rv=6))
    store.assume("ns/assumed", "n1")
    store.apply_event(PODS, "ADDED", pod("later-bound", rv=7))
    store.apply_event(PODS, "MODIFIED", pod("later-bound", rv=8, node="n1"))
    store.apply_event(PODS, "ADDED", _in_group(pod("grouped", rv=9), "pg"))
    assert store.pods_arrived.is_set()

    jobs, others = store.take_arrivals()
    assert [[task.name for task in job.tasks.values()] for job in jobs] == [["a"], ["b"]]
    assert others == 1
    assert store.take_arrivals() == ([], 0)

    store.apply_event(PODS, "ADDED", pod("c", rv=10))
    store.snapshot()
    assert store.take_arrivals() == ([], 0)


def test_changes_a_kept_session_cannot_see_are_counted_and_the_rest_are_not() -> None:
    store = _store()
    store.apply_event(QUEUES, "ADDED", {"metadata": {"name": "q", "resourceVersion": "2"}, "spec": {"weight": 1}})
    store.apply_event(PODS, "ADDED", pod("mine", rv=3))
    store.apply_event(PODS, "ADDED", pod("other", rv=4))
    counted = store.outside_changes

    def counts(kind: Any, event: str, obj: dict[str, Any]) -> bool:
        before = store.outside_changes
        store.apply_event(kind, event, obj)
        return store.outside_changes > before

    written = {"metadata": {"name": "q", "resourceVersion": "5"}, "spec": {"weight": 1}, "status": {"running": 1}}
    assert not counts(QUEUES, "MODIFIED", written)  # the status the scheduler writes
    assert counts(QUEUES, "MODIFIED", {"metadata": {"name": "q", "resourceVersion": "6"}, "spec": {"weight": 2}})
    store.assume("ns/mine", "n1")
    assert not counts(PODS, "MODIFIED", pod("mine", rv=7, node="n1"))  # the echo of our bind
    assert not counts(PODS, "MODIFIED", pod("mine", rv=8, node="n1", phase="Running"))
    assert not counts(PODS, "ADDED", pod("placed-by-others", rv=9, node="n1"))  # a bind elsewhere: taken in
    assert list(store.bound_elsewhere) == ["ns/placed-by-others"]
    theirs = pod("theirs-placed", rv=9, node="n1")
    theirs["spec"]["schedulerName"] = "default-scheduler"
    assert counts(PODS, "ADDED", theirs)
    store.apply_event(PODS, "ADDED", _in_group(pod("grouped-waits", rv=9), "other-pg"))
    assert counts(PODS, "MODIFIED", _in_group(pod("grouped-waits", rv=9, node="n1"), "other-pg"))
    assert not counts(PODS, "DELETED", pod("mine", rv=10, node="n1", phase="Running"))  # frees room only
    assert counts(PODS, "DELETED", pod("other", rv=11))  # a waiting pod of ours: its queue asks for less
    assert not counts(POD_GROUPS, "ADDED", pod_group("pg", rv=12))  # no pod names it yet
    store.apply_event(PODS, "ADDED", pod("joins", rv=13))
    assert not counts(PODS, "MODIFIED", _in_group(pod("joins", rv=14), "pg"))  # the same queue: default
    assert counts(POD_GROUPS, "MODIFIED", {**pod_group("pg", rv=15), "spec": {"minMember": 2, "queue": "q"}})
    moved = _in_group(pod("moves", rv=16), "pg")
    store.apply_event(PODS, "ADDED", pod("moves", rv=16))
    assert counts(PODS, "MODIFIED", {**moved, "metadata": {**moved["metadata"], "resourceVersion": "17"}})
    store.apply_event(PODS, "ADDED", _in_group(pod("early", rv=19), "late"))
    assert counts(POD_GROUPS, "ADDED", pod_group("late", rv=20))  # a pod named it already
    assert not counts(NODES, "MODIFIED", node("n1", rv=21))  # a heartbeat: nothing the scheduler reads
    high = {"metadata": {"name": "high", "resourceVersion": "23"}, "value": 100}
    assert counts(PRIORITY_CLASSES, "ADDED", high)
    assert not counts(PRIORITY_CLASSES, "MODIFIED", {**high, "metadata": {"name": "high", "resourceVersion": "24"}})
    assert counts(NODES, "MODIFIED", node("n1", rv=22, cpu="8"))
    before = store.outside_changes
    store.set_shard_nodes(frozenset({"n1"}))
    store.set_shard_nodes(frozenset({"n1"}))
    assert store.outside_changes == before + 1  # the shard's nodes changed once
    assert store.outside_changes > counted


def test_pods_of_ours_someone_else_bound_are_taken_with_their_nodes_each_once() -> None:
    """A waiting pod of ours without a PodGroup that another shard instance binds, or one created bound,
    comes back as its one-pod job (the task Bound) with its node, in creation order; one gone since is
    dropped, one finished already is only counted (a kept session cannot take it in); a snapshot takes
    them all."""
    store = _store()
    store.apply_event(NODES, "ADDED", node("n2", rv=2))
    store.apply_event(PODS, "ADDED", pod("waits", rv=3, creationTimestamp="2026-11-27T10:00:02Z"))
    store.take_arrivals()
    store.apply_event(PODS, "MODIFIED", pod("waits", rv=4, node="n2", creationTimestamp="2026-11-27T10:00:02Z"))
    store.apply_event(PODS, "ADDED", pod("born-bound", rv=5, node="n1", creationTimestamp="2026-11-27T10:00:01Z"))
    store.apply_event(PODS, "ADDED", pod("gone", rv=6, node="n1"))
    store.apply_event(PODS, "DELETED", pod("gone", rv=7, node="n1"))
    store.apply_event(PODS, "ADDED", pod("done", rv=8, node="n1", phase="Succeeded"))
    store.apply_event(PODS, "ADDED", pod("ours", rv=9))
    store.assume("ns/ours", "n1")
    store.apply_event(PODS, "MODIFIED", pod("ours", rv=10, node="n1"))  # the echo of our own bind

    bound, others = store.take_bound_elsewhere()
    assert [([task.name for task in job.tasks.values()], node_name) for job, node_name in bound] == [
        (["born-bound"], "n1"),
        (["waits"], "n2"),
    ]
    assert [task.status for job, _ in bound for task in job.tasks.values()] == [TaskStatus.BOUND] * 2
    assert others == 1
    assert store.take_bound_elsewhere() == ([], 0)

    store.apply_event(PODS, "ADDED", pod("later", rv=11, node="n2"))
    store.snapshot()
    assert store.take_bound_elsewhere() == ([], 0)
