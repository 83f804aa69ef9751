"""PodDisruptionBudgets: the budget at cycle start, evictions planned this cycle, discard giving it back."""

from __future__ import annotations

from typing import Any

import pytest

from py_volcano.actions.preempt.disruption import DisruptionBudgets
from py_volcano.api import scaled
from py_volcano.errors import InvalidPodDisruptionBudget
from py_volcano.framework import Session, Statement
from tests.builders import node, pod
from tests.unit.actions.sessions import pdb, session, task

CONF = "actions: allocate\ntiers:\n- plugins:\n  - name: priority\n"


@pytest.mark.parametrize(
    ("value", "total", "expected"),
    [
        pytest.param(2, 10, 2, id="int"),
        pytest.param("3", 10, 3, id="int-string"),
        pytest.param("50%", 3, 2, id="percent-rounds-up"),
        pytest.param("10%", 5, 1, id="small-percent-rounds-up"),
        pytest.param("0%", 5, 0, id="zero-percent"),
    ],
)
def test_scaled(value: int | str, total: int, expected: int) -> None:
    """Int-or-percent resolved as Kubernetes does for PDBs (rounding up)."""
    assert scaled(value, total) == expected


def test_scaled_rejects_other_values() -> None:
    """ValueError names the value."""
    with pytest.raises(ValueError, match="'half'"):
        scaled("half", 4)


def _web(*extra: dict[str, Any], replicas: int = 3, pending: int = 0) -> Session:
    pods = [pod(name=f"web-{i}", node_name="n", labels={"app": "web"}) for i in range(replicas)]
    pods += [pod(name=f"web-p{i}", labels={"app": "web"}) for i in range(pending)]
    return session(CONF, node(name="n", cpu="8"), *extra, *pods, pod(name="other", node_name="n"))


def _evict(ssn: Session, stmt: Statement, name: str) -> None:
    victim = task(ssn, name)
    stmt.evict(ssn.nodes["n"].tasks[victim.uid].clone(), "preempt")


@pytest.mark.parametrize(
    ("budget", "pending", "allowed"),
    [
        pytest.param({"allowed": 1}, 0, 1, id="status"),
        pytest.param({"allowed": 0, "min_available": 1}, 0, 0, id="status-wins-over-spec"),
        pytest.param({"min_available": 2}, 0, 1, id="min-available"),
        pytest.param({"min_available": "100%"}, 0, 0, id="min-available-percent"),
        pytest.param({"max_unavailable": 1}, 0, 1, id="max-unavailable"),
        pytest.param({"max_unavailable": "50%"}, 1, 1, id="max-unavailable-counts-pending-pods-as-expected"),
        pytest.param({"min_available": 4}, 0, 0, id="never-negative"),
    ],
)
def test_disruptions_allowed(budget: dict[str, Any], pending: int, allowed: int) -> None:
    """Evicting `allowed` web pods keeps the budget; one more breaks it."""
    ssn = _web(pdb(name="web", match={"app": "web"}, **budget), pending=pending)
    budgets = DisruptionBudgets.build(ssn)
    stmt = Statement(ssn)
    for i in range(allowed):
        assert not budgets.breaks(task(ssn, f"web-{i}"))
        _evict(ssn, stmt, f"web-{i}")
    assert budgets.breaks(task(ssn, "web-2"))
    assert not budgets.breaks(task(ssn, "other"))


def test_discard_gives_the_budget_back() -> None:
    """Evictions count through live statuses, so a discarded statement frees its disruptions."""
    ssn = _web(pdb(name="web", match={"app": "web"}, allowed=1))
    budgets = DisruptionBudgets.build(ssn)
    stmt = Statement(ssn)
    _evict(ssn, stmt, "web-0")
    assert budgets.breaks(task(ssn, "web-1"))
    stmt.discard()
    assert not budgets.breaks(task(ssn, "web-1"))


def test_evictions_committed_earlier_in_the_cycle_count() -> None:
    """A budget read after another action committed an eviction still counts that eviction."""
    ssn = _web(pdb(name="web", match={"app": "web"}, min_available=2))
    stmt = Statement(ssn)
    _evict(ssn, stmt, "web-0")
    stmt.commit()
    budgets = DisruptionBudgets.build(ssn)
    assert budgets.breaks(task(ssn, "web-1"))


def test_pods_terminating_before_the_cycle_are_not_this_cycle_disruptions() -> None:
    """A pod already Releasing at cycle start is neither healthy nor a disruption of this cycle."""
    terminating = pod(name="web-9", node_name="n", labels={"app": "web"})
    terminating["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    ssn = _web(pdb(name="web", match={"app": "web"}, min_available=2), terminating)
    budgets = DisruptionBudgets.build(ssn)
    assert not budgets.breaks(task(ssn, "web-0"))
    stmt = Statement(ssn)
    _evict(ssn, stmt, "web-0")
    assert budgets.breaks(task(ssn, "web-1"))


def test_planned_victims_count_against_the_budget() -> None:
    """Dry runs pass the victims they plan to remove."""
    ssn = _web(pdb(name="web", match={"app": "web"}, allowed=1))
    budgets = DisruptionBudgets.build(ssn)
    assert not budgets.breaks(task(ssn, "web-1"))
    assert budgets.breaks(task(ssn, "web-1"), [task(ssn, "web-0")])
    assert not budgets.breaks(task(ssn, "web-1"), [task(ssn, "other")])


def test_a_budget_covers_only_pods_of_its_namespace() -> None:
    """A PDB selects pods in its own namespace only."""
    ssn = session(
        CONF,
        node(name="n"),
        pdb(name="web", match={"app": "web"}, allowed=0),
        pod(name="web-0", namespace="elsewhere", node_name="n", labels={"app": "web"}),
    )
    assert not DisruptionBudgets.build(ssn).breaks(task(ssn, "web-0", "elsewhere"))


def test_an_unreadable_budget_is_refused_where_it_is_parsed() -> None:
    """A bad minAvailable makes the PDB unusable when it is parsed, naming the field (the store skips it
    with a warning): no cycle ever reads it."""
    refused = r"field spec\.minAvailable: expected an integer or a percentage"
    with pytest.raises(InvalidPodDisruptionBudget, match=refused):
        _web(pdb(name="web", match={"app": "web"}, min_available="most"))
