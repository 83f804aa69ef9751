"""Task order when no plugin ranks two tasks (docs/semantics.md, "Ordering ties"): Volcano's CompareTask."""

from __future__ import annotations

import pytest

from py_volcano.framework import Session
from tests.builders import node, pod, pod_group
from tests.unit.actions.sessions import session, task

CONF = 'actions: "allocate"\ntiers:\n- plugins:\n  - name: gang'


def _session(*names: tuple[str, str]) -> Session:
    """Pods `(name, group)` listed in this order, so the first listed is the oldest."""
    groups = sorted({group for _, group in names})
    return session(
        CONF,
        node(name="n1"),
        *(pod_group(name=group) for group in groups),
        *(pod(name=name, group=group) for name, group in names),
    )


@pytest.mark.parametrize(
    ("pods", "first"),
    [
        pytest.param((("job-task-10", "j"), ("job-task-9", "j")), "job-task-9", id="index-before-age"),
        pytest.param((("train-10", "j"), ("train-9", "j")), "train-10", id="two-parts-no-index-older-first"),
        pytest.param((("job-task-10", "j"), ("other-9", "j")), "job-task-10", id="one-index-older-first"),
        pytest.param((("a-x-3", "j"), ("b-y-3", "j")), "a-x-3", id="same-index-older-first"),
        pytest.param((("a-x-5", "j"), ("b-y-2", "k")), "b-y-2", id="index-across-jobs"),
    ],
)
def test_task_order_ties_as_volcanos_compare_task(pods: tuple[tuple[str, str], ...], first: str) -> None:
    """By name index (at least three dash-separated parts), whatever the jobs; else older first, then uid."""
    ssn = _session(*pods)
    l, r = (task(ssn, name) for name, _ in pods)
    assert ssn.task_order_fn(l, r) is (l.name == first)
    assert ssn.task_order_fn(r, l) is (r.name == first)


def test_victims_of_two_jobs_that_tie_go_by_the_reverse_of_task_order() -> None:
    """BuildVictimsPriorityQueue: jobs the job order plugins tie fall back to !TaskOrderFn, name index included,
    so the victim with the higher index goes first although it is older."""
    ssn = _session(("a-x-5", "j"), ("b-y-2", "k"), ("pre-z-0", "p"))
    high, low, preemptor = task(ssn, "a-x-5"), task(ssn, "b-y-2"), task(ssn, "pre-z-0")
    assert ssn.victim_order_fn(high, low, preemptor)
    assert not ssn.victim_order_fn(low, high, preemptor)
