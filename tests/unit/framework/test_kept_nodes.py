"""A session that carries node rows and totals from the last one (`PluginMemory.nodes`, `NodeArrays`'s
`kept`, `NodeTotals`) opens with exactly the matrices, cluster total and overcommitted nodes of a
session over a store built afresh, while pods are bound, deleted, created (a fractional one, one asking
for a GPU) and marked releasing, nodes change and join, and a node's pods use more than it allocates."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import event as note_event
from hypothesis import strategies as st

from py_volcano.api import ClusterInfo, NodeArrays
from py_volcano.cache.store import Store
from py_volcano.framework import PluginMemory, close_session, open_session
from py_volcano.framework.cluster_total import NodeTotals
from py_volcano.framework.session import Session
from py_volcano.registry import default_registry, load_conf
from tests.builders import cluster, node, pod, queue
from tests.unit.cache.test_built_snapshot import _feed, apply_changes, echoes, maybe_evict

CONF = load_conf(None)


@st.composite
def clusters(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A few nodes (one with GPUs sometimes), a queue, placed and pending pods."""
    nodes = draw(st.integers(1, 4))
    objects = [node(name=f"n{i}", cpu=str(draw(st.integers(2, 8)))) for i in range(nodes)]
    if draw(st.booleans()):
        objects.append(node(name="gpu", cpu="8", scalars={"nvidia.com/gpu": "4"}))
    objects.append(queue(name="q0"))
    names = [obj["metadata"]["name"] for obj in objects if obj["kind"] == "Node"]
    for p in range(draw(st.integers(0, 8))):
        placed = draw(st.sampled_from(["", *names]))
        objects.append(pod(name=f"p{p}", cpu=str(draw(st.integers(1, 3))), node_name=placed, queue="q0"))
    return objects


def _opened(snapshot: ClusterInfo, memory: PluginMemory | None) -> Session:
    return open_session(snapshot, CONF, default_registry(), memory=memory)


def _rows(ssn: Session) -> tuple[Any, ...]:
    arrays = ssn.arrays
    return (
        arrays.dims,
        [node.name for node in arrays.nodes],
        *(matrix.tolist() for matrix in (arrays.allocatable, arrays.idle, arrays.releasing, arrays.pipelined)),
    )


def _totals(ssn: Session) -> tuple[Any, ...]:
    total, used = ssn.total_resource, ssn.used_resource
    return (
        (total.milli_cpu, total.memory, list(total.scalars.items())),
        (used.milli_cpu, used.memory, list(used.scalars.items())),
        ssn.overcommitted,
    )


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(objects=clusters(), data=st.data())
def test_carried_node_rows_equal_rows_built_afresh(objects: list[dict[str, Any]], data: Any) -> None:
    kept = Store(scheduler_name="py-volcano")
    _feed(kept, objects)
    memory = PluginMemory(datetime.now(UTC))
    others = {obj["metadata"]["name"]: obj for obj in objects if obj["kind"] not in ("Pod", "Node")}
    nodes = {obj["metadata"]["name"]: obj for obj in objects if obj["kind"] == "Node"}
    pods = {obj["metadata"]["name"]: obj for obj in objects if obj["kind"] == "Pod"}
    releasing: set[str] = set()
    carried = 0
    for cycle in range(5):
        fresh = Store(scheduler_name="py-volcano")
        _feed(fresh, list(others.values()) + list(nodes.values()) + list(pods.values()))
        for key in releasing:
            fresh.mark_releasing(key)
        ssn = _opened(kept.snapshot(token=CONF, settle=True), memory)
        alone = _opened(fresh.snapshot(), None)
        carried += ssn.arrays.stale is not None
        assert _rows(ssn) == _rows(alone)
        assert _totals(ssn) == _totals(alone)
        close_session(alone)
        for name in CONF.actions:
            default_registry().actions[name].new(CONF.action_args[name]).execute(ssn)
        result = close_session(ssn)
        changes = [("Pod", event, obj) for event, obj in echoes(result, pods, data)]
        if pods and data.draw(st.integers(0, 3), label="pod gone") == 0:
            changes.append(("Pod", "DELETED", pods[data.draw(st.sampled_from(sorted(pods)))]))
        if data.draw(st.integers(0, 2), label="new pod") == 0:
            cpu = data.draw(st.sampled_from(["1", "2", "1500m", "1100u"]), label="its cpu")
            target = data.draw(st.sampled_from(["", *sorted(nodes)]), label="bound at creation to")
            created = pod(name=f"new-{cycle}", cpu=cpu, node_name=target, queue="q0")
            if data.draw(st.integers(0, 3), label="asks a GPU") == 0:  # a node without any then names it
                created["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "1"
            changes.append(("Pod", "ADDED", created))
        change = data.draw(st.sampled_from(["none", "none", "shrunk", "joined"]), label="node change")
        if change == "shrunk":  # allocatable below what runs there: overcommitted
            shrunk = copy.deepcopy(nodes[data.draw(st.sampled_from(sorted(nodes)))])
            shrunk["status"]["allocatable"]["cpu"] = "1"
            changes.append(("Node", "MODIFIED", shrunk))
        elif change == "joined":
            changes.append(("Node", "ADDED", node(name=f"j{cycle}", cpu="4")))
        apply_changes(kept, changes, {"Pod": pods, "Node": nodes}, releasing)
        maybe_evict(kept, pods, releasing, data)
    note_event(f"carried rows: {bool(carried)}")


def test_a_failed_cycle_leaves_nothing_to_carry() -> None:
    store = Store(scheduler_name="py-volcano")
    _feed(store, [node(name="n0"), queue(name="q0"), pod(name="p0", node_name="n0", queue="q0")])
    memory = PluginMemory(datetime.now(UTC))
    first = _opened(store.snapshot(token=CONF, settle=True), memory)
    assert memory.nodes is None  # taken while the session is open
    close_session(first)
    assert memory.nodes is not None
    second = _opened(store.snapshot(token=CONF, settle=True), memory)
    assert second.arrays.stale == []
    assert memory.nodes is None  # a session that never closes hands nothing on
    third = _opened(store.snapshot(token=CONF, settle=True), memory)
    assert third.arrays.stale is None


def test_a_node_changed_by_the_last_session_is_written_again() -> None:
    store = Store(scheduler_name="py-volcano")
    _feed(store, [node(name="n0"), node(name="n1"), queue(name="q0"), pod(name="p0", queue="q0")])
    memory = PluginMemory(datetime.now(UTC))
    first = _opened(store.snapshot(token=CONF, settle=True), memory)
    for name in CONF.actions:
        default_registry().actions[name].new(CONF.action_args[name]).execute(first)
    result = close_session(first)
    ((_, placed),) = result.binds
    second = _opened(store.snapshot(token=CONF, settle=True), memory)
    assert second.arrays.stale == [second.nodes[placed].index]


def test_a_node_changed_during_the_session_before_is_counted_again_even_as_the_same_object() -> None:
    """The rows a NodeArrays carries are those of nodes unchanged through the whole session before, so
    the cluster total, computed when that session opened, holds for them too."""
    snapshot = cluster(node(name="n0", cpu="4"), node(name="n1", cpu="4"))
    nodes = list(snapshot.nodes.values())
    before = NodeArrays(nodes, ())
    totals = NodeTotals(nodes, None, None)
    waiting = next(t for j in cluster(pod(name="p", cpu="5")).jobs.values() for t in j.tasks.values())
    nodes[1].add_task(waiting)  # more than it allocates, while the session ran
    before.detach()
    after = NodeArrays(nodes, (), before)
    assert after.stale == [1]
    carried = NodeTotals(nodes, after.stale, totals)
    fresh = NodeTotals(nodes, None, None)
    assert carried.total.milli_cpu == fresh.total.milli_cpu == 9000
    assert carried.used.milli_cpu == fresh.used.milli_cpu == 5000
    assert carried.overcommitted == fresh.overcommitted and list(fresh.overcommitted) == ["n1"]


def _sums(totals: NodeTotals) -> tuple[Any, ...]:
    return tuple((r.milli_cpu, r.memory, list(r.scalars.items())) for r in (totals.total, totals.used))


def test_totals_of_fractional_requests_are_added_up_afresh() -> None:
    """Moving a total by a node's difference is exact for whole numbers only: with 0.1 millicores on
    each of three nodes, 0.1 + 0.1 + 0.1 - 0.1 + 1.1 is not the 1.1 + 0.1 + 0.1 a fresh sum gives."""
    snapshot = cluster(
        *(node(name=f"n{i}", cpu="4") for i in range(3)),
        *(pod(name=f"p{i}", cpu="100u", memory="", node_name=f"n{i}") for i in range(3)),
    )
    nodes = list(snapshot.nodes.values())
    totals = NodeTotals(nodes, None, None)
    more = next(t for j in cluster(pod(name="q", cpu="1m", memory="")).jobs.values() for t in j.tasks.values())
    nodes[0].add_task(more)
    carried, fresh = NodeTotals(nodes, [0], totals), NodeTotals(nodes, None, None)
    assert _sums(carried) == _sums(fresh)
    assert fresh.used.milli_cpu == 1.1 + 0.1 + 0.1 != 0.1 + 0.1 + 0.1 - 0.1 + 1.1


def test_totals_are_added_up_afresh_when_a_node_stops_naming_a_scalar() -> None:
    """A node built again without its GPU pod names no GPU in what it uses: the fresh sum has no GPU
    figure at all, where a moved one would keep a zero."""
    gpu = pod(name="g", cpu="1", node_name="n0")
    gpu["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "1"
    spec = [node(name="n0", cpu="4", scalars={"nvidia.com/gpu": "2"}), node(name="n1", cpu="4")]
    before = list(cluster(*spec, gpu).nodes.values())
    totals = NodeTotals(before, None, None)
    after = [next(iter(cluster(spec[0]).nodes.values())), before[1]]
    carried, fresh = NodeTotals(after, [0], totals), NodeTotals(after, None, None)
    assert _sums(carried) == _sums(fresh)
    assert "nvidia.com/gpu" not in fresh.used.scalars
