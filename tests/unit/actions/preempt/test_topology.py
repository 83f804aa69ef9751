"""Topology-aware preemption (docs/semantics.md): candidate count, candidate choice, dry run and reprieve."""

from __future__ import annotations

import pytest

from py_volcano.actions.preempt import topology
from py_volcano.actions.preempt.action import _in_queue, _other_job
from py_volcano.actions.preempt.disruption import DisruptionBudgets
from py_volcano.actions.preempt.preemptees import PreempteeIndex, Scope
from py_volcano.api import QueueID, Resource, TaskID, TaskInfo
from py_volcano.framework import CycleState
from tests.builders import node, pod, priority_class
from tests.unit.actions.sessions import pdb, session, task


@pytest.mark.parametrize(
    ("nodes", "percentage", "minimum", "maximum", "wanted"),
    [
        pytest.param(1000, 10, 1, 100, 100, id="ten-percent"),
        pytest.param(5000, 10, 1, 100, 100, id="capped-by-maximum"),
        pytest.param(5, 10, 1, 100, 1, id="raised-to-minimum"),
        pytest.param(3, 10, 5, 100, 3, id="never-more-than-nodes"),
        pytest.param(50, 50, 1, 100, 25, id="half"),
        pytest.param(100, 10, 20, 15, 15, id="maximum-applies-after-minimum"),
    ],
)
def test_calculate_num_candidates(
    nodes: int, percentage: int, minimum: int, maximum: int, wanted: int
) -> None:
    """n = nodes x percentage / 100, raised to the minimum, lowered to the maximum, at most the nodes."""
    got = topology.calculate_num_candidates(nodes, percentage=percentage, minimum=minimum, maximum=maximum)
    assert got == wanted


def _victim(name: str, priority: int, creation: float = 0.0) -> TaskInfo:
    return TaskInfo(
        uid=TaskID(name),
        name=name,
        namespace="default",
        resreq=Resource(1000),
        priority=priority,
        creation=creation,
    )


def _candidate(node_name: str, *victims: TaskInfo) -> topology.Candidate:
    return topology.Candidate(node_name, victims)


@pytest.mark.parametrize(
    ("candidates", "chosen"),
    [
        pytest.param(
            [_candidate("a", _victim("a1", 100), _victim("a2", 200)), _candidate("b", _victim("b1", 150))],
            "b",
            id="1-lowest-highest-priority",
        ),
        pytest.param(
            [
                _candidate("a", _victim("a1", 100), _victim("a2", 90)),
                _candidate("b", _victim("b1", 100), _victim("b2", 50)),
            ],
            "b",
            id="2-lowest-priority-sum",
        ),
        pytest.param(
            [_candidate("a", _victim("a1", 100), _victim("a2", -50)), _candidate("b", _victim("b1", 100))],
            "b",
            id="2-each-victim-adds-max-int32-plus-one-to-the-sum",
        ),
        pytest.param(
            [
                _candidate("a", _victim("a1", 100, creation=10.0), _victim("a2", 50, creation=99.0)),
                _candidate("b", _victim("b1", 100, creation=20.0), _victim("b2", 50, creation=1.0)),
            ],
            "b",
            id="4-latest-start-of-highest-priority-victims",
        ),
        pytest.param(
            [_candidate("a", _victim("a1", 100)), _candidate("b", _victim("b1", 100))], "a", id="5-first"
        ),
        pytest.param([_candidate("a", _victim("a1", 100))], "a", id="single"),
    ],
)
def test_select_candidate_order(candidates: list[topology.Candidate], chosen: str) -> None:
    """Candidate choice: each step decides only on a tie of the steps before it. Step 3 (fewest victims) never
    decides alone: the sum adds MaxInt32 + 1 per victim, so fewer victims already win at step 2."""
    best = topology.select_candidate(candidates, DisruptionBudgets())
    assert best is not None and best.node == chosen


def test_select_candidate_without_candidates_is_none() -> None:
    """Zero candidates: nothing to choose."""
    assert topology.select_candidate([], DisruptionBudgets()) is None


def test_select_candidate_prefers_fewer_pdb_breaking_victims_before_the_five_steps() -> None:
    """Beyond Volcano: a node whose victims keep every PDB wins over one with lower priorities."""
    ssn = session(
        "actions: allocate\ntiers:\n- plugins:\n  - name: priority\n",
        node(name="n"),
        pdb(name="web", match={"app": "web"}, allowed=0),
        pod(name="web-0", node_name="n", labels={"app": "web"}, priority=10),
        pod(name="batch-0", node_name="n", priority=500),
    )
    candidates = [_candidate("a", task(ssn, "web-0")), _candidate("b", task(ssn, "batch-0"))]
    best = topology.select_candidate(candidates, DisruptionBudgets.build(ssn))
    assert best is not None and best.node == "b"


PRIORITY_CONF = "actions: allocate\ntiers:\n- plugins:\n  - name: priority\n  - name: conformance\n"


def test_dry_run_reprieves_the_most_important_victims_first() -> None:
    """A (1 CPU, p1), B (1 CPU, p2), C (2 CPU, p3) fill 4 CPU; 3 CPU are wanted: all three come off, then
    C, B, A are tried back in that order: C is needed, B is spared, A is needed. The node is unchanged."""
    ssn = session(
        PRIORITY_CONF,
        priority_class(name="p1", value=1),
        priority_class(name="p2", value=2),
        priority_class(name="p3", value=3),
        node(name="n", cpu="4"),
        pod(name="a", cpu="1", node_name="n", spec={"priorityClassName": "p1"}),
        pod(name="b", cpu="1", node_name="n", spec={"priorityClassName": "p2"}),
        pod(name="c", cpu="2", node_name="n", spec={"priorityClassName": "p3"}),
        pod(name="wants-3", cpu="3", priority=1000),
    )
    preemptor = task(ssn, "wants-3")
    scope = Scope(
        PreempteeIndex(ssn, _in_queue(ssn, QueueID("default"))), _other_job(preemptor), DisruptionBudgets()
    )
    n = ssn.nodes["n"]
    chosen = topology.select_victims_on_node(
        ssn, CycleState(), preemptor, ssn.queues[QueueID("default")], n, scope
    )
    assert [v.name for v in chosen] == ["a", "c"]
    assert (n.idle.milli_cpu, n.used_pods, len(n.tasks)) == (0, 3, 3)


def test_dry_run_gives_no_victims_when_the_preemptor_cannot_fit() -> None:
    """Evicting every victim still leaves too little room: not a candidate."""
    ssn = session(
        PRIORITY_CONF,
        node(name="n", cpu="2"),
        pod(name="a", cpu="1", node_name="n", priority=1),
        pod(name="wants-3", cpu="3", priority=1000),
    )
    preemptor = task(ssn, "wants-3")
    scope = Scope(
        PreempteeIndex(ssn, _in_queue(ssn, QueueID("default"))), _other_job(preemptor), DisruptionBudgets()
    )
    queue = ssn.queues[QueueID("default")]
    assert topology.select_victims_on_node(ssn, CycleState(), preemptor, queue, ssn.nodes["n"], scope) == []
