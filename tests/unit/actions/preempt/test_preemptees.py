"""PreempteeIndex: candidates per node, the vector screen over what they could free, and `touch`."""

from __future__ import annotations

from py_volcano.actions.preempt.action import _in_queue
from py_volcano.actions.preempt.preemptees import PreempteeIndex
from py_volcano.api import QueueID
from py_volcano.framework import Session, Statement
from tests.builders import node, pod, queue
from tests.unit.actions.sessions import session, task

CONF = "actions: allocate\ntiers:\n- plugins:\n  - name: priority\n"


def _session() -> Session:
    return session(
        CONF,
        queue(name="other"),
        node(name="small", cpu="2"),
        node(name="big", cpu="4"),
        node(name="foreign", cpu="4"),
        pod(name="s-0", node_name="small"),
        pod(name="b-0", node_name="big", cpu="2"),
        pod(name="b-1", node_name="big", cpu="2"),
        pod(name="f-0", node_name="foreign", cpu="4", queue="other"),
        pod(name="wants-2", cpu="2"),
        pod(name="wants-3", cpu="3"),
    )


def test_screen_keeps_nodes_where_evicting_every_candidate_makes_room() -> None:
    """small frees 1 + 1 idle, big frees 4; foreign's pod is in another queue, so it frees nothing."""
    ssn = _session()
    index = PreempteeIndex(ssn, _in_queue(ssn, QueueID("default")))
    assert [t.name for t in index.candidates(ssn.nodes["big"])] == ["b-0", "b-1"]
    assert index.candidates(ssn.nodes["foreign"]) == []
    assert index.screen(task(ssn, "wants-2")).tolist() == [True, True, False]
    assert index.screen(task(ssn, "wants-3")).tolist() == [False, True, False]


def test_touched_nodes_are_read_again() -> None:
    """After an eviction on big, its candidates and what they free follow; discard restores both."""
    ssn = _session()
    index = PreempteeIndex(ssn, _in_queue(ssn, QueueID("default")))
    stmt = Statement(ssn)
    stmt.evict(ssn.nodes["big"].tasks[task(ssn, "b-0").uid].clone(), "preempt")
    stmt.pipeline(task(ssn, "wants-2"), "big")
    index.touch("big")
    assert [t.name for t in index.candidates(ssn.nodes["big"])] == ["b-1"]
    assert index.screen(task(ssn, "wants-3")).tolist() == [False, False, False]
    index.touch_statement(stmt)
    stmt.discard()
    assert sorted(t.name for t in index.candidates(ssn.nodes["big"])) == ["b-0", "b-1"]
    assert index.screen(task(ssn, "wants-3")).tolist() == [False, True, False]
