"""The `volcano.sh/*` marks tdm and the gang-aware actions read, as Volcano's api package reads them."""

from __future__ import annotations

from typing import Any

import pytest

from py_volcano.api import (
    JobBudget,
    JobInfo,
    has_preemptable_mark,
    job_budget,
    job_preemptable,
    node_revocable_zone,
    task_revocable_zone,
)
from tests.builders import cluster, node, pod, pod_group


def only_job(*objects: dict[str, Any]) -> JobInfo:
    return next(iter(cluster(node(name="n"), *objects).jobs.values()))


def grouped(annotations: dict[str, str] | None = None, labels: dict[str, str] | None = None) -> JobInfo:
    group = pod_group(name="g")
    group["metadata"].update(annotations=annotations or {}, labels=labels or {})
    return only_job(group, pod(name="p", group="g"))


@pytest.mark.parametrize(
    ("annotations", "zone"),
    [
        pytest.param({}, "", id="nothing"),
        pytest.param({"volcano.sh/preemptable": "true"}, "*", id="preemptable-means-any-zone"),
        pytest.param({"volcano.sh/preemptable": "T"}, "*", id="go-bool-spelling"),
        pytest.param({"volcano.sh/preemptable": "yes"}, "", id="not-a-go-bool"),
        pytest.param({"volcano.sh/revocable-zone": "*", "volcano.sh/preemptable": "false"}, "*", id="zone-wins"),
        pytest.param({"volcano.sh/revocable-zone": "rz1", "volcano.sh/preemptable": "true"}, "", id="only-star"),
    ],
)
def test_task_revocable_zone(annotations: dict[str, str], zone: str) -> None:
    """Volcano's GetPodRevocableZone: the zone annotation decides when present, else preemptable."""
    task = next(iter(only_job(pod(name="p", annotations=annotations)).tasks.values()))
    assert task_revocable_zone(task) == zone


@pytest.mark.parametrize(
    ("job", "preemptable", "marked"),
    [
        pytest.param(grouped(), False, False, id="unmarked-is-not-preemptable"),
        pytest.param(
            grouped({"volcano.sh/preemptable": "true"}, {"volcano.sh/preemptable": "false"}),
            True,
            True,
            id="annotation-first",
        ),
        pytest.param(grouped(labels={"volcano.sh/preemptable": "1"}), True, True, id="label"),
        pytest.param(grouped({"volcano.sh/preemptable": "maybe"}), False, True, id="unreadable-is-false"),
        pytest.param(
            only_job(pod(name="p", annotations={"volcano.sh/preemptable": "true"})), True, True, id="one-pod-job"
        ),
        pytest.param(
            only_job(pod(name="p", labels={"volcano.sh/preemptable": "true"})), True, True, id="one-pod-label"
        ),
    ],
)
def test_job_preemptable(job: JobInfo, preemptable: bool, marked: bool) -> None:
    """Volcano's JobInfo.Preemptable from the PodGroup; a one-pod job reads what the controller would copy."""
    assert (job_preemptable(job), has_preemptable_mark(job)) == (preemptable, marked)


def test_job_budget_min_available_first() -> None:
    """jdb-min-available wins over jdb-max-unavailable; a one-pod job reads its pod's annotation."""
    both = {"volcano.sh/jdb-min-available": "2", "volcano.sh/jdb-max-unavailable": "1"}
    assert job_budget(grouped(both)) == JobBudget(min_available="2")
    assert job_budget(grouped({"volcano.sh/jdb-max-unavailable": "30%"})) == JobBudget(max_unavailable="30%")
    assert (
        job_budget(only_job(pod(name="p", annotations={"volcano.sh/jdb-max-unavailable": "1"}))).max_unavailable == "1"
    )
    assert job_budget(grouped()) == JobBudget()


def test_node_revocable_zone_is_the_label() -> None:
    """A node is revocable when labelled `volcano.sh/revocable-zone`."""
    nodes = cluster(node(name="a", labels={"volcano.sh/revocable-zone": "rz1"}), node(name="b")).nodes
    assert (node_revocable_zone(nodes["a"]), node_revocable_zone(nodes["b"])) == ("rz1", "")
