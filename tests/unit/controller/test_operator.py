"""What the PodGroup controller decides without the API server: which pods the scheduler holds back, which
groups it queues on pod and owner events, and what the store's snapshot then shows.

The writes themselves (create, patch, delete, annotate) are tested against a real API server in
e2e/test_podgroup_controller.py.
"""

from __future__ import annotations

from typing import Any, cast

import pytest

from py_volcano.api import parse_pod
from py_volcano.cache.client import ApiClient
from py_volcano.cache.store import KINDS, NODES, POD_GROUPS, PODS, Store
from py_volcano.controller import WATCHED, OwnerKind, PodGroupController
from tests import builders

JOBS, REPLICA_SETS = WATCHED[0], WATCHED[1]
GANG = {"scheduling.volcano.sh/group-min-member": "3"}
JOB = ("batch/v1", "Job", "job-1")


def owner_manifest(
    kind: OwnerKind, uid: str, *, annotations: dict[str, str] | None = None, replicas: int = 3
) -> dict[str, Any]:
    """A Job or ReplicaSet as its watch delivers it."""
    spec: dict[str, Any] = {"replicas": replicas} if kind.scalable else {"parallelism": replicas}
    return {
        "apiVersion": kind.api_version,
        "kind": kind.kind,
        "metadata": {"name": f"w-{uid}", "namespace": "ns", "uid": uid, "annotations": annotations or {}},
        "spec": spec,
    }


def pod_manifest(
    name: str,
    *,
    owner: tuple[str, str, str] | None = JOB,
    rv: int = 1,
    group: str = "",
    node_name: str = "",
    phase: str = "",
    scheduler: str = "py-volcano",
) -> dict[str, Any]:
    """A pod of `owner` (apiVersion, kind, uid) at resourceVersion `rv`."""
    pod = builders.pod(name=name, namespace="ns", group=group, node_name=node_name, phase=phase, scheduler=scheduler)
    pod["metadata"].update(uid=f"uid-{name}", resourceVersion=str(rv))
    if owner is not None:
        api_version, kind, uid = owner
        pod["metadata"]["ownerReferences"] = [
            {"apiVersion": api_version, "kind": kind, "name": f"w-{uid}", "uid": uid, "controller": True}
        ]
    return pod


def pod_group_manifest(name: str, *, min_member: int, rv: int = 1) -> dict[str, Any]:
    group = builders.pod_group(name=name, namespace="ns", min_member=min_member)
    group["metadata"]["resourceVersion"] = str(rv)
    return group


@pytest.fixture
def store() -> Store:
    """A synced store with one node."""
    store = Store(scheduler_name="py-volcano")
    for kind in KINDS:
        store.listing(kind, started=0.0).finish(version=0)
    node = builders.node(name="n1")
    node["metadata"]["resourceVersion"] = "1"
    store.apply_event(NODES, "ADDED", node)
    return store


@pytest.fixture
def controller(store: Store) -> PodGroupController:
    """The controller wired into the store as the runner wires it. Its client is never reached here:
    nothing is reconciled (`run` is not started)."""
    controller = PodGroupController(cast(ApiClient, None), store, scheduler_name="py-volcano", is_leader=lambda: True)
    store.grouping = controller
    return controller


def jobs(store: Store) -> dict[str, list[str]]:
    """The snapshot's jobs, with their tasks' names."""
    return {job_id: sorted(task.name for task in job.tasks.values()) for job_id, job in store.snapshot().jobs.items()}


# Holding pods back ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("owner", "known", "pod", "held"),
    [
        pytest.param(JOB, None, {}, True, id="job-not-read-yet"),
        pytest.param(JOB, {}, {}, False, id="job-without-gang"),
        pytest.param(JOB, GANG, {}, True, id="job-asking-for-a-gang"),
        pytest.param(JOB, GANG, {"group": "podgroup-job-1"}, False, id="already-grouped"),
        pytest.param(JOB, GANG, {"node_name": "n1"}, False, id="already-bound"),
        pytest.param(JOB, GANG, {"phase": "Succeeded"}, False, id="finished"),
        pytest.param(JOB, GANG, {"scheduler": "default-scheduler"}, False, id="another-scheduler"),
        pytest.param(("jobset.x-k8s.io/v1alpha2", "JobSet", "js-1"), None, {}, False, id="unwatched-owner-kind"),
        pytest.param(None, None, {}, False, id="no-owner"),
    ],
)
def test_which_pods_wait_for_their_group(
    controller: PodGroupController,
    owner: tuple[str, str, str] | None,
    known: dict[str, str] | None,
    pod: dict[str, Any],
    held: bool,
) -> None:
    """Only an ungrouped, pending pod whose owner asks for a gang, or is a watched kind not read yet, waits."""
    if known is not None:
        controller.on_owner_event(JOBS, "ADDED", owner_manifest(JOBS, "job-1", annotations=known))
    parsed = parse_pod(pod_manifest("p", owner=owner, **pod), priority_classes={})
    assert controller.holds(parsed) is held


def test_held_pods_stay_out_of_the_snapshot_until_grouped(store: Store, controller: PodGroupController) -> None:
    """A gang's pods are never one-pod jobs: out of the snapshot until annotated, then one job."""
    controller.on_owner_event(JOBS, "ADDED", owner_manifest(JOBS, "job-1", annotations=GANG))
    for i in range(3):
        store.apply_event(PODS, "ADDED", pod_manifest(f"p{i}"))
    assert jobs(store) == {}
    store.apply_event(POD_GROUPS, "ADDED", pod_group_manifest("podgroup-job-1", min_member=3))
    for i in range(3):
        store.apply_event(PODS, "MODIFIED", pod_manifest(f"p{i}", rv=2, group="podgroup-job-1"))
    assert jobs(store) == {"ns/podgroup-job-1": ["p0", "p1", "p2"]}


def test_pods_of_a_workload_asking_no_gang_are_one_pod_jobs_meanwhile(
    store: Store, controller: PodGroupController
) -> None:
    """Once its owner is read and asks for nothing, a pod is a one-pod job until it is grouped."""
    store.apply_event(PODS, "ADDED", pod_manifest("p0"))
    assert jobs(store) == {}
    generation = store.generation
    controller.on_owner_event(JOBS, None, owner_manifest(JOBS, "job-1"))
    assert store.generation > generation, "an owner read must wake the next cycle"
    assert jobs(store) == {"ns/podgroup-uid-p0": ["p0"]}


def test_without_the_controller_pods_are_one_pod_jobs(store: Store) -> None:
    """--no-podgroup-controller: nothing is held, as before the controller existed."""
    store.apply_event(PODS, "ADDED", pod_manifest("p0"))
    assert jobs(store) == {"ns/podgroup-uid-p0": ["p0"]}


# Queueing -----------------------------------------------------------------------------------------


def test_pods_queue_their_groups(store: Store, controller: PodGroupController) -> None:
    """One group per owner, one per bare pod; grouped, finished and foreign pods queue nothing."""
    store.apply_event(PODS, "ADDED", pod_manifest("a"))
    store.apply_event(PODS, "ADDED", pod_manifest("b"))
    store.apply_event(PODS, "ADDED", pod_manifest("bare", owner=None))
    store.apply_event(PODS, "ADDED", pod_manifest("grouped", owner=("batch/v1", "Job", "job-2"), group="pg"))
    store.apply_event(PODS, "ADDED", pod_manifest("done", owner=("batch/v1", "Job", "job-3"), phase="Succeeded"))
    store.apply_event(PODS, "ADDED", pod_manifest("other", owner=("batch/v1", "Job", "job-4"), scheduler="x"))
    assert controller.queued == ["ns/podgroup-job-1", "ns/podgroup-uid-bare"]


def test_an_owner_annotation_change_queues_its_group(store: Store, controller: PodGroupController) -> None:
    """A new value of an inherited annotation queues the group; a status-only change does not."""
    controller.on_owner_event(JOBS, None, owner_manifest(JOBS, "job-1", annotations=GANG))
    store.apply_event(PODS, "ADDED", pod_manifest("a", group="podgroup-job-1"))
    assert controller.queued == []
    controller.on_owner_event(JOBS, "MODIFIED", owner_manifest(JOBS, "job-1", annotations=GANG))
    assert controller.queued == []
    changed = {"scheduling.volcano.sh/group-min-member": "2"}
    controller.on_owner_event(JOBS, "MODIFIED", owner_manifest(JOBS, "job-1", annotations=changed))
    assert controller.queued == ["ns/podgroup-job-1"]


def test_a_replica_set_scaled_to_zero_queues_its_group_while_it_exists(
    store: Store, controller: PodGroupController
) -> None:
    """Scaled to 0 with a PodGroup in the store: queued (to delete it); without one, nothing to do."""
    controller.on_owner_event(REPLICA_SETS, "MODIFIED", owner_manifest(REPLICA_SETS, "rs-1", replicas=0))
    assert controller.queued == []
    store.apply_event(POD_GROUPS, "ADDED", pod_group_manifest("podgroup-rs-1", min_member=1))
    controller.on_owner_event(REPLICA_SETS, "MODIFIED", owner_manifest(REPLICA_SETS, "rs-1", replicas=0))
    assert controller.queued == ["ns/podgroup-rs-1"]


def test_a_deleted_owner_is_forgotten(store: Store, controller: PodGroupController) -> None:
    """Its queued group goes, and its pods count as not read yet (they are being deleted too)."""
    store.apply_event(PODS, "ADDED", pod_manifest("a"))
    controller.on_owner_event(JOBS, None, owner_manifest(JOBS, "job-1"))
    controller.on_owner_event(JOBS, "DELETED", owner_manifest(JOBS, "job-1"))
    assert controller.queued == []
    assert controller.owners.get("job-1") is None
