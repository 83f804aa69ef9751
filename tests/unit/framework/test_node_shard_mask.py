"""Hard node sharding: a cycle places pods only on its shard's nodes, while every node and pod still counts
(cluster total, queue capability), as vc-scheduler's `--scheduler-sharding-mode=hard` does."""

from __future__ import annotations

from typing import Any

from py_volcano.api import ClusterInfo, CycleResult
from py_volcano.framework import open_session, run_cycle
from py_volcano.registry import default_registry, load_conf
from tests.builders import cluster, node, pod, queue


def schedule(*objects: dict[str, Any], shard: frozenset[str] | None) -> CycleResult:
    registry = default_registry()
    snapshot = cluster(*objects)
    snapshot.shard_nodes = shard
    return run_cycle(snapshot, load_conf(None, registry=registry), registry)


def nodes() -> list[dict[str, Any]]:
    """A small node in the shard and a large one outside it (the one every scorer prefers)."""
    return [node(name="n1", cpu="2"), node(name="n2", cpu="8")]


def test_pods_go_only_to_the_shards_nodes() -> None:
    result = schedule(*nodes(), *(pod(name=f"p{i}") for i in range(3)), shard=frozenset({"n1"}))
    assert sorted((task.name, host) for task, host in result.binds) == [("p0", "n1"), ("p1", "n1")]
    waits = [wait.message for wait in result.pod_waits.values()]
    assert len(waits) == 1 and "node isn't in scheduler node shard" in waits[0]


def test_without_a_shard_every_node_is_used() -> None:
    result = schedule(*nodes(), *(pod(name=f"p{i}") for i in range(3)), shard=None)
    assert len(result.binds) == 3


def test_an_empty_shard_places_nothing() -> None:
    assert schedule(*nodes(), pod(name="p0"), shard=frozenset()).binds == []


def test_pods_on_other_shards_count_towards_queue_capability() -> None:
    limited = queue(name="q", capability={"cpu": "2"})
    elsewhere = pod(name="r0", cpu="2", queue="q", node_name="n2")
    pending = pod(name="p0", queue="q")
    assert schedule(*nodes(), limited, elsewhere, pending, shard=frozenset({"n1"})).binds == []
    assert [t.name for t, _ in schedule(*nodes(), limited, pending, shard=frozenset({"n1"})).binds] == ["p0"]


def test_cluster_total_keeps_every_node_and_other_nodes_refuse() -> None:
    snapshot: ClusterInfo = cluster(*nodes(), pod(name="p0"))
    snapshot.shard_nodes = frozenset({"n1"})
    registry = default_registry()
    ssn = open_session(snapshot, load_conf(None, registry=registry), registry)
    task = next(iter(next(iter(ssn.jobs.values())).tasks.values()))
    assert ssn.total_resource.milli_cpu == 10_000
    assert ssn.predicate(task, ssn.nodes["n1"]) is None
    refusal = ssn.predicate(task, ssn.nodes["n2"])
    assert refusal is not None and refusal.reason == "node isn't in scheduler node shard" and not refusal.resolvable
    assert ssn.predicate_mask(task).tolist() == [True, False]
