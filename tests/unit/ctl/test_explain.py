"""`explain`: the words for what the scheduler recorded on a PodGroup and a pod, and what would let it run."""

from __future__ import annotations

import json
from typing import Any

import pytest

from py_volcano.api import EXPLAIN_ANNOTATION
from py_volcano.ctl import explain

MESSAGE = "1/3 tasks unschedulable: 0/4 nodes are available: 3 Insufficient cpu, 1 node(s) had untolerated taint"
NOTE: dict[str, Any] = {
    "reason": "NoNodeFits",
    "message": MESSAGE,
    "action": "allocate",
    "queue": "team-a",
    "queuePosition": "2",
    "clusterPosition": "11-20",
    "nodes": {"Insufficient cpu": 3, "node(s) had untolerated taint": 1},
    "minMember": 3,
    "ready": 1,
    "valid": 3,
    "preemption": "off: the configured actions include neither preempt nor reclaim",
}
QUEUES = [
    {"metadata": {"name": "team-a"}, "status": {"pending": 1, "inqueue": 4}},
    {"metadata": {"name": "team-b"}, "status": {"pending": 7, "inqueue": 2}},
]


def group(*, phase: str = "Inqueue", note: dict[str, Any] | None = None, **status: Any) -> dict[str, Any]:
    annotations = {EXPLAIN_ANNOTATION: json.dumps(note)} if note is not None else {}
    return {
        "metadata": {"name": "train", "namespace": "ml", "annotations": annotations},
        "spec": {"minMember": 3, "queue": "team-a"},
        "status": {"phase": phase, **status},
    }


def pod(*, node: str = "", group_name: str = "train", message: str = "") -> dict[str, Any]:
    conditions = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}]
    return {
        "metadata": {"name": "train-0", "namespace": "ml",
                     "annotations": {"scheduling.k8s.io/group-name": group_name} if group_name else {}},
        "spec": {"nodeName": node} if node else {},
        "status": {"phase": "Running" if node else "Pending", "conditions": [] if node else conditions},
    }


def run(**objects: Any) -> dict[str, Any]:
    target = "pod ml/train-0" if objects.get("pod") is not None else "podgroup ml/train"
    queue = QUEUES[0] if objects.get("group") is not None else None
    return explain.explain(target=target, pod=objects.get("pod"), group=objects.get("group"), queue=queue,
                           queues=QUEUES)


def test_a_waiting_pod_is_explained_in_words() -> None:
    """Who held it, why, the nodes' reasons, the gang, its place in line (queue and cluster counts from the
    Queues' status), preemption, what would let it run, and the pod's own condition."""
    result = run(pod=pod(message="0/4 nodes are available: 3 Insufficient cpu"), group=group(note=NOTE))
    assert explain.explanation_text(result).splitlines() == [
        "pod ml/train-0 waits: " + MESSAGE,
        "  job:         podgroup train, queue team-a",
        "  held by:     allocate (NoNodeFits)",
        "  why:         " + MESSAGE,
        "  nodes:       3 Insufficient cpu, 1 node(s) had untolerated taint",
        "  gang:        needs 3 (minMember); 1 running or placed; 3 pods can count; short by 2",
        "  in line:     2nd in queue team-a (1 Pending, 4 Inqueue PodGroups); 11th to 20th in the cluster "
        "(8 Pending, 6 Inqueue)",
        "  preemption:  off: the configured actions include neither preempt nor reclaim",
        "  to run:      free cpu on a node, or add nodes with more cpu",
        "               give the pods a toleration for the nodes' taint, or remove the taint",
        "  pod:         PodScheduled=False: 0/4 nodes are available: 3 Insufficient cpu",
    ]
    assert result["gang"] == {"minMember": 3, "ready": 1, "valid": 3, "short": 2}
    assert result["clusterWaiting"] == {"pending": 8, "inqueue": 6}


@pytest.mark.parametrize(
    ("note", "held_by", "hint"),
    [
        pytest.param({"reason": "QueueClosed", "action": "enqueue"}, "enqueue (QueueClosed)",
                     "open the queue: py-volcano queue open team-a", id="closed"),
        pytest.param({"reason": "EnqueueRejected", "action": "enqueue", "plugin": "proportion"},
                     "enqueue, plugin proportion (EnqueueRejected)",
                     "wait for jobs of queue team-a to finish, raise the queue's capability, or lower the "
                     "PodGroup's minResources: the queue must hold them on top of what it holds and has admitted",
                     id="enqueue-quota"),
        pytest.param({"reason": "JobInvalid", "action": "allocate", "plugin": "gang", "minMember": 3, "valid": 1},
                     "allocate, plugin gang (JobInvalid)",
                     "create 2 more pod(s) (the owner's replicas), or lower minMember to 1", id="gang-short"),
        pytest.param({"reason": "QueueOverused", "action": "allocate", "plugin": "proportion"},
                     "allocate, plugin proportion (QueueOverused)",
                     "wait for jobs of queue team-a to finish, or raise its weight or deserved", id="overused"),
        pytest.param({"reason": "NotTakenUp"}, "no action took it up (NotTakenUp)",
                     "wait for the next cycle; if it stays, read the scheduler's log for this job", id="untouched"),
    ],
)
def test_each_reason_names_who_held_the_job_and_what_would_let_it_run(
    note: dict[str, Any], held_by: str, hint: str
) -> None:
    text = explain.explanation_text(run(group=group(note=note)))
    assert f"  held by:     {held_by}" in text.splitlines()
    assert f"  to run:      {hint}" in text.splitlines()


def test_a_job_the_cycle_took_up_in_no_action_has_no_place_in_line() -> None:
    text = explain.explanation_text(run(group=group(note={"reason": "QueueClosed", "action": "enqueue"})))
    assert "  in line:     not in line this cycle (no action took it up)" in text.splitlines()


def test_a_bound_pod_and_a_placed_gang_do_not_wait() -> None:
    assert explain.explanation_text(run(pod=pod(node="n1"), group=group(phase="Running"))) == (
        "pod ml/train-0 does not wait: the pod is on node n1 (phase Running)\n"
        "  job:         podgroup train, queue team-a"
    )
    assert run(group=group(phase="Running"))["summary"] == "its gang is placed (PodGroup phase Running)"


def test_a_pod_whose_podgroup_is_missing_waits_for_it() -> None:
    result = run(pod=pod(), group=None)
    assert (result["waiting"], result["summary"]) == (True, "its PodGroup train does not exist; the pod waits for it")


def test_without_the_schedulers_record_the_condition_is_shown() -> None:
    """Another scheduler (or none) wrote no explanation: say so, with what the conditions say."""
    unschedulable = {"type": "Unschedulable", "status": "True", "message": "3/3 tasks in gang unschedulable"}
    result = run(group=group(conditions=[unschedulable]))
    assert result["summary"] == "the scheduler recorded no explanation; it says: 3/3 tasks in gang unschedulable"


@pytest.mark.parametrize(
    ("band", "words"),
    [("1", "1st"), ("2", "2nd"), ("3", "3rd"), ("11", "11th"), ("21-50", "21st to 50th"), ("112", "112th")],
)
def test_places_read_as_ordinals(band: str, words: str) -> None:
    assert explain.place(band) == words
