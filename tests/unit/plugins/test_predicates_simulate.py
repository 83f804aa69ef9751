"""predicates in dry runs (topology-aware preemption): inter-pod affinity re-checked after the simulate hooks
remove or add pods on a node clone, hand-checked and compared with real evictions on random clusters."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest

from py_volcano.api import TaskStatus
from py_volcano.framework import CycleState, PredicateStatus, Session, Statement
from py_volcano.plugins import predicates
from tests.unit.plugins.test_predicates import (
    WEB,
    allowed,
    hostnames,
    pending,
    pod_affinity,
    ports,
    random_objects,
    running,
    session,
    task,
    term,
)


def _dry_run(
    ssn: Session, preemptor: str, node_name: str, *, remove: list[str], add: Sequence[str] = ()
) -> Any:
    state, clone = CycleState(), ssn.nodes[node_name].clone()
    for name in remove:
        ssn.simulate_remove_task(state, task(ssn, preemptor), task(ssn, name), clone)
    for name in add:
        ssn.simulate_add_task(state, task(ssn, preemptor), task(ssn, name), clone)
    return ssn.simulate_predicate(state, task(ssn, preemptor), clone)


def test_dry_run_removing_the_repelled_pod_frees_the_node() -> None:
    """Removing the pod the anti-affinity selects clears the failure; adding it back undoes that."""
    ssn = session(
        *hostnames("n1", "n2"),
        running("web", "n1", labels={"app": "web"}),
        running("other", "n1", labels={"app": "x"}),
        pending("p", spec=pod_affinity(anti=[term(WEB)])),
    )
    anti = PredicateStatus("node(s) didn't match pod anti-affinity rules", resolvable=True)
    assert _dry_run(ssn, "p", "n1", remove=[]) == anti
    assert _dry_run(ssn, "p", "n1", remove=["other"]) == anti
    assert _dry_run(ssn, "p", "n1", remove=["web"]) is None
    assert _dry_run(ssn, "p", "n1", remove=["web"], add=["web"]) == anti
    assert allowed(ssn, "p") == ["n2"]


def test_dry_run_existing_anti_affinity_and_affinity() -> None:
    """A removed guard no longer repels; removing the only pod the affinity needs makes the node fail."""
    ssn = session(
        *hostnames("n1", "n2"),
        running("guard", "n1", spec=pod_affinity(anti=[term(WEB)])),
        running("cache", "n2", labels={"app": "cache"}),
        pending("web", labels={"app": "web"}),
        pending("p", spec=pod_affinity(affinity=[term({"matchLabels": {"app": "cache"}})])),
    )
    assert _dry_run(ssn, "web", "n1", remove=[]) == PredicateStatus(
        "node(s) didn't satisfy existing pods anti-affinity rules", resolvable=True
    )
    assert _dry_run(ssn, "web", "n1", remove=["guard"]) is None
    assert _dry_run(ssn, "p", "n2", remove=[]) is None
    assert _dry_run(ssn, "p", "n2", remove=["cache"]) == PredicateStatus(
        "node(s) didn't match pod affinity rules"
    )


def test_dry_run_without_any_affinity_is_skipped() -> None:
    """No terms and no placed anti-affinity selecting the pod: the dry run never fails (PreFilter skip)."""
    ssn = session(
        *hostnames("n1"),
        running("web", "n1", labels={"app": "web"}, spec=ports((80, "TCP", "0.0.0.0"))),
        pending("p", spec=ports((80, "TCP", "0.0.0.0"))),
    )
    assert _dry_run(ssn, "p", "n1", remove=[]) is None


@pytest.mark.parametrize("seed", range(4))
def test_dry_runs_agree_with_real_evictions(seed: int) -> None:
    """Removing pods in a dry run gives the inter-pod verdict the node has once they are really evicted."""
    ssn = session(*random_objects(seed))
    plugin = ssn.plugins["predicates"]
    assert isinstance(plugin, predicates.PredicatesPlugin) and plugin.state is not None
    rng = random.Random(seed)
    pending_tasks = [t for j in ssn.jobs.values() for t in j.tasks.values() if t.status is TaskStatus.PENDING]
    compared = 0
    for p in pending_tasks:
        for n in rng.sample(ssn.node_list, 4):
            victims = [t for t in n.tasks.values() if rng.random() < 0.6]
            state, clone = CycleState(), n.clone()
            for victim in victims:
                ssn.simulate_remove_task(state, p, victim, clone)
            simulated = ssn.simulate_predicate(state, p, clone)
            stmt = Statement(ssn)
            for victim in victims:
                stmt.evict(victim, "dry-run check")
            counts = plugin.state.affinity_check(p)
            failure = counts.failure(n.index) if counts is not None else None
            stmt.discard()
            assert simulated == (PredicateStatus(failure[0], failure[1]) if failure else None), (
                p.name,
                n.name,
            )
            compared += simulated is not None
    assert compared > 0
