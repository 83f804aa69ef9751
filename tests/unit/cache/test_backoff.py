"""Backoff of unschedulable jobs: exponential delays, woken by the changes they could use, flushed in the end;
and the store telling which changes happened."""

from __future__ import annotations

from typing import Any

import pytest

from py_volcano.api import JobID, PodGroupPhase
from py_volcano.cache.backoff import Backoff
from py_volcano.cache.store import NODES, POD_GROUPS, PODS, QUEUES, Changes, Store
from tests.unit.cache.test_store import node, pod, pod_group, reconcile

A, B = JobID("ns/a"), JobID("ns/b")


@pytest.fixture
def clock() -> list[float]:
    """An injected monotonic clock: tests move it by assigning `clock[0]`."""
    return [1000.0]


@pytest.fixture
def backoff(clock: list[float]) -> Backoff:
    """kube-scheduler's defaults: 1 s doubling to 10 s, flushed after 300 s."""
    return Backoff(initial=1.0, maximum=10.0, flush_after=300.0, clock=lambda: clock[0])


def fail(backoff: Backoff, *jobs: JobID, present: tuple[JobID, ...] = (A, B)) -> frozenset[JobID]:
    """One cycle: take the skip set, then record `jobs` as unschedulable; return the skip set."""
    skipped = backoff.skipped()
    backoff.record(jobs, present)
    return skipped


@pytest.mark.parametrize(
    ("attempts", "delay"),
    [
        pytest.param(1, 1.0, id="first-failure-1s"),
        pytest.param(2, 2.0, id="second-2s"),
        pytest.param(4, 8.0, id="fourth-8s"),
        pytest.param(5, 10.0, id="capped-at-10s"),
        pytest.param(500, 10.0, id="many-failures-stay-capped"),
    ],
)
def test_the_backoff_doubles_from_initial_up_to_maximum(backoff: Backoff, attempts: int, delay: float) -> None:
    """kube-scheduler's podInitialBackoffSeconds x 2^(attempts-1), at most podMaxBackoffSeconds."""
    assert backoff.delay(attempts) == delay


def test_a_failed_job_waits_until_a_change_wakes_it_and_its_backoff_passed(
    backoff: Backoff, clock: list[float]
) -> None:
    """Woken by freed resources before its backoff passed it still waits; once both hold it is tried,
    and a new failure waits longer."""
    fail(backoff, A)
    assert backoff.skipped() == {A}
    backoff.wake(Changes(freed=True), preempting=False)
    assert backoff.skipped() == {A}  # woken, but the 1 s backoff has not passed
    assert not backoff.due()
    clock[0] += 1.0
    assert backoff.due()
    assert fail(backoff, A) == frozenset()  # tried this cycle, failed again
    assert backoff.waiting[A].attempts == 2
    assert backoff.waiting[A].retry_at == clock[0] + 2.0


def test_a_change_to_its_own_pods_brings_a_job_back_at_once(backoff: Backoff, clock: list[float]) -> None:
    """A gang whose pods are still arriving is tried at the next cycle, whatever its backoff (as Volcano
    tries every job every cycle); another job's change does not shorten its wait."""
    fail(backoff, A, B)
    clock[0] += 1.0
    fail(backoff, A, B)  # second failure: a 2 s backoff
    backoff.wake(Changes(jobs={A, JobID("ns/other")}), preempting=False)
    assert backoff.due()
    assert fail(backoff, A) == {B}  # A tried at once and failed again; B still waits
    assert backoff.waiting[A].attempts == 3
    assert backoff.waiting[A].retry_at == clock[0] + 4.0


def test_its_own_change_brings_a_job_back_at_once_beside_a_change_that_wakes_every_job(
    backoff: Backoff, clock: list[float]
) -> None:
    """A gang's last pod arriving in the same batch of changes as room freed elsewhere (another gang's
    PodGroup leaving Inqueue as it is placed) still brings the gang back at the next cycle: the room freed
    wakes every job for when its backoff has passed, and does not hide the gang's own change."""
    for _ in range(5):
        fail(backoff, A, B)  # its pods arriving cycle after cycle: a 10 s backoff by now
    backoff.wake(Changes(freed=True, jobs={A}), preempting=False)
    assert backoff.skipped() == {B}
    clock[0] += 10.0
    assert backoff.skipped() == frozenset()


def test_without_a_change_a_failed_job_stays_out_until_it_is_flushed(backoff: Backoff, clock: list[float]) -> None:
    """Time alone does not bring it back before `flush_after` (kube-scheduler's unschedulable pods)."""
    fail(backoff, A)
    clock[0] += 299.0
    assert backoff.skipped() == {A}
    clock[0] += 1.0
    assert backoff.skipped() == frozenset()


@pytest.mark.parametrize(
    ("changes", "preempting", "woken"),
    [
        pytest.param(Changes(jobs={A}), False, {A}, id="its-own-pod-or-podgroup-wakes-only-it"),
        pytest.param(Changes(freed=True), False, {A, B}, id="freed-resources-wake-every-job"),
        pytest.param(Changes(everything=True), False, {A, B}, id="a-queue-change-wakes-every-job"),
        pytest.param(Changes(placed=True), False, set(), id="a-placed-pod-wakes-none-without-preemption"),
        pytest.param(Changes(placed=True), True, {A, B}, id="a-placed-pod-is-a-victim-for-preempt"),
        pytest.param(Changes(jobs={JobID("ns/other")}), False, set(), id="another-jobs-change-wakes-none"),
    ],
)
def test_which_changes_wake_which_jobs(
    backoff: Backoff, clock: list[float], changes: Changes, preempting: bool, woken: set[JobID]
) -> None:
    """After the backoff, exactly the woken jobs come back."""
    fail(backoff, A, B)
    backoff.wake(changes, preempting=preempting)
    clock[0] += 1.0
    assert backoff.skipped() == {A, B} - woken


def test_a_job_tried_and_placed_or_gone_leaves_the_set(backoff: Backoff, clock: list[float]) -> None:
    """A job tried (not skipped) that is no longer unschedulable leaves; a skipped one stays; a job gone
    from the snapshot leaves even while skipped."""
    fail(backoff, A, B)
    backoff.wake(Changes(jobs={A}), preempting=False)
    clock[0] += 1.0
    fail(backoff, present=(A, B))  # A tried and placed; B skipped
    assert set(backoff.waiting) == {B}
    fail(backoff, present=(A,))  # B deleted
    assert not backoff.waiting


def test_a_changed_configuration_wakes_every_job(backoff: Backoff, clock: list[float]) -> None:
    """A new volcano-scheduler.conf may place anything differently."""
    fail(backoff, A, B)
    backoff.wake_all()
    clock[0] += 1.0
    assert backoff.skipped() == frozenset()


# What the store notes -------------------------------------------------------------------------------


@pytest.fixture
def store() -> Store:
    """A store with one node, whose changes so far are taken."""
    created = Store(scheduler_name="py-volcano")
    reconcile(created, PODS, [], version=0, started=0.0)  # pods listed: each change is noted on its own
    created.apply_event(NODES, "ADDED", node("n1", rv=1))
    created.take_changes()
    return created


def queue(name: str, *, rv: int, weight: int = 1, **status: Any) -> dict[str, Any]:
    """A Queue manifest at resourceVersion `rv`."""
    return {"metadata": {"name": name, "resourceVersion": str(rv)}, "spec": {"weight": weight}, "status": status}


def test_a_pending_pod_added_notes_its_job_only(store: Store) -> None:
    """A new pending pod frees nothing and is no victim: only its own job may now be placed differently."""
    store.apply_event(PODS, "ADDED", pod("p", rv=2))
    changes = store.take_changes()
    assert (changes.jobs, changes.freed, changes.placed, changes.everything) == (
        {JobID("ns/podgroup-uid-p")},
        False,
        False,
        False,
    )


@pytest.mark.parametrize(
    ("after", "freed", "placed"),
    [
        pytest.param({"phase": "Succeeded"}, True, False, id="a-pod-finishing-frees"),
        pytest.param({"deletionTimestamp": "2026-01-01T00:00:00Z"}, True, False, id="a-pod-releasing-frees"),
        pytest.param({"node": "n1", "phase": "Pending"}, False, True, id="a-pod-bound-is-placed"),
    ],
)
def test_a_pod_change_notes_what_it_could_help(store: Store, after: dict[str, str], freed: bool, placed: bool) -> None:
    """Finishing and releasing free resources; binding places a possible victim."""
    store.apply_event(PODS, "ADDED", pod("p", rv=2, node="n1" if "node" not in after else "", phase="Running"))
    store.take_changes()
    node_name = after.pop("node", "n1")
    store.apply_event(PODS, "MODIFIED", pod("p", rv=3, node=node_name, **after))
    changes = store.take_changes()
    assert (changes.freed, changes.placed) == (freed, placed)


@pytest.mark.parametrize(
    ("seen", "decided", "freed"),
    [
        pytest.param("Inqueue", PodGroupPhase.RUNNING, True, id="inqueue-to-running-returns-the-reservation"),
        pytest.param("Inqueue", PodGroupPhase.PENDING, True, id="inqueue-to-pending-returns-the-reservation"),
        pytest.param("Pending", PodGroupPhase.INQUEUE, False, id="pending-to-inqueue-takes-room"),
    ],
)
def test_a_phase_our_cycle_moves_out_of_inqueue_frees(
    store: Store, seen: str, decided: PodGroupPhase, freed: bool
) -> None:
    """Enqueue reserves an Inqueue job's minResources in its queue; leaving Inqueue gives that room back."""
    store.apply_event(
        POD_GROUPS,
        "ADDED",
        {
            "metadata": {"name": "g", "namespace": "ns", "resourceVersion": "2"},
            "spec": {"minMember": 1, "queue": "default", "minResources": {"cpu": "2"}},
            "status": {"phase": seen},
        },
    )
    store.take_changes()
    store.record_phases({JobID("ns/g"): (decided, False)})
    assert store.take_changes().freed is freed


def test_a_deleted_pod_frees(store: Store) -> None:
    """Whatever it held (or asked for, in its queue's request) is free."""
    store.apply_event(PODS, "ADDED", pod("p", rv=2, node="n1", phase="Running"))
    store.take_changes()
    store.apply_event(PODS, "DELETED", pod("p", rv=3, node="n1", phase="Running"))
    assert store.take_changes().freed


def test_a_node_added_or_grown_frees_a_heartbeat_does_not(store: Store) -> None:
    """Only what a cycle reads of a node counts."""
    heartbeat = node("n1", rv=2)
    heartbeat["status"]["conditions"] = [{"type": "Ready", "status": "True", "lastHeartbeatTime": "now"}]
    store.apply_event(NODES, "MODIFIED", heartbeat)
    assert not store.take_changes().freed
    store.apply_event(NODES, "MODIFIED", node("n1", rv=3, cpu="8"))
    assert store.take_changes().freed


def test_a_queue_spec_change_wakes_all_our_own_status_write_does_not(store: Store) -> None:
    """The scheduler writes every Queue's status after a cycle: that must not wake every job."""
    store.apply_event(QUEUES, "ADDED", queue("q", rv=2))
    store.take_changes()
    store.apply_event(QUEUES, "MODIFIED", queue("q", rv=3, state="Open", running=4, allocated={"cpu": "2"}))
    assert not store.take_changes().everything
    store.apply_event(QUEUES, "MODIFIED", queue("q", rv=4, weight=3))
    assert store.take_changes().everything


def test_a_pod_group_change_notes_its_job(store: Store) -> None:
    """A PodGroup's own change concerns its job."""
    store.apply_event(POD_GROUPS, "ADDED", pod_group("g", rv=2))
    assert store.take_changes().jobs == {JobID("ns/g")}


def test_our_own_pod_group_status_write_does_not_note_its_job(store: Store) -> None:
    """The phase, conditions and explain annotation the scheduler writes after a cycle wake no job."""
    store.apply_event(POD_GROUPS, "ADDED", pod_group("g", rv=2))
    store.take_changes()
    written = pod_group("g", rv=3, phase="Inqueue")
    written["status"]["conditions"] = [{"type": "Unschedulable", "status": "True", "message": "0/1 nodes"}]
    written["metadata"]["annotations"] = {"scheduling.py-volcano.io/explain": "{}"}
    store.apply_event(POD_GROUPS, "MODIFIED", written)
    assert store.take_changes().jobs == set()
