"""Why a pod waits, in words a user can act on; and a node whose pods use more than it allocates wedges no queue."""

from __future__ import annotations

from typing import Any

import pytest

from py_volcano.api import POD_SCHEDULER_ERROR, POD_UNSCHEDULABLE, ClusterInfo, CycleResult, PodWait
from py_volcano.cache.store import NODES, PODS, QUEUES, Store
from py_volcano.framework import run_cycle
from py_volcano.registry import default_registry, load_conf
from tests.builders import cluster, node, pod, pod_group, queue


def cycle(snapshot: ClusterInfo) -> CycleResult:
    """One cycle with the default configuration."""
    return run_cycle(snapshot, load_conf(None), default_registry())


def wait_of(result: CycleResult, name: str) -> PodWait:
    """The PodScheduled=False the cycle wants on pod `default/<name>`."""
    return next(wait for wait in result.pod_waits.values() if wait.name == name)


def closed(name: str) -> dict[str, Any]:
    """A Closed Queue."""
    body = queue(name=name)
    body["status"]["state"] = "Closed"
    return body


@pytest.mark.parametrize(
    ("objects", "message"),
    [
        pytest.param(
            [node(name="n0", cpu="4"), node(name="n1", cpu="4"), pod(name="w", cpu="16")],
            "1/1 tasks unschedulable: no node can hold pod default/w: 0/2 nodes are available: 2 Insufficient cpu",
            id="a-pod-bigger-than-every-node-is-told-no-node-can-hold-it",
        ),
        pytest.param(
            [
                node(name="n0", cpu="8"),
                queue(name="q", capability={"cpu": "2"}),
                pod(name="r", cpu="2", queue="q", node_name="n0"),
                pod(name="w", cpu="1", queue="q"),
            ],
            "1/1 tasks unschedulable: queue q is over its capability: allocated + pod default/w = cpu 3 > cpu 2",
            id="a-queue-at-its-capability-is-named-with-the-amounts",
        ),
        pytest.param(
            [
                node(name="n0", cpu="4"),
                queue(name="a"),
                queue(name="b"),
                pod(name="r", cpu="2", queue="a", node_name="n0"),
                pod(name="w", cpu="1", queue="a"),
                pod(name="x", cpu="2", queue="b"),
            ],
            "1/1 tasks unschedulable: queue a is over its deserved share: allocated + pod default/w = cpu 3 "
            "> deserved cpu 2",
            id="a-queue-at-its-deserved-share-is-named-with-the-amounts",
        ),
        pytest.param(
            [node(name="n0"), closed("q"), pod_group(name="g", queue="q"), pod(name="w", group="g")],
            "1/1 tasks unschedulable: queue q is Closed: it admits no new jobs",
            id="a-job-of-a-closed-queue-is-told-so",
        ),
        pytest.param(
            [node(name="n0"), pod(name="w", queue="nope")],
            "1/1 tasks unschedulable: queue nope not found",
            id="a-pod-naming-a-missing-queue-is-told-so",
        ),
        pytest.param(
            [node(name="n0"), pod(name="w", group="missing")],
            "PodGroup default/missing not found; the pod waits",
            id="a-pod-naming-a-missing-pod-group-is-told-so",
        ),
    ],
)
def test_a_waiting_pod_is_told_why(objects: list[dict[str, Any]], message: str) -> None:
    """Each cause has its own words, not "queue default has no quota left" for all."""
    wait = wait_of(cycle(cluster(*objects)), "w")
    assert (wait.reason, wait.message) == (POD_UNSCHEDULABLE, message)


def test_a_pod_of_an_invalid_queue_is_told_the_queue_s_error() -> None:
    """The store keeps the Queue's parse error; the snapshot hands it to the cycle."""
    store = Store(scheduler_name="py-volcano")
    store.apply_event(NODES, "ADDED", node(name="n0"))
    store.apply_event(QUEUES, "ADDED", queue(name="bad", weight=0))
    store.apply_event(PODS, "ADDED", pod(name="w", queue="bad"))
    wait = wait_of(cycle(store.snapshot()), "w")
    assert wait.message == (
        "1/1 tasks unschedulable: queue bad is invalid: Queue bad: field spec.weight: must be between 1 and "
        "2147483647, got 0"
    )


def test_a_pod_of_ours_that_cannot_be_parsed_gets_a_scheduler_error_naming_the_field() -> None:
    """A quantity beyond int64 costs only that pod, which is told so (another scheduler's pod is not)."""
    store = Store(scheduler_name="py-volcano")
    store.apply_event(NODES, "ADDED", node(name="n0"))
    for name, scheduler in (("ours", "py-volcano"), ("theirs", "default-scheduler")):
        store.apply_event(PODS, "ADDED", pod(name=name, cpu="1e1000000", scheduler=scheduler))
    store.apply_event(PODS, "ADDED", pod(name="fine", cpu="1"))
    result = cycle(store.snapshot())
    assert [task.name for task, _ in result.binds] == ["fine"]
    wait = wait_of(result, "ours")
    assert wait.reason == POD_SCHEDULER_ERROR
    assert wait.message == (
        "py-volcano cannot read this pod and leaves it aside: Pod default/ours: field "
        "spec.containers[0].resources.requests.cpu: quantity out of range: '1e1000000'"
    )
    assert not any(w.name == "theirs" for w in result.pod_waits.values())
    assert any("Pod default/theirs" in warning for warning in result.warnings)


def test_a_node_whose_pods_use_more_than_it_allocates_wedges_no_queue() -> None:
    """n0's allocatable fell to 1 CPU under a 16-CPU pod: the total counts 16 there, so the queue's new
    pod goes to n1 instead of waiting for "quota" until the big pod ends; n0 is reported."""
    snapshot = cluster(
        node(name="n0", cpu="1"),
        node(name="n1", cpu="4"),
        pod(name="big", cpu="16", node_name="n0"),
        pod(name="w", cpu="1"),
    )
    result = cycle(snapshot)
    assert [(task.name, host) for task, host in result.binds] == [("w", "n1")]
    assert result.overcommitted_nodes == {
        "n0": "node n0: its pods use more cpu than it allocates (used cpu 16; allocatable cpu 1); "
        "the cluster total counts what they use"
    }
