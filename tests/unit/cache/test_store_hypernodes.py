"""The store's HyperNodes: parsed as they come, resolved into a tree once, again only when a HyperNode or a
node changes; a malformed one is reported and skipped."""

from __future__ import annotations

from typing import Any

from py_volcano.cache.store import HYPER_NODES, NODES, PODS, Store


def node(name: str, rv: int, labels: dict[str, str] | None = None) -> dict[str, Any]:
    resources = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return {
        "kind": "Node",
        "metadata": {"name": name, "resourceVersion": str(rv), "labels": labels or {}},
        "status": {"allocatable": resources, "capacity": resources},
    }


def hyper_node(name: str, rv: int, tier: Any = 1, pattern: str = "^n") -> dict[str, Any]:
    return {
        "kind": "HyperNode",
        "metadata": {"name": name, "resourceVersion": str(rv)},
        "spec": {"tier": tier, "members": [{"type": "Node", "selector": {"regexMatch": {"pattern": pattern}}}]},
    }


def pod(name: str, rv: int) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "resourceVersion": str(rv)},
        "spec": {"schedulerName": "py-volcano", "containers": [{"name": "c"}]},
        "status": {"phase": "Pending"},
    }


def filled() -> Store:
    store = Store(scheduler_name="py-volcano")
    store.apply_event(NODES, "ADDED", node("n0", 1))
    store.apply_event(NODES, "ADDED", node("n1", 2))
    store.apply_event(HYPER_NODES, "ADDED", hyper_node("s0", 3))
    return store


def test_no_hypernode_no_tree() -> None:
    store = Store(scheduler_name="py-volcano")
    store.apply_event(NODES, "ADDED", node("n0", 1))
    assert store.snapshot().hyper_nodes is None


def test_the_tree_is_kept_across_snapshots_until_a_hypernode_or_a_node_changes() -> None:
    store = filled()
    first = store.snapshot().hyper_nodes
    assert first is not None
    assert [int(row) for row in first.rows[first.index["s0"]]] == [0, 1]
    store.apply_event(PODS, "ADDED", pod("p", 4))
    assert store.snapshot().hyper_nodes is first
    store.apply_event(NODES, "MODIFIED", node("n1", 5))  # a heartbeat: nothing read changed
    assert store.snapshot().hyper_nodes is first
    store.apply_event(NODES, "MODIFIED", node("n1", 6, labels={"rack": "r1"}))
    second = store.snapshot().hyper_nodes
    assert second is not None and second is not first
    store.apply_event(HYPER_NODES, "MODIFIED", hyper_node("s0", 7, pattern="^n0$"))
    third = store.snapshot().hyper_nodes
    assert third is not None and [int(row) for row in third.rows[third.index["s0"]]] == [0]
    store.apply_event(NODES, "ADDED", node("n2", 8))
    fourth = store.snapshot().hyper_nodes
    assert fourth is not None and fourth.node_names == ("n0", "n1", "n2")
    store.apply_event(HYPER_NODES, "DELETED", hyper_node("s0", 9))
    assert store.snapshot().hyper_nodes is None


def test_a_malformed_hypernode_is_reported_and_skipped() -> None:
    store = filled()
    store.apply_event(HYPER_NODES, "ADDED", hyper_node("bad", 4, tier="one"))
    snapshot = store.snapshot()
    assert "HyperNode bad: field spec.tier: expected an integer >= 0, got 'one'" in snapshot.warnings
    assert snapshot.hyper_nodes is not None
    assert "bad" not in snapshot.hyper_nodes.index and "s0" in snapshot.hyper_nodes.index
