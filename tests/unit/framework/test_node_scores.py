"""NodeScores: scores kept per task shape are rescored only where nodes were written, are asked for only
when every batch score gives a key, and change no decision: a cycle (allocate, preempt, backfill) over
random clusters binds, evicts and pipelines exactly as one that scores every task over its candidates."""

from __future__ import annotations

from typing import Any
from unittest import mock

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from py_volcano.api import TaskInfo
from py_volcano.framework import open_session, parse_conf, run_cycle
from py_volcano.framework.node_scores import LIMIT, SEEN_LIMIT, NodeScores
from py_volcano.framework.session import Session
from py_volcano.registry import default_registry
from tests.builders import cluster, node, node_arrays, pod, pod_group, priority_class, queue

REGISTRY = default_registry()
CONF = """
actions: "enqueue, allocate, preempt, backfill"
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


class Recorder:
    """A score over rows that records the rows it was asked for: row r scores r + offset."""

    def __init__(self, offset: float = 0.0) -> None:
        self.asked: list[list[int]] = []
        self.offset = offset

    def __call__(self, rows: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        self.asked.append(rows.tolist())
        return rows.astype(np.float64) + self.offset



def test_a_shape_is_kept_from_its_second_task_and_rescored_where_written() -> None:
    rows = node_arrays(8)
    scores, score = NodeScores(rows), Recorder()
    candidates = np.array([1, 3], dtype=np.intp)
    assert scores.at("a", candidates, score).tolist() == [1.0, 3.0]
    assert score.asked == [[1, 3]]
    assert scores.at("a", candidates, score).tolist() == [1.0, 3.0]
    assert score.asked[-1] == list(range(8))
    scores.at("a", candidates, score)
    assert len(score.asked) == 2  # nothing written: nothing scored
    rows.write(rows.nodes[5])
    rows.write(rows.nodes[5])
    score.offset = 10.0
    assert scores.at("a", np.array([3, 5], dtype=np.intp), score).tolist() == [3.0, 15.0]
    assert score.asked[-1] == [5]


def test_many_writes_score_every_row_again() -> None:
    rows = node_arrays(4)
    scores, score = NodeScores(rows), Recorder()
    every = np.arange(4, dtype=np.intp)
    scores.at("a", every, score)
    scores.at("a", every, score)
    for _ in range(600):
        rows.write(rows.nodes[0])
    scores.at("a", every, score)
    assert score.asked[-1] == [0, 1, 2, 3]


def test_at_most_limit_shapes_are_kept() -> None:
    rows = node_arrays(2)
    scores, score = NodeScores(rows), Recorder()
    every = np.arange(2, dtype=np.intp)
    for key in range(LIMIT + 1):
        scores.at(key, every, score)
        scores.at(key, every, score)
    asked = len(score.asked)
    scores.at(LIMIT, every, score)
    assert len(score.asked) == asked  # the last shape is kept
    scores.at(0, every, score)
    assert len(score.asked) == asked + 1  # the first was dropped with the others when the limit was reached


def test_shapes_seen_once_are_forgotten_past_a_limit() -> None:
    rows = node_arrays(2)
    scores, score = NodeScores(rows), Recorder()
    one = np.array([1], dtype=np.intp)
    for key in range(SEEN_LIMIT):
        scores.at(key, one, score)
    assert all(asked == [1] for asked in score.asked)
    scores.at(SEEN_LIMIT, one, score)  # the seen set starts again with this one
    scores.at(0, one, score)
    assert score.asked[-1] == [1]  # shape 0 counts as first seen again: scored over its candidates
    scores.at(SEEN_LIMIT, one, score)
    assert score.asked[-1] == [0, 1]  # the shape seen after the reset is kept from its second task


def _session(*objects: dict[str, Any]) -> Session:
    return open_session(cluster(*objects), parse_conf(CONF, REGISTRY), REGISTRY)


def _task(ssn: Session, name: str) -> TaskInfo:
    return next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == name)


def test_a_key_only_when_every_score_reads_the_node_alone() -> None:
    preferring = pod(name="prefers", spec={"affinity": {"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 5, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}}
        ]}}})
    ssn = _session(node(name="n0", labels={"zone": "a"}), node(name="n1"), pod(name="plain"), preferring)
    assert ssn.score_key(_task(ssn, "plain")) is not None
    assert ssn.score_key(_task(ssn, "prefers")) is None
    ssn.add_batch_node_order_fn("extra", lambda task, rows: np.zeros(len(rows)))  # in no tier: not asked
    assert ssn.score_key(_task(ssn, "plain")) is not None


def test_a_per_node_score_turns_keys_off() -> None:
    ssn = _session(node(name="n0"), pod(name="plain"))
    ssn.add_node_order_fn("nodeorder", lambda task, node: 1.0)
    assert ssn.score_key(_task(ssn, "plain")) is None


def test_a_batch_score_without_a_key_turns_keys_off() -> None:
    ssn = _session(node(name="n0"), pod(name="plain"))
    ssn.add_batch_node_order_fn("binpack", lambda task, rows: np.zeros(len(rows)))
    assert ssn.score_key(_task(ssn, "plain")) is None


CPUS = ("500m", "1", "2", "3")
TAINT = {"key": "spot", "value": "1", "effect": "PreferNoSchedule"}


@st.composite
def clusters(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Nodes (GPUs, PreferNoSchedule taints, zones), low-priority pods on them, two queues, and pending
    gangs of alike pods at two priorities, some preferring a zone or tolerating the taint."""
    count = draw(st.integers(2, 7))
    objects: list[dict[str, Any]] = [
        priority_class(name="low", value=10),
        priority_class(name="high", value=1000),
        queue(name="q0", weight=1),
        queue(name="q1", weight=2),
    ]
    for i in range(count):
        objects.append(
            node(
                name=f"n{i}",
                cpu=draw(st.sampled_from(("4", "8"))),
                memory=draw(st.sampled_from(("8Gi", "16Gi"))),
                labels={"zone": draw(st.sampled_from("ab"))},
                taints=[TAINT] if draw(st.booleans()) else [],
                scalars={"nvidia.com/gpu": "4"} if draw(st.integers(0, 3)) == 0 else None,
            )
        )
    for i in range(draw(st.integers(0, 2 * count))):
        objects.append(
            pod(name=f"run-{i}", cpu=draw(st.sampled_from(CPUS)), node_name=f"n{draw(st.integers(0, count - 1))}",
                queue="q0", spec={"priorityClassName": "low", "priority": 10})
        )
    for j in range(draw(st.integers(1, 6))):
        size = draw(st.integers(1, 5))
        level = draw(st.sampled_from(("low", "high")))
        spec: dict[str, Any] = {"priorityClassName": level, "priority": 10 if level == "low" else 1000}
        if draw(st.booleans()):
            spec["tolerations"] = [{"key": "spot", "operator": "Exists"}]
        if draw(st.integers(0, 3)) == 0:
            spec["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 10, "preference": {"matchExpressions": [
                    {"key": "zone", "operator": "In", "values": [draw(st.sampled_from("ab"))]}]}}]}}
        name, where = f"job-{j}", draw(st.sampled_from(("q0", "q1")))
        objects.append(pod_group(name=name, queue=where, min_member=draw(st.integers(1, size))))
        cpu, memory = draw(st.sampled_from(CPUS)), draw(st.sampled_from(("512Mi", "1Gi", "3Gi")))
        for t in range(size):
            objects.append(pod(name=f"{name}-{t}", group=name, cpu=cpu, memory=memory, spec=dict(spec)))
    return objects


def _decisions(objects: list[dict[str, Any]]) -> tuple[object, ...]:
    result = run_cycle(cluster(*objects), parse_conf(CONF, REGISTRY), REGISTRY)
    return (
        [(task.key, name) for task, name in result.binds],
        [(task.key, name) for task, name in result.evictions],
        dict(result.pipelined),
    )


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_kept_scores_decide_as_scoring_every_task(objects: list[dict[str, Any]]) -> None:
    kept = _decisions(objects)
    with mock.patch.object(Session, "score_key", lambda self, task: None):
        assert _decisions(objects) == kept
