"""The store: watch events, reconciling LISTs (ghosts, newer state wins), overlays of our own decisions."""

from __future__ import annotations

from typing import Any

import pytest

from py_volcano.api import JobID, PodGroupPhase, TaskStatus
from py_volcano.cache.store import KINDS, NODES, POD_GROUPS, PODS, Kind, Store


def pod(name: str, *, rv: int, node: str = "", phase: str = "Pending", cpu: str = "1", **meta: Any) -> dict[str, Any]:
    """A pod manifest at resourceVersion `rv`."""
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "resourceVersion": str(rv), **meta},
        "spec": {
            "schedulerName": "py-volcano",
            "nodeName": node,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}, "env": [{"name": "X"}]}],
            "volumes": [{"name": "v"}],
        },
        "status": {"phase": phase},
    }


def node(name: str, *, rv: int, cpu: str = "4") -> dict[str, Any]:
    """A node manifest at resourceVersion `rv`."""
    return {
        "metadata": {"name": name, "resourceVersion": str(rv)},
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}},
    }


def pod_group(name: str, *, rv: int, phase: str = "Pending") -> dict[str, Any]:
    """A PodGroup manifest at resourceVersion `rv`."""
    return {
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": str(rv)},
        "spec": {"minMember": 1, "queue": "default"},
        "status": {"phase": phase},
    }


@pytest.fixture
def clock() -> list[float]:
    """An injected monotonic clock: tests move it by assigning `clock[0]`."""
    return [100.0]


@pytest.fixture
def store(clock: list[float]) -> Store:
    """A store whose every kind is synced (empty listings), with one 4-CPU node."""
    created = Store(scheduler_name="py-volcano", clock=lambda: clock[0])
    for kind in (PODS, NODES, POD_GROUPS):
        reconcile(created, kind, [], version=1, started=clock[0])
    created.apply_event(NODES, "ADDED", node("n1", rv=2))
    return created


def reconcile(store: Store, kind: Kind, items: list[dict[str, Any]], *, version: int, started: float) -> None:
    """One full LIST of `kind` taken at `version`, in a single page."""
    listing = store.listing(kind, started=started)
    listing.add(items)
    listing.finish(version=version)


def idle_cpu(store: Store) -> float:
    """Milli-CPU left on n1 in a fresh snapshot."""
    return store.snapshot().nodes["n1"].idle.milli_cpu


def test_a_ghost_the_watch_never_deleted_is_dropped_by_the_next_list(store: Store, clock: list[float]) -> None:
    """A pod missing from a LIST newer than it is gone (its DELETE was lost across a 410 Gone)."""
    store.apply_event(PODS, "ADDED", pod("ghost", rv=10, node="n1", phase="Running", cpu="3"))
    assert idle_cpu(store) == 1000

    reconcile(store, PODS, [], version=20, started=clock[0])

    assert store.pod("ns/ghost") is None
    assert idle_cpu(store) == 4000


def test_a_pod_created_after_the_list_survives_it(store: Store, clock: list[float]) -> None:
    """A pod the watch shows newer than the LIST is kept: the LIST could not know it."""
    store.apply_event(PODS, "ADDED", pod("new", rv=30))
    reconcile(store, PODS, [], version=20, started=clock[0])
    assert store.pod("ns/new") is not None


def test_a_list_older_than_the_watch_does_not_roll_a_pod_back(store: Store, clock: list[float]) -> None:
    """The LIST's version of a pod loses to a newer one from the watch."""
    store.apply_event(PODS, "MODIFIED", pod("p", rv=25, node="n1", phase="Running"))
    reconcile(store, PODS, [pod("p", rv=15)], version=20, started=clock[0])
    parsed = store.pod("ns/p")
    assert parsed is not None and parsed.task.node_name == "n1"


def test_a_list_older_than_a_deletion_does_not_resurrect_the_pod(store: Store, clock: list[float]) -> None:
    """A pod deleted (rv 25) after a LIST was taken (rv 20) stays deleted when that LIST arrives."""
    store.apply_event(PODS, "ADDED", pod("p", rv=15))
    store.apply_event(PODS, "DELETED", pod("p", rv=25))
    reconcile(store, PODS, [pod("p", rv=15)], version=20, started=clock[0])
    assert store.pod("ns/p") is None


def test_a_stale_delete_does_not_remove_a_recreated_pod(store: Store) -> None:
    """The DELETE of an older pod of the same name (other uid, older version) leaves the new one."""
    store.apply_event(PODS, "ADDED", pod("p", rv=30))
    old = pod("p", rv=25)
    old["metadata"]["uid"] = "uid-old"
    store.apply_event(PODS, "DELETED", old)
    assert store.pod("ns/p") is not None


def test_a_malformed_pod_is_kept_out_of_the_snapshot_and_named_in_its_warnings(store: Store) -> None:
    """A pod with an unreadable quantity replaces its previous version by nothing, with the reason."""
    store.apply_event(PODS, "ADDED", pod("p", rv=10, node="n1", phase="Running"))
    store.apply_event(PODS, "MODIFIED", pod("p", rv=11, node="n1", phase="Running", cpu="lots"))
    snapshot = store.snapshot()
    assert idle_cpu(store) == 4000
    assert not snapshot.jobs
    assert any("ns/p" in w and "spec.containers[0].resources.requests.cpu" in w for w in snapshot.warnings)


def test_a_mended_or_deleted_malformed_pod_is_no_longer_reported(store: Store) -> None:
    """The pod's error and skipped-pod report last only while it stays unreadable."""
    store.apply_event(PODS, "ADDED", pod("p", rv=10, cpu="lots"))
    first = store.snapshot()
    assert [s.name for s in first.skipped_pods] == ["p"] and any("ns/p" in w for w in first.warnings)
    store.apply_event(PODS, "MODIFIED", pod("p", rv=11))
    mended = store.snapshot()
    assert not mended.skipped_pods and not any("ns/p" in w for w in mended.warnings)
    store.apply_event(PODS, "MODIFIED", pod("p", rv=12, cpu="lots"))
    store.apply_event(PODS, "DELETED", pod("p", rv=13, cpu="lots"))
    gone = store.snapshot()
    assert not gone.skipped_pods and not any("ns/p" in w for w in gone.warnings)


@pytest.mark.parametrize(
    ("kind", "obj"),
    [
        pytest.param(PODS, pod("huge", rv=10, cpu="1e1000000"), id="pod-quantity-beyond-any-range"),
        pytest.param(NODES, node("huge", rv=10, cpu="1e1000000"), id="node-quantity-beyond-any-range"),
        pytest.param(
            PODS,
            {**pod("odd", rv=10), "spec": {"containers": [{"resources": {"requests": []}}]}},
            id="pod-requests-not-a-map",
        ),
        pytest.param(POD_GROUPS, {**pod_group("odd", rv=10), "spec": ["not", "a", "map"]}, id="pod-group-spec-a-list"),
    ],
)
def test_an_object_no_parser_can_read_is_skipped_and_the_rest_still_scheduled(
    store: Store, kind: Kind, obj: dict[str, Any]
) -> None:
    """Whatever an object holds, applying it never raises: it is skipped with a warning naming it."""
    store.apply_event(kind, "ADDED", obj)
    store.apply_event(PODS, "ADDED", pod("fine", rv=11))
    snapshot = store.snapshot()
    assert [task.name for job in snapshot.jobs.values() for task in job.tasks.values()] == ["fine"]
    assert any(obj["metadata"]["name"] in w for w in snapshot.warnings)


def test_only_what_scheduling_needs_is_kept_of_a_pod(store: Store) -> None:
    """Volumes and container env are dropped from the kept manifest."""
    store.apply_event(PODS, "ADDED", pod("p", rv=10))
    raw = store.records[PODS.name]["ns/p"].manifest()
    assert raw is not None
    assert "volumes" not in raw["spec"]
    assert raw["spec"]["containers"] == [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]


def test_an_assumed_bind_holds_the_node_until_the_watch_confirms_it(store: Store) -> None:
    """From the moment a bind is sent its pod uses the node, in every snapshot, until seen bound."""
    store.apply_event(PODS, "ADDED", pod("p", rv=10, cpu="3"))
    store.assume("ns/p", "n1")
    assert idle_cpu(store) == 1000
    task = next(iter(store.snapshot().jobs[JobID("ns/podgroup-uid-p")].tasks.values()))
    assert (task.status, task.node_name) == (TaskStatus.BINDING, "n1")

    store.bind_settled("ns/p", ok=True)
    store.apply_event(PODS, "MODIFIED", pod("p", rv=11, cpu="3"))  # an unrelated update, not yet bound
    assert not store.bind_observed("ns/p")
    assert idle_cpu(store) == 1000

    store.apply_event(PODS, "MODIFIED", pod("p", rv=12, node="n1", cpu="3"))
    assert store.bind_observed("ns/p")
    assert idle_cpu(store) == 1000


def test_a_job_whose_bind_is_in_flight_is_taken_unchanged_until_its_pod_or_its_bind_changes(store: Store) -> None:
    """While neither the pod nor its assumed bind changes, each snapshot shows the pod as the last did, so
    the job built from it is handed on (`BuiltJobs`) instead of built again; a change of either shows."""
    store.apply_event(NODES, "ADDED", node("n2", rv=3))
    store.apply_event(PODS, "ADDED", pod("p", rv=10, cpu="3"))
    job_id = JobID("ns/podgroup-uid-p")
    store.assume("ns/p", "n1")
    first = store.snapshot().jobs[job_id]
    assert store.snapshot().jobs[job_id] is first

    store.apply_event(PODS, "MODIFIED", pod("p", rv=11, cpu="3", labels={"x": "y"}))  # not yet bound
    relabelled = store.snapshot().jobs[job_id]
    assert relabelled is not first
    task = next(iter(relabelled.tasks.values()))
    assert (task.status, task.node_name, task.labels) == (TaskStatus.BINDING, "n1", {"x": "y"})

    store.bind_settled("ns/p", ok=False)  # refused, then placed again elsewhere
    store.assume("ns/p", "n2")
    task = next(iter(store.snapshot().jobs[job_id].tasks.values()))
    assert (task.status, task.node_name) == (TaskStatus.BINDING, "n2")


def test_a_refused_bind_is_rolled_back_at_once(store: Store) -> None:
    """An answered failure frees the node in the next snapshot."""
    store.apply_event(PODS, "ADDED", pod("p", rv=10, cpu="3"))
    store.assume("ns/p", "n1")
    store.bind_settled("ns/p", ok=False)
    assert store.bind_observed("ns/p")
    assert idle_cpu(store) == 4000


def test_a_bind_without_answer_is_kept_until_a_later_list_shows_the_pod_unbound(
    store: Store, clock: list[float]
) -> None:
    """No answer means the bind may have happened: the pod holds the node until a LIST sent after the
    call ended shows it unbound; a LIST sent before that proves nothing."""
    store.apply_event(PODS, "ADDED", pod("p", rv=10, cpu="3"))
    store.assume("ns/p", "n1")
    clock[0] = 110.0
    store.bind_settled("ns/p", ok=None)

    reconcile(store, PODS, [pod("p", rv=10, cpu="3")], version=20, started=105.0)
    assert idle_cpu(store) == 1000

    reconcile(store, PODS, [pod("p", rv=10, cpu="3")], version=21, started=111.0)
    assert idle_cpu(store) == 4000


def test_only_a_bind_or_eviction_without_answer_asks_for_a_list(store: Store, clock: list[float]) -> None:
    """A LIST is due once a call without answer is `older_than` old and its echo never came; answered
    calls (refused or accepted) never ask for one."""
    for name in ("answered", "unanswered", "refused"):
        store.apply_event(PODS, "ADDED", pod(name, rv=10))
        store.assume(f"ns/{name}", "n1")
    store.bind_settled("ns/answered", ok=True)
    store.bind_settled("ns/refused", ok=False)
    clock[0] = 200.0
    assert not store.awaiting_list(older_than=30.0)
    store.bind_settled("ns/unanswered", ok=None)
    clock[0] = 229.0
    assert not store.awaiting_list(older_than=30.0)
    clock[0] = 231.0
    assert store.awaiting_list(older_than=30.0)
    store.apply_event(PODS, "MODIFIED", pod("unanswered", rv=11, node="n1"))
    assert not store.awaiting_list(older_than=30.0), "the echo settles it"


def test_a_list_taken_page_by_page_reconciles_like_one(store: Store, clock: list[float]) -> None:
    """Pages are taken as they come; ghosts are only dropped once the last page is in."""
    store.apply_event(PODS, "ADDED", pod("ghost", rv=5, node="n1", phase="Running", cpu="1"))
    listing = store.listing(PODS, started=clock[0])
    listing.add([pod("a", rv=6)])
    assert store.pod("ns/a") is not None and store.pod("ns/ghost") is not None
    listing.add([pod("b", rv=7)])
    listing.finish(version=20)
    assert store.pod("ns/ghost") is None
    assert {p.task.name for p in store.specs(PODS)} == {"a", "b"}


def test_a_pod_change_the_scheduler_does_not_read_keeps_the_parsed_pod(store: Store) -> None:
    """A new version that differs only in what is trimmed away (conditions, IPs) is not parsed again."""
    store.apply_event(PODS, "ADDED", pod("p", rv=10))
    parsed = store.pod("ns/p")
    changed = pod("p", rv=11)
    changed["status"]["conditions"] = [{"type": "PodScheduled", "status": "False"}]
    store.apply_event(PODS, "MODIFIED", changed)
    assert store.pod("ns/p") is parsed
    assert store.records[PODS.name]["ns/p"].version == 11
    store.apply_event(PODS, "MODIFIED", pod("p", rv=12, phase="Running", node="n1"))
    again = store.pod("ns/p")
    assert again is not parsed and again is not None and again.task.node_name == "n1"


def test_the_scheduled_condition_survives_the_trim(store: Store) -> None:
    """When PodScheduled turned True is kept (cdp's cooldown counts from it); PodScheduled=False is not."""
    running = pod("p", rv=10, phase="Running", node="n1")
    running["status"]["conditions"] = [
        {"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-01T00:00:09Z"},
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2024-01-01T00:00:05Z", "message": "m"},
    ]
    store.apply_event(PODS, "ADDED", running)
    parsed = store.pod("ns/p")
    assert parsed is not None and parsed.task.scheduled_at == 1704067205.0
    raw = store.records[PODS.name]["ns/p"].manifest()
    assert raw is not None and raw["status"] == {
        "phase": "Running",
        "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": "2024-01-01T00:00:05Z"}],
    }


def test_a_sidecars_restart_policy_survives_the_trim(store: Store) -> None:
    """A sidecar (init container with restartPolicy Always) runs beside the containers: 1 + 1 CPU, and the 2-CPU
    init container after it needs 2 + 1, so the pod requests 3 (docs/semantics.md, "Pod requests")."""
    raw = pod("p", rv=10)
    raw["spec"]["initContainers"] = [
        {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}, "env": []},
        {"name": "setup", "resources": {"requests": {"cpu": "2"}}},
    ]
    store.apply_event(PODS, "ADDED", raw)
    parsed = store.pod("ns/p")
    assert parsed is not None and parsed.task.resreq.milli_cpu == 3000


def test_the_generation_moves_only_when_something_a_cycle_reads_changes(store: Store) -> None:
    """Heartbeats and condition writes leave the generation alone; specs, phases and overlays move it."""
    store.apply_event(PODS, "ADDED", pod("p", rv=10))
    start = store.generation
    heartbeat = node("n1", rv=11)
    heartbeat["status"]["conditions"] = [{"type": "Ready", "status": "True", "lastHeartbeatTime": "t1"}]
    store.apply_event(NODES, "MODIFIED", heartbeat)
    conditions = pod("p", rv=12)
    conditions["status"]["conditions"] = [{"type": "PodScheduled", "status": "False"}]
    store.apply_event(PODS, "MODIFIED", conditions)
    assert store.generation == start

    store.apply_event(NODES, "MODIFIED", node("n1", rv=13, cpu="8"))
    assert store.generation == start + 1
    store.assume("ns/p", "n1")
    assert store.generation == start + 2
    store.bind_settled("ns/p", ok=True)
    assert store.generation == start + 2, "an answered bind changes nothing until its echo"
    store.apply_event(PODS, "MODIFIED", pod("p", rv=14, node="n1", phase="Running"))
    assert store.generation == start + 3


def test_an_evicted_pod_is_releasing_until_it_vanishes(store: Store) -> None:
    """An accepted eviction marks the pod Releasing until the watch deletes it; a refused one unmarks it."""
    store.apply_event(PODS, "ADDED", pod("a", rv=10, node="n1", phase="Running"))
    store.apply_event(PODS, "ADDED", pod("b", rv=11, node="n1", phase="Running"))
    store.mark_releasing("ns/a")
    store.mark_releasing("ns/b")
    store.eviction_settled("ns/a", ok=True)
    store.eviction_settled("ns/b", ok=False)

    statuses = {t.name: t.status for job in store.snapshot().jobs.values() for t in job.tasks.values()}
    assert statuses == {"a": TaskStatus.RELEASING, "b": TaskStatus.RUNNING}
    assert not store.eviction_observed("ns/a")

    store.apply_event(PODS, "DELETED", pod("a", rv=12, node="n1", phase="Running"))
    assert store.eviction_observed("ns/a")
    assert "ns/a" not in store.releasing


def test_a_decided_pod_group_phase_holds_until_the_watch_shows_it(store: Store) -> None:
    """The next snapshot sees the phase the cycle decided, before and until the written status echoes."""
    store.apply_event(POD_GROUPS, "ADDED", pod_group("g", rv=10))
    store.record_phases({JobID("ns/g"): (PodGroupPhase.INQUEUE, False)})
    assert store.snapshot().jobs[JobID("ns/g")].phase is PodGroupPhase.INQUEUE

    store.apply_event(POD_GROUPS, "MODIFIED", pod_group("g", rv=11, phase="Inqueue"))
    assert JobID("ns/g") not in store.phases


def test_a_job_whose_decided_phase_has_not_echoed_is_taken_unchanged_until_its_group_or_phase_changes(
    store: Store,
) -> None:
    """While the PodGroup and the phase decided for it stay, each snapshot shows the group as the last
    did, so its job is handed on instead of built again; a new phase or a PodGroup change shows."""
    store.apply_event(POD_GROUPS, "ADDED", pod_group("g", rv=10))
    job_id = JobID("ns/g")
    store.record_phases({job_id: (PodGroupPhase.INQUEUE, False)})
    first = store.snapshot().jobs[job_id]
    assert store.snapshot().jobs[job_id] is first and first.phase is PodGroupPhase.INQUEUE

    store.record_phases({job_id: (PodGroupPhase.RUNNING, False)})
    running = store.snapshot().jobs[job_id]
    assert running is not first and running.phase is PodGroupPhase.RUNNING
    assert store.snapshot().jobs[job_id] is running

    relabelled = pod_group("g", rv=11)
    relabelled["metadata"]["labels"] = {"x": "y"}
    store.apply_event(POD_GROUPS, "MODIFIED", relabelled)
    changed = store.snapshot().jobs[job_id]
    assert changed is not running and changed.phase is PodGroupPhase.RUNNING


def test_a_decided_phase_back_to_the_pod_groups_own_drops_the_one_decided_before(store: Store) -> None:
    """A cycle that decides the phase the PodGroup object still has, before the echo of the phase decided
    before it came, leaves the next snapshot that phase, not the earlier one."""
    store.apply_event(POD_GROUPS, "ADDED", pod_group("g", rv=10, phase="Running"))
    store.record_phases({JobID("ns/g"): (PodGroupPhase.PENDING, False)})
    assert store.snapshot().jobs[JobID("ns/g")].phase is PodGroupPhase.PENDING
    store.record_phases({JobID("ns/g"): (PodGroupPhase.RUNNING, False)})
    assert JobID("ns/g") not in store.phases
    assert store.snapshot().jobs[JobID("ns/g")].phase is PodGroupPhase.RUNNING


def test_the_store_is_synced_once_every_kind_was_listed(clock: list[float]) -> None:
    """Watch events alone never make the store synced: the first LIST of every kind does."""
    fresh = Store(scheduler_name="py-volcano", clock=lambda: clock[0])
    fresh.apply_event(NODES, None, node("n1", rv=2))
    assert not fresh.is_synced
    for kind in KINDS:
        reconcile(fresh, kind, [], version=1, started=clock[0])
    assert fresh.is_synced
    assert fresh.specs(NODES), "the node seen by the watch before the LIST and newer than it is kept"


def test_a_snapshot_lists_pods_in_creation_order_whatever_the_event_order(store: Store) -> None:
    """Events arriving newest first still give a snapshot whose node lists its pods oldest first."""
    for index, name in reversed(list(enumerate(["a", "b", "c"]))):
        created = f"2030-01-01T00:00:0{index}Z"
        store.apply_event(
            PODS, "ADDED", pod(name, rv=10 + index, node="n1", phase="Running", creationTimestamp=created)
        )
    assert [task.name for task in store.snapshot().nodes["n1"].tasks.values()] == ["a", "b", "c"]


def test_a_pod_is_read_again_from_its_kept_manifest_when_its_priority_class_arrives(store: Store) -> None:
    """The kept manifest (compact JSON) is what a PriorityClass change parses again: a pod without
    spec.priority takes its class's value once the class is known, and loses it when it is deleted."""
    waiting = pod("p", rv=10)
    waiting["spec"]["priorityClassName"] = "high"
    store.apply_event(PODS, "ADDED", waiting)
    before = store.pod("ns/p")
    assert before is not None and before.task.priority == 0
    assert isinstance(store.records[PODS.name]["ns/p"].raw, bytes)
    classes = next(kind for kind in KINDS if kind.name == "PriorityClass")
    store.apply_event(classes, "ADDED", {"metadata": {"name": "high", "resourceVersion": "11"}, "value": 1000})
    after = store.pod("ns/p")
    assert after is not None and after.task.priority == 1000 and after.task.priority_class_name == "high"
    store.apply_event(classes, "DELETED", {"metadata": {"name": "high", "resourceVersion": "12"}, "value": 1000})
    gone = store.pod("ns/p")
    assert gone is not None and gone.task.priority == 0  # and once it is deleted, the class is forgotten
