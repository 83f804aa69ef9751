"""What a cycle's result says about PodGroups, waiting pods and Queues: the status the writer only writes."""

from __future__ import annotations

from typing import Any

import pytest

from py_volcano.api import (
    GANG_READY,
    NOT_ENOUGH_PODS,
    NOT_ENOUGH_RESOURCES,
    ConditionUpdate,
    CycleResult,
    JobID,
    PodGroupPhase,
    PodWait,
    QueueState,
    TaskID,
    TaskStatus,
)
from py_volcano.framework import run_cycle, statuses
from py_volcano.registry import default_registry, load_conf
from tests.builders import cluster, node, pod, pod_group, queue

REGISTRY = default_registry()
GANG_MESSAGE = "1/3 tasks unschedulable: 0/3 nodes are available: 3 Insufficient cpu"
PLACED = (
    ConditionUpdate("Scheduled", "True", GANG_READY),
    ConditionUpdate("Unschedulable", "False", "Scheduled"),
)


def cycle(*objects: dict[str, Any]) -> CycleResult:
    """One cycle of the packaged configuration."""
    return run_cycle(cluster(*objects), load_conf(None), REGISTRY)


def gang_cluster() -> list[dict[str, Any]]:
    """A gang of three 2-CPU pods that fits the queue but not the nodes, and a lone pod no node selects."""
    return [
        node(name="n1", cpu="3"),
        node(name="n2", cpu="3"),
        node(name="n3", cpu="1"),
        pod_group(name="gang", min_member=3),
        *(pod(name=f"gang-{i}", group="gang", cpu="2") for i in range(3)),
        pod(name="solo", spec={"nodeSelector": {"disk": "ssd"}}),
    ]


def pair(*, cpu: str) -> list[dict[str, Any]]:
    """A gang of two 1-CPU pods and room for two on n1 only when `cpu` allows."""
    return [
        node(name="n1", cpu=cpu),
        node(name="n2", cpu="500m"),
        pod_group(name="pair", min_member=2),
        pod(name="pair-0", group="pair"),
        pod(name="pair-1", group="pair"),
    ]


def test_a_gang_that_fits_no_node_is_unschedulable_for_lack_of_resources() -> None:
    result = cycle(*gang_cluster())
    status = result.pod_groups[JobID("default/gang")]
    assert (status.phase, status.unschedulable) == (PodGroupPhase.INQUEUE, GANG_MESSAGE)
    assert status.conditions == (ConditionUpdate("Unschedulable", "True", NOT_ENOUGH_RESOURCES, GANG_MESSAGE),)


def test_a_gang_short_of_members_is_unschedulable_for_lack_of_pods() -> None:
    result = cycle(
        node(name="n1"), pod_group(name="g", min_member=3), pod(name="g-0", group="g"), pod(name="g-1", group="g")
    )
    message = "2/2 tasks unschedulable: Not enough valid tasks for gang-scheduling, valid: 2, min: 3"
    status = result.pod_groups[JobID("default/g")]
    assert status.conditions == (ConditionUpdate("Unschedulable", "True", NOT_ENOUGH_PODS, message),)
    assert result.pod_waits == {
        TaskID("default/g-0"): PodWait("default", "g-0", message),
        TaskID("default/g-1"): PodWait("default", "g-1", message),
    }


def test_a_pod_waits_with_its_own_fit_error_else_its_groups_message() -> None:
    """The gang pod the cycle tried last and the lone pod carry their own fit error; the others the group's."""
    result = cycle(*gang_cluster())
    selector = "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector"
    assert result.pod_waits == {
        TaskID("default/gang-0"): PodWait("default", "gang-0", GANG_MESSAGE),
        TaskID("default/gang-1"): PodWait("default", "gang-1", GANG_MESSAGE),
        TaskID("default/gang-2"): PodWait("default", "gang-2", "0/3 nodes are available: 3 Insufficient cpu"),
        TaskID("default/solo"): PodWait("default", "solo", selector),
    }
    assert {wait.reason for wait in result.pod_waits.values()} == {"Unschedulable"}
    assert result.unplaced == set(result.pod_waits)
    assert result.pod_groups[JobID("default/podgroup-solo")].shadow


def test_a_gang_placed_this_cycle_is_scheduled_and_no_longer_waits() -> None:
    result = cycle(*pair(cpu="4"))
    status = result.pod_groups[JobID("default/pair")]
    assert len(result.binds) == 2
    assert (status.phase, status.unschedulable, status.conditions) == (PodGroupPhase.INQUEUE, "", PLACED)
    assert result.pod_waits == {}
    assert result.unplaced == set()


def test_a_gang_placed_only_in_part_is_not_scheduled() -> None:
    result = cycle(*pair(cpu="1500m"))
    status = result.pod_groups[JobID("default/pair")]
    assert result.binds == []
    assert [c.type for c in status.conditions] == ["Unschedulable"]


def test_a_running_gang_stays_scheduled_and_counts_its_pods() -> None:
    result = cycle(
        node(name="n1", cpu="8"),
        pod_group(name="d", min_member=1, phase="Running"),
        pod(name="d-0", group="d", node_name="n1", phase="Succeeded"),
        pod(name="d-1", group="d", node_name="n1", phase="Failed"),
        pod(name="d-2", group="d", node_name="n1"),
        pod(name="d-3", group="d", cpu="100"),
    )
    status = result.pod_groups[JobID("default/d")]
    # `pending` counts the tasks neither ready nor pipelined: the failed one and the one that fits nowhere.
    assert (status.phase, status.running, status.succeeded, status.failed, status.pending) == (
        PodGroupPhase.RUNNING, 1, 1, 1, 2
    )
    assert status.conditions == PLACED


def test_a_status_names_the_object_it_goes_to_and_carries_its_observed_conditions() -> None:
    group = pod_group(name="g", namespace="ns")
    group["metadata"]["uid"] = "uid-g"
    observed = {"type": "Ready", "status": "True", "lastTransitionTime": "2025-12-31T00:00:00Z"}
    group["status"]["conditions"] = [observed]
    status = cycle(node(name="n1"), group, pod(name="g-0", namespace="ns", group="g")).pod_groups[JobID("ns/g")]
    assert (status.namespace, status.name, status.uid, status.observed_conditions) == ("ns", "g", "uid-g", (observed,))


def test_queue_statuses_count_pod_groups_per_phase_shadow_groups_included() -> None:
    closed = queue(name="q2")
    closed["status"]["state"] = "Closed"
    result = cycle(
        node(name="n1", cpu="8"),
        queue(name="q1"),
        closed,
        pod_group(name="d", queue="q1", phase="Running"),
        pod(name="d-0", group="d", node_name="n1"),
        pod(name="lone", queue="q1", cpu="100"),
        pod(name="shut", queue="q2"),
    )
    q1, q2 = result.queue_statuses["q1"], result.queue_statuses["q2"]
    assert (q1.state, q1.pending, q1.inqueue, q1.running, q1.unknown, q1.completed) == (QueueState.OPEN, 0, 1, 1, 0, 0)
    assert q1.allocated is result.queues["q1"].allocated
    assert q1.allocated.to_quantities() == {"cpu": "1", "memory": "1Gi"}
    assert (q2.state, q2.pending, q2.inqueue) == (QueueState.CLOSED, 1, 0)


@pytest.mark.parametrize(
    ("message", "placed", "expected"),
    [
        pytest.param(
            GANG_MESSAGE,
            False,
            (ConditionUpdate("Unschedulable", "True", NOT_ENOUGH_PODS, GANG_MESSAGE),),
            id="unschedulable gang",
        ),
        pytest.param("", True, PLACED, id="placed gang: Scheduled, and a stale Unschedulable retracted"),
        pytest.param(GANG_MESSAGE, True, PLACED, id="placed gang with extra unschedulable pods"),
        pytest.param("", False, (), id="nothing said: no conditions"),
    ],
)
def test_pod_group_conditions(message: str, placed: bool, expected: tuple[ConditionUpdate, ...]) -> None:
    assert statuses.pod_group_conditions(unschedulable=message, reason=NOT_ENOUGH_PODS, placed=placed) == expected


def test_a_pipelined_pod_waits_for_its_node() -> None:
    snapshot = cluster(node(name="n1"), pod(name="p-0"), pod(name="p-1"))
    job = snapshot.jobs[JobID("default/podgroup-p-0")]
    task = job.tasks[TaskID("default/p-0")]
    task.node_name = "n1"
    job.update_task_status(task, TaskStatus.PIPELINED)
    message = "Pod default/p-0 can possibly be assigned to n1, once resource is released"
    assert statuses.pod_waits(snapshot.jobs.values(), {}) == {TaskID("default/p-0"): PodWait("default", "p-0", message)}
    assert statuses.unplaced_pods(snapshot.jobs.values()) == {TaskID("default/p-0"), TaskID("default/p-1")}


def test_pipelined_message_is_volcanos() -> None:
    assert (
        statuses.pipelined_message("ns/p-0", "n1")
        == "Pod ns/p-0 can possibly be assigned to n1, once resource is released"
    )
