"""Victim bundles of gangpreempt and gangreclaim (Volcano's actions/utils/bundle.go)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from py_volcano.actions.gangpreempt.bundles import (
    Bundle,
    BundleKind,
    apply_allowed,
    create_job_bundles,
    return_on_investment,
    sort_for_preempt,
)
from py_volcano.api import JobInfo, Resource
from tests.builders import cluster, node, pod, pod_group


def job(*pods: dict[str, Any], min_member: int, roles: dict[str, int] | None = None, name: str = "j") -> JobInfo:
    group = pod_group(name=name, namespace="ns", min_member=min_member, phase="Running")
    if roles:
        group["spec"]["minTaskMember"] = roles
    snapshot = cluster(node(name="n", cpu="64", memory="64Gi"), group, *pods)
    return snapshot.jobs[f"ns/{name}"]  # type: ignore[index]


def running(name: str, *, priority: int = 0, role: str = "", cpu: str = "1", group: str = "j") -> dict[str, Any]:
    notes = {"volcano.sh/task-spec": role} if role else {}
    return pod(name=name, namespace="ns", group=group, node_name="n", priority=priority, cpu=cpu, annotations=notes)


def split(bundles: list[Bundle]) -> list[tuple[str, list[str]]]:
    return [(bundle.kind.name, [task.name for task in bundle.tasks]) for bundle in bundles]


@pytest.mark.parametrize(
    ("victim", "expected"),
    [
        pytest.param(
            job(running("a", priority=2), running("b", priority=1), running("c", priority=3), min_member=2),
            [("SAFE", ["b"]), ("WHOLE", ["a", "c"])],
            id="one-above-min-member-is-safe-lowest-priority-first",
        ),
        pytest.param(
            job(running("a"), running("b"), min_member=3),
            [("SAFE", ["a", "b"])],
            id="a-job-already-below-min-member-is-all-safe",
        ),
        pytest.param(
            job(running("a"), running("b"), min_member=2),
            [("WHOLE", ["a", "b"])],
            id="a-job-at-min-member-is-all-whole",
        ),
        pytest.param(
            job(
                running("ps", role="ps"),
                running("w1", role="worker", priority=1),
                running("w2", role="worker", priority=2),
                min_member=2,
                roles={"ps": 1, "worker": 1},
            ),
            [("SAFE", ["w1"]), ("WHOLE", ["ps", "w2"])],
            id="a-role-at-its-minimum-cannot-give",
        ),
    ],
)
def test_candidates_split_into_what_keeps_the_gang_and_what_breaks_it(
    victim: JobInfo, expected: list[tuple[str, list[str]]]
) -> None:
    """A task is safe while the job and its role keep more ready tasks than their minimums."""
    assert split(create_job_bundles(victim, list(victim.tasks.values()))) == expected


def test_allowed_tasks_trim_safe_bundles_and_drop_broken_whole_ones() -> None:
    """A whole bundle missing any task is useless (the gang would not be whole); a safe one keeps the rest."""
    victim = job(*(running(f"t{i}", priority=i) for i in range(4)), min_member=2)
    bundles = create_job_bundles(victim, list(victim.tasks.values()))
    assert split(apply_allowed(bundles, {"ns/t0", "ns/t2"})) == [("SAFE", ["t0"])]
    kept = apply_allowed(bundles, {"ns/t0", "ns/t1", "ns/t2", "ns/t3"})
    assert split(kept) == split(bundles)
    assert kept[0].local.milli_cpu == 2000


def test_return_on_investment_weighs_what_is_freed_against_the_whole_job() -> None:
    """Safe bundles cost nothing (infinite return); a whole bundle frees its tasks (capped at the need)
    over the whole job's request."""
    victim = job(running("a", cpu="2"), running("b", cpu="2"), min_member=2)
    [whole] = create_job_bundles(victim, [victim.tasks[next(iter(victim.tasks))]])
    need = Resource(milli_cpu=1000)
    assert return_on_investment(whole, need) == pytest.approx(1.0 / 4.0)
    safe = Bundle(BundleKind.SAFE, victim, [], Resource(milli_cpu=500))
    assert math.isinf(return_on_investment(safe, need))


def test_preempt_ranking_safe_first_then_jobs_last_in_job_order_then_best_return() -> None:
    """Jobs are ranked by the reverse of job order: the job that would be scheduled last loses first."""
    first = job(running("a1", group="first"), running("a2", group="first"), min_member=2, name="first")
    later = job(running("b1", group="later", cpu="2"), min_member=1, name="later")
    bundles = [
        *create_job_bundles(first, list(first.tasks.values())),
        Bundle(BundleKind.SAFE, later, list(later.tasks.values()), Resource(milli_cpu=2000)),
        *create_job_bundles(later, list(later.tasks.values())),
    ]
    order = {first.uid: 0, later.uid: 1}
    ranked = sort_for_preempt(bundles, Resource(milli_cpu=1000), lambda l, r: order[l.uid] < order[r.uid])
    assert split(ranked) == [("SAFE", ["b1"]), ("WHOLE", ["b1"]), ("WHOLE", ["a1", "a2"])]
