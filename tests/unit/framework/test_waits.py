"""Why a job waits and where it stands, as the cycle's result says (docs/semantics.md, "Waiting jobs and
their place in line"): the action and plugin that held it, from the cycle's own refusals, never re-run."""

from __future__ import annotations

from typing import Any

import pytest

from py_volcano.api import CycleResult, JobID, JobWait, WaitReason
from py_volcano.framework import run_cycle
from py_volcano.registry import default_registry, load_conf
from tests.builders import cluster, node, pod, pod_group, queue

REGISTRY = default_registry()
WITH_PREEMPT = """actions: "enqueue, allocate, preempt, reclaim"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: proportion
"""
NOWHERE = {"nodeSelector": {"zone": "mars"}}


def cycle(*objects: dict[str, Any], conf: str | None = None) -> CycleResult:
    return run_cycle(cluster(*objects), load_conf(conf, registry=REGISTRY), REGISTRY)


def wait_of(result: CycleResult, job: str) -> JobWait:
    return result.job_waits[JobID(job)]


def test_a_placed_gang_does_not_wait() -> None:
    """Only jobs the cycle did not place have a wait."""
    result = cycle(node(name="n1"), queue(name="default"), pod_group(name="g", min_member=2),
                   pod(name="g-0", group="g"), pod(name="g-1", group="g"))
    assert result.job_waits == {}


def test_a_job_of_a_closed_queue_is_held_by_enqueue() -> None:
    """A Pending job of a Closed queue waits at enqueue's own rule (no plugin) and has no place in line."""
    closed = {**queue(name="shut"), "status": {"state": "Closed"}}
    result = cycle(node(name="n1"), queue(name="default"), closed,
                   pod_group(name="g", queue="shut"), pod(name="g-0", group="g"))
    wait = wait_of(result, "default/g")
    assert (wait.reason, wait.action, wait.plugin) == (WaitReason.QUEUE_CLOSED, "enqueue", "")
    assert wait.message == "queue shut is Closed: it admits no new jobs"
    assert (wait.queue_position, wait.cluster_position) == (0, 0)


def test_enqueue_names_the_plugin_that_rejected_and_its_reason() -> None:
    """The first plugin to vote reject is the one named, with the message it set."""
    result = cycle(node(name="n1", cpu="8"), queue(name="default"), queue(name="small", capability={"cpu": "2"}),
                   pod_group(name="g", queue="small", min_resources={"cpu": "3"}),
                   pod(name="g-0", group="g", cpu="3"))
    wait = wait_of(result, "default/g")
    assert (wait.reason, wait.action, wait.plugin) == (WaitReason.ENQUEUE_REJECTED, "enqueue", "proportion")
    assert wait.message == "queue resource quota insufficient: cpu"
    assert wait.preemption == "off: the configured actions include neither preempt nor reclaim"


def test_no_node_fits_counts_the_nodes_by_reason() -> None:
    """A gang whose pods fit nowhere waits at allocate with the node counts of its first such pod."""
    result = cycle(node(name="n1"), node(name="n2", labels={"zone": "earth"}), queue(name="default"),
                   pod_group(name="g", min_member=2), pod(name="g-0", group="g", spec=NOWHERE),
                   pod(name="g-1", group="g", spec=NOWHERE))
    wait = wait_of(result, "default/g")
    assert (wait.reason, wait.action, wait.plugin) == (WaitReason.NO_NODE_FITS, "allocate", "")
    assert wait.nodes == (("node(s) didn't match Pod's node affinity/selector", 2),)
    assert (wait.min_member, wait.ready, wait.valid) == (2, 0, 2)
    assert wait.message.startswith("1/2 tasks unschedulable: 0/2 nodes are available")


def test_a_gang_with_too_few_pods_is_held_by_the_gang_plugin() -> None:
    """An admitted gang with fewer pods than minMember is invalid for allocate (plugin gang)."""
    result = cycle(node(name="n1"), queue(name="default"), pod_group(name="g", min_member=3, phase="Inqueue"),
                   pod(name="g-0", group="g"))
    wait = wait_of(result, "default/g")
    assert (wait.reason, wait.action, wait.plugin) == (WaitReason.JOB_INVALID, "allocate", "gang")
    assert (wait.min_member, wait.ready, wait.valid) == (3, 0, 1)


def test_places_in_line_follow_the_order_the_cycle_took_jobs_up() -> None:
    """Admitted jobs come first, in allocate's order (queue b first: the running filler gives default the
    higher share; then job order), then jobs waiting for admission; places count within the job's queue
    and across the cluster."""
    objects: list[dict[str, Any]] = [node(name="n1", cpu="1"), pod(name="filler", cpu="1", node_name="n1"),
                                     queue(name="default"), queue(name="b")]
    for name, q in (("a1", "default"), ("a2", "default"), ("b1", "b"), ("a3", "default")):
        objects += [pod_group(name=name, queue=q, phase="Inqueue"), pod(name=f"{name}-0", group=name)]
    objects += [pod_group(name="late", queue="b", min_resources={"cpu": "9"}), pod(name="late-0", group="late")]
    result = cycle(*objects)
    places = {job: (w.queue_position, w.cluster_position) for job, w in result.job_waits.items()}
    assert places == {
        "default/b1": (1, 1),
        "default/a1": (1, 2),
        "default/a2": (2, 3),
        "default/a3": (3, 4),
        "default/late": (2, 5),
    }
    late = wait_of(result, "default/late")
    assert (late.reason, late.action, late.plugin) == (WaitReason.ENQUEUE_REJECTED, "enqueue", "overcommit")


@pytest.mark.parametrize(
    ("phase", "expected"),
    [
        pytest.param("Pending", "not yet: preempt and reclaim act only for jobs enqueue has admitted (Inqueue)",
                     id="not-admitted"),
        pytest.param("Inqueue", "found no room this cycle: preempt evicts only lower-priority pods of queue "
                     "default; reclaim takes back only from other reclaimable queues above their deserved share",
                     id="admitted"),
    ],
)
def test_the_preemption_note_says_why_preemption_does_not_help(phase: str, expected: str) -> None:
    """With preempt and reclaim configured, the note says what they could take, or why they do not apply."""
    group = pod_group(name="g", phase=phase, min_resources={"cpu": "99"})
    result = cycle(node(name="n1"), queue(name="default"), group, pod(name="g-0", group="g", spec=NOWHERE),
                   conf=WITH_PREEMPT)
    assert wait_of(result, "default/g").preemption == expected
