"""The explain and figures annotations: their exact JSON, places in bands, and writes only on change."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from py_volcano.api import (
    EXPLAIN_ANNOTATION,
    QUEUE_FIGURES_ANNOTATION,
    CycleResult,
    JobID,
    JobWait,
    PodGroupPhase,
    PodGroupStatus,
    QueueFigures,
    Resource,
    WaitReason,
)
from py_volcano.cache import status_diff
from py_volcano.cache.annotations import AnnotationPatch, AnnotationRecords

JOB = JobID("ns/g")
WAIT = JobWait(
    reason=WaitReason.NO_NODE_FITS,
    message="1/2 tasks unschedulable: 0/3 nodes are available: 3 Insufficient cpu",
    action="allocate",
    queue="q",
    queue_position=3,
    cluster_position=14,
    nodes=(("Insufficient cpu", 3),),
    min_member=2,
    valid=2,
    preemption="off: the configured actions include neither preempt nor reclaim",
)


def result(wait: JobWait | None, *, uid: str = "u1", observed: str = "", shadow: bool = False) -> CycleResult:
    status = PodGroupStatus(
        phase=PodGroupPhase.INQUEUE, namespace="ns", name="g", uid=uid, shadow=shadow, observed_explanation=observed
    )
    cycle = CycleResult(pod_groups={JOB: status})
    if wait is not None:
        cycle.job_waits[JOB] = wait
    return cycle


@pytest.mark.parametrize(
    ("position", "band"),
    [
        pytest.param(0, "", id="no-place"),
        pytest.param(1, "1", id="head"),
        pytest.param(10, "10", id="last-exact"),
        pytest.param(11, "11-20", id="first-band"),
        pytest.param(21, "21-50", id="x2.5"),
        pytest.param(100, "51-100", id="x2"),
        pytest.param(101, "101-200", id="next-decade"),
        pytest.param(20_001, "20001-50000", id="far-back"),
    ],
)
def test_places_beyond_ten_are_written_as_bands(position: int, band: str) -> None:
    """Exact up to 10, then 1-2-5 bands."""
    assert status_diff.position_band(position) == band


def test_the_explanation_is_compact_sorted_json_with_banded_places() -> None:
    """Empty fields are left out (but the gang's counts stay); keys are sorted, so equal waits are equal strings."""
    assert json.loads(status_diff.explain_annotation(WAIT)) == {
        "action": "allocate",
        "clusterPosition": "11-20",
        "message": WAIT.message,
        "minMember": 2,
        "nodes": {"Insufficient cpu": 3},
        "preemption": WAIT.preemption,
        "queue": "q",
        "queuePosition": "3",
        "ready": 0,
        "reason": "NoNodeFits",
        "valid": 2,
    }
    assert status_diff.explain_annotation(WAIT).startswith('{"action":"allocate","clusterPosition"')


def test_a_wait_is_written_once_and_again_only_when_it_changes() -> None:
    """A place moving inside its band is no write; a new reason is; a job that stops waiting loses it."""
    records = AnnotationRecords()
    [patch] = records.diff(result(WAIT))
    path = "/apis/scheduling.volcano.sh/v1beta1/namespaces/ns/podgroups/g"
    assert (patch.kind, patch.name, patch.path, patch.key) == ("PodGroup", JOB, path, EXPLAIN_ANNOTATION)
    assert patch.body() == {"metadata": {"annotations": {EXPLAIN_ANNOTATION: status_diff.explain_annotation(WAIT)}}}
    assert records.diff(result(WAIT)) == []
    moved = replace(WAIT, cluster_position=19)
    assert records.diff(result(moved)) == []
    closed = replace(WAIT, reason=WaitReason.QUEUE_CLOSED)
    assert [p.value for p in records.diff(result(closed))] == [status_diff.explain_annotation(closed)]
    [removed] = records.diff(result(None))
    assert removed.value is None
    assert removed.body() == {"metadata": {"annotations": {EXPLAIN_ANNOTATION: None}}}
    assert records.diff(result(None)) == []


def test_after_a_restart_the_annotation_the_snapshot_saw_counts_as_written() -> None:
    """Nothing is rewritten when the object already holds the wait; a stale one on a running job is removed."""
    written = status_diff.explain_annotation(WAIT)
    assert AnnotationRecords().diff(result(WAIT, observed=written)) == []
    assert AnnotationRecords().diff(result(None)) == []
    [stale] = AnnotationRecords().diff(result(None, observed=written))
    assert stale.value is None


def test_a_recreated_podgroup_is_written_again_and_shadow_groups_never() -> None:
    """A new uid under the same name is a new object; a pod without a PodGroup has no object to annotate."""
    records = AnnotationRecords()
    records.diff(result(WAIT))
    assert [p.uid for p in records.diff(result(WAIT, uid="u2"))] == ["u2"]
    assert AnnotationRecords().diff(result(WAIT, shadow=True)) == []


def test_a_failed_write_is_forgotten_and_written_again() -> None:
    """`forget` makes the next diff write the same value again."""
    records = AnnotationRecords()
    [patch] = records.diff(result(WAIT))
    records.forget(patch)
    assert [p.value for p in records.diff(result(WAIT))] == [patch.value]


def test_queue_figures_are_written_when_they_change() -> None:
    """Deserved, capability, real capability, share (3 places) and overused; unset capability left out."""
    figures = QueueFigures(deserved=Resource(milli_cpu=2000), real_capability=Resource(milli_cpu=4000), share=0.50004)
    cycle = CycleResult(queues={"q": figures})
    records = AnnotationRecords()
    [patch] = records.diff(cycle)
    assert isinstance(patch, AnnotationPatch) and patch.key == QUEUE_FIGURES_ANNOTATION
    assert patch.path == "/apis/scheduling.volcano.sh/v1beta1/queues/q"
    assert json.loads(patch.value or "") == {
        "deserved": {"cpu": "2", "memory": "0"},
        "overused": False,
        "realCapability": {"cpu": "4", "memory": "0"},
        "share": 0.5,
    }
    assert records.diff(cycle) == []
    figures.share = 0.75
    assert len(records.diff(cycle)) == 1


def test_a_backed_off_job_keeps_what_the_last_cycle_that_tried_it_wrote() -> None:
    """The cycle left it out: no wait is said of it, and nothing is removed."""
    records = AnnotationRecords()
    records.diff(result(WAIT))
    skipped = result(None)
    skipped.backed_off = frozenset({JOB})
    assert records.diff(skipped) == []
    assert records.diff(result(WAIT)) == []
