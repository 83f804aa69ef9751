"""pdb: victims within their PodDisruptionBudgets, charged in candidate order (Volcano's pdb plugin)."""

from __future__ import annotations

from typing import Any

import pytest

from py_volcano.api import TaskInfo, Vote
from py_volcano.framework import Session, Statement
from py_volcano.plugins.pdb import PdbPlugin
from tests.builders import node, pod
from tests.unit.actions.sessions import pdb, task
from tests.unit.plugins.sessions import open_at

CONF = 'actions: "preempt"\ntiers:\n- plugins:\n  - name: pdb\n'


def _web(*budgets: dict[str, Any], replicas: int = 3) -> Session:
    pods = [pod(name=f"web-{i}", node_name="n", labels={"app": "web"}) for i in range(replicas)]
    return open_at(CONF, node(name="n", cpu="8"), *budgets, *pods, pod(name="plain", node_name="n"), pod(name="p"))


def _plugin(ssn: Session) -> PdbPlugin:
    plugin = ssn.plugins["pdb"]
    assert isinstance(plugin, PdbPlugin)
    return plugin


def _names(tasks: list[TaskInfo]) -> list[str]:
    return [t.name for t in tasks]


def _candidates(ssn: Session) -> list[TaskInfo]:
    return [task(ssn, name) for name in ("web-0", "web-1", "web-2", "plain")]


@pytest.mark.parametrize(
    ("budget", "victims"),
    [
        pytest.param(None, ["web-0", "web-1", "web-2", "plain"], id="no-pdb"),
        pytest.param(pdb(name="b", match={"app": "web"}, allowed=0), ["plain"], id="none-allowed"),
        pytest.param(pdb(name="b", match={"app": "web"}, allowed=1), ["web-0", "plain"], id="first-in-order"),
        pytest.param(pdb(name="b", match={"app": "web"}, min_available=1), ["web-0", "web-1", "plain"],
                     id="computed-without-status"),
        pytest.param(pdb(name="b", match={"app": "db"}, allowed=0), ["web-0", "web-1", "web-2", "plain"],
                     id="selects-other-pods"),
    ],
)
def test_victims_within_budget(budget: dict[str, Any] | None, victims: list[str]) -> None:
    """Each candidate costs one disruption of every PDB selecting it; one that overdraws a budget is dropped.
    A pod without labels matches no PDB and stays a candidate."""
    ssn = _web(*([budget] if budget else []))
    chosen, vote = _plugin(ssn).victims(task(ssn, "p"), _candidates(ssn))
    assert (_names(chosen), vote) == (victims, Vote.PERMIT)
    assert _names(ssn.victim_tasks(_candidates(ssn))) == victims


def test_a_pdb_with_an_empty_selector_selects_nothing() -> None:
    """Volcano skips a PDB whose selector is empty (LabelSelectorAsSelector gives nothing to match)."""
    empty = pdb(name="all", match={}, allowed=0)
    ssn = _web(empty)
    assert _names(_plugin(ssn).within_budgets(_candidates(ssn))) == ["web-0", "web-1", "web-2", "plain"]


def test_evictions_earlier_in_the_cycle_count_against_the_budget() -> None:
    """A pod the cycle already evicted used up the budget: no other selected pod is offered; a discarded
    eviction gives it back."""
    ssn = _web(pdb(name="b", match={"app": "web"}, allowed=1))
    stmt = Statement(ssn)
    stmt.evict(task(ssn, "web-2"), "preempt")
    assert _names(_plugin(ssn).within_budgets(_candidates(ssn)[:2])) == []
    stmt.discard()
    assert _names(_plugin(ssn).within_budgets(_candidates(ssn)[:2])) == ["web-0"]


def test_two_budgets_both_charged() -> None:
    """A pod two PDBs select needs room in both."""
    ssn = _web(pdb(name="wide", match={"app": "web"}, allowed=5), pdb(name="none", match={"app": "web"}, allowed=0))
    assert _names(_plugin(ssn).within_budgets(_candidates(ssn))) == ["plain"]


def test_an_empty_answer_defers_to_the_next_tier() -> None:
    """Volcano's tiers: pdb's empty answer in tier 1 does not veto; a later tier (here conformance) decides."""
    conf = 'actions: "preempt"\ntiers:\n- plugins:\n  - name: pdb\n- plugins:\n  - name: conformance\n'
    pods = [pod(name=f"web-{i}", node_name="n", labels={"app": "web"}) for i in range(2)]
    ssn = open_at(conf, node(name="n"), pdb(name="b", match={"app": "web"}, allowed=0), *pods, pod(name="p"))
    assert _names(ssn.preemptable(task(ssn, "p"), [task(ssn, "web-0"), task(ssn, "web-1")])) == ["web-0", "web-1"]
