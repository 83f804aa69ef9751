"""NodePicks: the windows of a run of alike tasks are picked at once and handed out only while the
session is as the run left it; a cycle over random clusters binds and pipelines exactly as one that
searches and scores task by task, and leaves the next search starting at the same node."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from py_volcano.framework import PluginMemory, parse_conf, run_cycle
from py_volcano.framework.node_picks import LIMIT, MASK_LIMIT, SEEN_LIMIT, NodePicks
from py_volcano.framework.node_search import NodesToFind
from py_volcano.registry import default_registry
from tests.builders import cluster, node, node_arrays, pod, pod_group, priority_class, queue

REGISTRY = default_registry()
CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""



def _searched(feasible: np.ndarray[Any, Any], idle: np.ndarray[Any, Any], scores: np.ndarray[Any, Any],
              start: int, wanted: int) -> tuple[int, bool, int]:
    """One task's search and choice as `Session.candidate_nodes` and `best_node` make them."""
    found, after = NodesToFind(minimum=wanted, percentage=100 * wanted // len(feasible)).search(feasible, start)
    fits = found[idle[found]]
    candidates = fits if len(fits) else found
    return int(candidates[int(np.argmax(scores[candidates]))]), bool(len(fits)), after


def test_each_pick_is_the_best_of_its_window_with_idle_room_first() -> None:
    feasible = np.array([True, True, False, True, True, True, True, False, True, True])
    idle = np.array([True, False, False, True, False, False, True, False, True, False])
    scores = np.array([1.0, 9.0, 0.0, 2.0, 5.0, 5.0, 0.5, 0.0, 3.0, 3.0])
    picks, arrays = NodePicks(), node_arrays(10)
    picks.plan("k", feasible, idle, scores, 1, 2, arrays.version)
    # Windows from row 1: [1, 3], [4, 5], [6, 8], then [9, 0] round the end of the list; the next would
    # leave no more than two feasible nodes.
    expected = [(3, True, 4), (4, False, 6), (8, True, 9), (0, True, 1)]
    start, taken = 1, []
    while (picked := picks.take("k", start, arrays)) is not None:
        taken.append(picked)
        start = picked[2]
    assert taken == expected
    start, searched = 1, []
    for _ in range(4):
        row, room, start = _searched(feasible, idle, scores, start, 2)
        searched.append((row, room, start))
    assert searched == expected


def test_a_window_round_the_end_of_the_list_breaks_ties_in_row_order() -> None:
    everywhere = np.ones(6, dtype=bool)
    scores = np.array([4.0, 0.0, 0.0, 0.0, 0.0, 4.0])
    picks, arrays = NodePicks(), node_arrays(6)
    picks.plan("k", everywhere, everywhere, scores, 4, 3, arrays.version)
    assert picks.take("k", 4, arrays) == (0, True, 1)  # window [4, 5, 0]: rows 0 and 5 tie, 0 first
    assert _searched(everywhere, everywhere, scores, 4, 3) == (0, True, 1)


def test_windows_come_round_again_until_one_holds_an_earlier_pick() -> None:
    everywhere = np.ones(6, dtype=bool)
    scores = np.array([0.0, 1.0, 0.0, 5.0, 2.0, 0.0])
    picks, arrays = NodePicks(), node_arrays(6)
    picks.plan("k", everywhere, everywhere, scores, 0, 4, arrays.version)
    # [0, 1, 2, 3] picks 3; [4, 5, 0, 1] does not hold it: its pick is as after the first.
    assert picks.take("k", 0, arrays) == (3, True, 4)
    assert picks.take("k", 4, arrays) == (4, True, 2)
    full = everywhere.copy()
    full[3] = False  # the first pick left node 3 without room: the second search is the same
    assert _searched(full, full, scores, 4, 4) == (4, True, 2)
    picks.plan("k", everywhere, everywhere, np.array([9.0, 1.0, 0.0, 5.0, 2.0, 0.0]), 0, 4, arrays.version)
    assert picks.take("k", 0, arrays) == (0, True, 4)
    assert picks.take("k", 4, arrays) is None  # [4, 5, 0, 1] holds the first pick: searched alone


def test_a_pick_is_refused_once_the_session_moved_on() -> None:
    arrays, everywhere = node_arrays(8), np.ones(8, dtype=bool)
    scores = np.arange(8, dtype=np.float64)
    picks = NodePicks()
    picks.plan("k", everywhere, everywhere, scores, 0, 2, arrays.version)
    assert picks.take("other", 0, arrays) is None  # another key
    assert picks.take("k", 3, arrays) is None  # another search start
    assert picks.take("k", 0, arrays) == (1, True, 2)
    arrays.write(arrays.nodes[1])  # the node picked: the run holds
    assert picks.take("k", 2, arrays) == (3, True, 4)
    arrays.write(arrays.nodes[6])  # another node: the run is over
    assert picks.take("k", 4, arrays) is None


def test_no_run_when_the_search_takes_every_feasible_node() -> None:
    picks, arrays = NodePicks(), node_arrays(6)
    few = np.array([True, False, False, True, False, False])
    picks.plan("few", few, few, np.zeros(6), 0, 2, arrays.version)
    assert picks.take("few", 0, arrays) is None
    assert not picks.worth_planning("few")  # searches alone from now on
    assert picks.worth_planning("other") is False  # seen for the first time
    assert picks.worth_planning("other") is True


def test_the_keys_remembered_are_forgotten_past_a_limit() -> None:
    picks, arrays = NodePicks(), node_arrays(4)
    for key in range(SEEN_LIMIT):
        assert not picks.worth_planning(key)
    assert not picks.worth_planning(SEEN_LIMIT)  # the seen keys start again with this one
    assert not picks.worth_planning(0)  # seen for the first time again
    assert picks.worth_planning(SEEN_LIMIT)
    few = np.array([True, False, False, False])
    for key in range(SEEN_LIMIT + 1):
        picks.plan(("alone", key), few, few, np.zeros(4), 0, 2, arrays.version)
    picks.worth_planning(("alone", 0))
    assert picks.worth_planning(("alone", 0))  # forgotten when the set was full: planned again
    assert not picks.worth_planning(("alone", SEEN_LIMIT))


def test_a_mask_is_computed_once_a_key_and_read_only_and_the_masks_are_dropped_past_a_limit() -> None:
    picks, computed = NodePicks(), []

    def compute(key: int) -> np.ndarray[Any, Any]:
        computed.append(key)
        return np.array([True, key % 2 == 0])

    first = picks.mask(0, lambda: compute(0))
    assert picks.mask(0, lambda: compute(0)) is first and computed == [0]
    with pytest.raises(ValueError, match="read-only"):
        first[0] = False
    for key in range(1, MASK_LIMIT + 1):
        picks.mask(key, lambda key=key: compute(key))  # type: ignore[misc]
    assert len(computed) == MASK_LIMIT + 1
    picks.mask(1, lambda: compute(1))  # dropped with the others when the dict was full
    assert computed[-1] == 1 and len(computed) == MASK_LIMIT + 2


def test_at_most_limit_windows_at_once() -> None:
    picks, arrays = NodePicks(), node_arrays(4 * LIMIT)
    everywhere = np.ones(4 * LIMIT, dtype=bool)
    picks.plan("k", everywhere, everywhere, np.zeros(4 * LIMIT), 0, 2, arrays.version)
    start, taken = 0, 0
    while (picked := picks.take("k", start, arrays)) is not None:
        start, taken = picked[2], taken + 1
    assert taken == LIMIT


@st.composite
def clusters(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Nodes (zones, a NoSchedule taint, GPUs), pods running and releasing on them, two queues, and
    pending gangs of alike pods, some with a node selector, a toleration, a host port or anti-affinity."""
    count = draw(st.integers(6, 30))
    objects: list[dict[str, Any]] = [
        priority_class(name="low", value=10),
        priority_class(name="high", value=1000),
        queue(name="q0", weight=1),
        queue(name="q1", weight=2),
    ]
    for i in range(count):
        tainted = draw(st.integers(0, 4)) == 0
        objects.append(node(
            name=f"n{i:02d}",
            cpu=draw(st.sampled_from(("2", "4", "8"))),
            memory=draw(st.sampled_from(("4Gi", "8Gi", "16Gi"))),
            labels={"zone": draw(st.sampled_from("ababc"))},  # zone c: a few nodes, searched whole
            taints=[{"key": "gpu", "value": "1", "effect": "NoSchedule"}] if tainted else [],
            scalars={"nvidia.com/gpu": "4"} if tainted else None,
        ))
    for i in range(draw(st.integers(0, count))):
        running = pod(name=f"run-{i}", cpu=draw(st.sampled_from(("1", "2", "3"))),
                      node_name=f"n{draw(st.integers(0, count - 1)):02d}", queue="q0")
        if draw(st.booleans()):
            running["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"  # releasing
        objects.append(running)
    for j in range(draw(st.integers(1, 8))):
        size = draw(st.integers(1, 12))
        level = draw(st.sampled_from(("low", "high")))
        spec: dict[str, Any] = {"priorityClassName": level, "priority": 10 if level == "low" else 1000}
        kind = draw(st.integers(0, 7))
        if kind == 0:
            spec["nodeSelector"] = {"zone": draw(st.sampled_from("abc"))}
        elif kind == 1:
            spec["tolerations"] = [{"key": "gpu", "operator": "Exists"}]
        elif kind == 2:
            spec["containers"] = [{"name": "main", "image": "pause", "ports": [{"containerPort": 80, "hostPort": 8080}],
                                   "resources": {"requests": {"cpu": "500m"}}}]
        elif kind == 3:
            spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": f"job-{j}"}}, "topologyKey": "kubernetes.io/hostname"}]}}
        name = f"job-{j}"
        objects.append(pod_group(name=name, queue=draw(st.sampled_from(("q0", "q1"))),
                                 min_member=draw(st.integers(1, size)), phase="Inqueue"))
        cpu, memory = draw(st.sampled_from(("500m", "1", "1", "2"))), draw(st.sampled_from(("1Gi", "1Gi", "3Gi")))
        for t in range(size):
            objects.append(pod(name=f"{name}-{t:02d}", group=name, cpu=cpu, memory=memory,
                               labels={"app": name}, spec=dict(spec)))
    return objects


Decisions = tuple[list[tuple[str, str]], list[tuple[str, str]], int]


def _decisions(objects: list[dict[str, Any]], flags: NodesToFind, start: int) -> Decisions:
    """The cycle's binds and pipelines, and where the next search starts."""
    memory = PluginMemory(datetime.now(UTC))
    memory.next_node = start
    result = run_cycle(cluster(*objects), parse_conf(CONF, REGISTRY), REGISTRY, memory=memory, nodes_to_find=flags)
    return (
        [(task.key, name) for task, name in result.binds],
        sorted(result.pipelined.items()),
        memory.next_node,
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.integers(1, 4), st.integers(0, 40))
def test_picks_decide_as_searching_task_by_task(objects: list[dict[str, Any]], wanted: int, start: int) -> None:
    flags = NodesToFind(minimum=wanted, minimum_percentage=1, percentage=1)
    picked = _decisions(objects, flags, start)
    with mock.patch.object(NodePicks, "worth_planning", lambda self, key: False):
        assert _decisions(objects, flags, start) == picked


def test_a_gang_takes_its_picks_from_runs() -> None:
    nodes = [node(name=f"n{i:03d}", cpu="8") for i in range(300)]
    gang = [pod(name=f"g-{t:02d}", group="g", cpu="1") for t in range(40)]
    objects = [*nodes, pod_group(name="g", min_member=40, phase="Inqueue"), *gang]
    planned = []
    plan = NodePicks.plan

    def recording(self: NodePicks, key: Any, *args: Any) -> None:
        planned.append(key)
        plan(self, key, *args)

    with mock.patch.object(NodePicks, "plan", recording):
        decided = _decisions(objects, NodesToFind(), 0)
    assert len(decided[0]) == 40
    assert len(planned) == 20  # the first task searches alone, the 39 others take windows of 144 nodes, two a run
    with mock.patch.object(NodePicks, "worth_planning", lambda self, key: False):
        assert _decisions(objects, NodesToFind(), 0) == decided


@pytest.mark.parametrize(
    "between",
    [
        pytest.param({"cpu": "2"}, id="another-request-moves-the-start"),
        pytest.param({"spec": {"nodeSelector": {"zone": "c"}}}, id="few-nodes-written-ahead"),
    ],
)
def test_a_run_is_not_taken_up_after_a_task_of_another_shape(between: dict[str, Any]) -> None:
    """job-b's pod, of another shape, searches alone between job-a's and job-c's alike pods: it moves the
    search's start, or (its zone's nodes are two, searched whole) writes a node of the run's later
    windows. job-c plans anew and places as task by task."""
    nodes = [node(name=f"n{i:02d}", cpu="8", labels={"zone": "c" if i in (13, 16) else "a"}) for i in range(30)]
    objects: list[dict[str, Any]] = list(nodes)
    for name, size, extra in (("job-a", 2, {}), ("job-b", 1, between), ("job-c", 4, {})):
        objects.append(pod_group(name=name, min_member=size, phase="Inqueue"))
        objects.extend(pod(name=f"{name}-{t}", group=name, **{"cpu": "1", **extra}) for t in range(size))
    flags = NodesToFind(minimum=3, minimum_percentage=1, percentage=1)
    picked = _decisions(objects, flags, 0)
    with mock.patch.object(NodePicks, "worth_planning", lambda self, key: False):
        assert _decisions(objects, flags, 0) == picked
