"""Queue orderings (docs/semantics.md, "Capacity queue order", "Victim queue order by common ancestor"): share,
best-effort last, common ancestor, victim queues."""

from __future__ import annotations

from typing import Any

import pytest

from py_volcano.api import QueueID, QueueInfo
from py_volcano.plugins.capacity.attrs import QueueAttr
from py_volcano.plugins.capacity.order import compare_share_with_deserved, queue_level
from tests.builders import node, pod, pod_group, queue
from tests.unit.plugins.capacity.example_tree import example_tree
from tests.unit.plugins.capacity.sessions import attr_of, open_capacity, open_hierarchy, plugin_of, res


def attr(share: float, *, deserved: bool) -> QueueAttr:
    result = QueueAttr(QueueID("q"), deserved=res(2) if deserved else None)
    result.share = share
    return result


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        pytest.param(attr(0.5, deserved=True), attr(1.0, deserved=False), -1, id="0.5 before best-effort"),
        pytest.param(attr(1.0, deserved=True), attr(1.0, deserved=False), -1, id="tie at 1: deserved wins"),
        pytest.param(attr(1.0, deserved=False), attr(1.0, deserved=True), 1, id="tie: best-effort loses"),
        pytest.param(attr(1.5, deserved=True), attr(1.0, deserved=False), 1, id="over 1: after best-effort"),
        pytest.param(attr(1.0, deserved=False), attr(1.0, deserved=False), 0, id="two best-effort tie"),
        pytest.param(attr(0.2, deserved=True), attr(0.2, deserved=True), 0, id="equal shares tie"),
    ],
)
def test_compare_share_with_deserved(left: QueueAttr, right: QueueAttr, expected: int) -> None:
    """Lower share first; best-effort queues (share 1) lose ties."""
    assert compare_share_with_deserved(left, right) == expected


def test_flat_order_puts_best_effort_queue_last_and_priority_first() -> None:
    """besteffort (created first, no deserved) goes after team (share 0.5); a priority-1 queue goes first."""
    ssn = open_capacity(
        node(name="n1"),
        queue(name="besteffort"),
        queue(name="team", deserved={"cpu": "2", "memory": "4Gi"}),
        queue(name="vip", priority=1, deserved={"cpu": "1"}),
        pod_group(name="run", queue="team", phase="Running"),
        pod(name="run-0", group="run", node_name="n1", cpu="1", memory="2Gi"),
        pod_group(name="vip-run", queue="vip", phase="Running"),
        pod(name="vip-run-0", group="vip-run", node_name="n1", cpu="2"),
    )
    order, queues = plugin_of(ssn).queue_order, ssn.queues
    best_effort, team, vip = (queues[QueueID(name)] for name in ("besteffort", "team", "vip"))
    assert attr_of(ssn, "team").share == 0.5
    assert order(team, best_effort) == -1
    assert order(best_effort, team) == 1
    assert order(vip, team) == -1
    assert ssn.queue_order_fn(team, best_effort)


def tree_in_use() -> list[dict[str, Any]]:
    """training 40, inference 15 (team-a 55/60); batch 25, interactive 5 (team-b 30/40)."""
    pods = []
    for name, cpu in (("training", 40), ("inference", 15), ("batch", 25), ("interactive", 5)):
        pods += [
            pod_group(name=f"{name}-run", queue=name, phase="Running"),
            pod(name=f"{name}-run-0", group=f"{name}-run", node_name="n1", cpu=str(cpu)),
        ]
    return [*example_tree(), *pods]


def by_name(ssn: Any, name: str) -> QueueInfo:
    found: QueueInfo = ssn.queues[QueueID(name)]
    return found


def test_example_tree_batch_goes_before_training() -> None:
    """Common ancestor root: compare team-a (0.917) with team-b (0.75), so batch comes first."""
    ssn = open_hierarchy(*tree_in_use())
    assert attr_of(ssn, "team-a").share == pytest.approx(55 / 60)
    assert attr_of(ssn, "team-b").share == pytest.approx(0.75)
    assert attr_of(ssn, "training").share == 1.0
    order = plugin_of(ssn).queue_order
    assert order(by_name(ssn, "training"), by_name(ssn, "batch")) == 1
    assert order(by_name(ssn, "batch"), by_name(ssn, "training")) == -1


def test_hierarchical_order_siblings_compare_themselves_and_leaves_precede_inner_queues() -> None:
    """Under team-a inference (0.75) before training (1.0); leaves before team-a; team-b before team-a."""
    ssn = open_hierarchy(*tree_in_use())
    order = plugin_of(ssn).queue_order
    assert order(by_name(ssn, "inference"), by_name(ssn, "training")) == -1
    assert order(by_name(ssn, "training"), by_name(ssn, "team-a")) == -1
    assert order(by_name(ssn, "team-a"), by_name(ssn, "interactive")) == 1
    assert order(by_name(ssn, "team-b"), by_name(ssn, "team-a")) == -1


def test_hierarchical_order_flips_where_flat_order_would_not() -> None:
    """Leaf shares say training (0.5) before batch (0.93); their parents say team-b (0.75) before team-a."""
    pods = []
    for name, cpu in (("training", 20), ("inference", 30), ("batch", 28), ("interactive", 2)):
        pods += [
            pod_group(name=f"{name}-run", queue=name, phase="Running"),
            pod(name=f"{name}-run-0", group=f"{name}-run", node_name="n1", cpu=str(cpu)),
        ]
    hierarchical = open_hierarchy(*example_tree(), *pods)
    flat = open_capacity(*example_tree(), *pods)
    training, batch = by_name(hierarchical, "training"), by_name(hierarchical, "batch")
    assert plugin_of(hierarchical).queue_order(training, batch) == 1
    assert plugin_of(flat).queue_order(by_name(flat, "training"), by_name(flat, "batch")) == -1


def test_queue_level_and_victim_queue_order_take_siblings_first() -> None:
    """For a preemptor in training, inference (level 1) gives victims before batch (level 0)."""
    ssn = open_hierarchy(*tree_in_use())
    training, inference, batch = (attr_of(ssn, name) for name in ("training", "inference", "batch"))
    assert (queue_level(training, inference), queue_level(training, batch)) == (1, 0)
    victim_order = plugin_of(ssn).victim_queue_order
    preemptor = by_name(ssn, "training")
    assert victim_order(by_name(ssn, "inference"), by_name(ssn, "batch"), preemptor) == -1
    assert victim_order(by_name(ssn, "batch"), by_name(ssn, "inference"), preemptor) == 1
    assert victim_order(by_name(ssn, "batch"), by_name(ssn, "interactive"), preemptor) == 0
    assert ssn.victim_queue_order_fn(by_name(ssn, "inference"), by_name(ssn, "batch"), preemptor)
