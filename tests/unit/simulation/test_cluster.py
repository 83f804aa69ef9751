"""The in-memory cluster feeds the scheduler's `Store` and takes its snapshot, as the runner does."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from py_volcano.api import CycleResult, JobID, PodGroupPhase, PodGroupStatus, TaskInfo, TaskStatus
from py_volcano.simulation import InMemoryCluster
from tests.builders import node, pod, pod_group


def _cluster(*objects: Mapping[str, Any]) -> InMemoryCluster:
    return InMemoryCluster(objects, source="test.yaml", scheduler_name="py-volcano")


def _task(cluster: InMemoryCluster, key: str) -> TaskInfo:
    snapshot = cluster.snapshot()
    return next(task for job in snapshot.jobs.values() for task in job.tasks.values() if task.key == key)


def test_listing_order_is_creation_order_whatever_the_names() -> None:
    """Pods listed `zz` then `aa` are created in that order: the store's snapshot keeps it (it sorts by
    creation, then name)."""
    cluster = _cluster(node(name="n1"), pod(name="zz"), pod(name="aa"))
    snapshot = cluster.snapshot()
    assert [task.name for job in snapshot.jobs.values() for task in job.tasks.values()] == ["zz", "aa"]
    assert _task(cluster, "default/zz").creation < _task(cluster, "default/aa").creation


def test_a_manifest_creation_timestamp_is_kept() -> None:
    """A creationTimestamp in the manifest wins over the listing position."""
    stamped = pod(name="old")
    stamped["metadata"]["creationTimestamp"] = "2020-01-02T03:04:05Z"
    cluster = _cluster(node(name="n1"), stamped)
    assert _task(cluster, "default/old").creation == datetime(2020, 1, 2, 3, 4, 5, tzinfo=UTC).timestamp()


def test_decisions_play_out_between_cycles() -> None:
    """A bound pod runs on its node, an evicted pod is gone, the PodGroup phase is written, and the
    phase of a pod without a PodGroup carries over: all seen in the next snapshot."""
    cluster = _cluster(
        node(name="n1"),
        pod_group(name="pg", phase="Inqueue"),
        pod(name="member", group="pg"),
        pod(name="solo"),
        pod(name="victim", node_name="n1"),
    )
    solo_job = JobID("default/podgroup-solo")
    result = CycleResult(
        binds=[(_task(cluster, "default/member"), "n1")],
        evictions=[(_task(cluster, "default/victim"), "n1")],
        pod_groups={
            JobID("default/pg"): PodGroupStatus(phase=PodGroupPhase.RUNNING),
            solo_job: PodGroupStatus(phase=PodGroupPhase.INQUEUE, shadow=True),
        },
    )
    cluster.apply(result)
    snapshot = cluster.snapshot()
    member = _task(cluster, "default/member")
    assert (member.node_name, member.status) == ("n1", TaskStatus.RUNNING)
    assert all(task.name != "victim" for job in snapshot.jobs.values() for task in job.tasks.values())
    assert cluster.pod("default/victim") is None
    assert snapshot.jobs[JobID("default/pg")].phase == PodGroupPhase.RUNNING
    assert snapshot.jobs[solo_job].phase == PodGroupPhase.INQUEUE
    assert cluster.store.phases == {}  # the written PodGroup came back as a watch event


def test_namespaces_are_accepted_and_unknown_kinds_warned_about() -> None:
    """A Namespace is accepted silently; a kind the simulator does not play is reported and ignored."""
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "team"}}
    cluster = _cluster(namespace, job, node(name="n1"))
    assert cluster.warnings == ["Job team/j: kind not simulated; ignored"]
    assert list(cluster.snapshot().nodes) == ["n1"]
