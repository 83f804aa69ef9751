"""A running job settles (`api.Settled`) once a cycle under the configuration decided its status, or at
sight when no cycle needs to (`api.settled.at_sight`; the next cycle reports its status once): the next
snapshots leave it out of their jobs while its tasks stay on their nodes, the status writer and the
metrics keep what they had for it, and it comes back into the session when its pod changes."""

from __future__ import annotations

import copy
from collections.abc import Collection
from typing import cast

from py_volcano.api import ClusterInfo, CycleResult, JobID, ParsedPod, PodGroupPhase
from py_volcano.cache.client import ApiClient
from py_volcano.cache.status import StatusWriter
from py_volcano.cache.store import KINDS, Store
from py_volcano.framework import run_cycle
from py_volcano.metrics import Metrics
from py_volcano.registry import default_registry, load_conf
from tests.builders import node, pod, pod_group
from tests.unit.framework.test_backlog_sharing import fed

_KINDS = {kind.name: kind for kind in KINDS}
RUNNING = JobID("default/r")


def _queue_counts(result: CycleResult) -> dict[str, tuple[int, int, int, float]]:
    """Per Queue status: its Pending, Inqueue and Running PodGroups, and its allocated CPU."""
    return {
        name: (status.pending, status.inqueue, status.running, status.allocated.milli_cpu)
        for name, status in result.queue_statuses.items()
    }


def _pod_group_writes(writer: StatusWriter) -> list[str]:
    return [name for kind, name in writer._pending if kind == "PodGroup"]


def test_a_running_job_settles_at_sight_is_reported_by_its_first_cycle_and_comes_back_when_its_pod_changes() -> None:
    running = pod(name="r-0", group="r", cpu="2", node_name="n0", phase="Running")
    objects = [node(name="n0", cpu="8"), pod_group(name="r", phase="Running"), running, pod(name="p", cpu="1")]
    store = fed(objects)
    conf, registry = load_conf(None), default_registry()
    writer = StatusWriter(cast(ApiClient, object()), scheduler_name="py-volcano")
    metrics = Metrics()
    afresh = run_cycle(fed(objects).snapshot(), conf, registry)  # every job in the session

    first = store.snapshot(token=conf, settle=True)
    assert RUNNING not in first.jobs and list(first.settled.undecided) == [RUNNING]  # settled, no status yet
    assert [task.name for task in first.nodes["n0"].tasks.values()] == ["r-0"]
    decided = run_cycle(first, conf, registry)
    assert decided.pod_groups[RUNNING] == afresh.pod_groups[RUNNING]  # reported once, as a session decides it
    assert decided.pod_groups[RUNNING].phase is PodGroupPhase.RUNNING
    assert first.settled.entries[RUNNING].status is decided.pod_groups[RUNNING] and not first.settled.undecided
    assert _queue_counts(decided) == _queue_counts(afresh) == {"default": (0, 1, 1, 3000.0)}
    metrics.observe_cycle(decided, 0.01, first)
    writer.submit(decided)
    assert RUNNING in writer._groups
    writer._pending.clear()  # as if written

    built = first.settled.entries[RUNNING].job
    second = store.snapshot(token=conf, settle=True)  # the store's settled jobs: one object for every snapshot
    assert RUNNING not in second.jobs and second.settled.entries[RUNNING].job is built
    assert second.nodes["n0"].idle.milli_cpu == 6000  # its task still counts on its node
    result = run_cycle(second, conf, registry)
    assert RUNNING not in result.pod_groups and RUNNING in result.settled
    assert result.queue_statuses["default"].running == decided.queue_statuses["default"].running
    assert result.queues["default"].allocated.milli_cpu == decided.queues["default"].allocated.milli_cpu
    record = metrics._jobs[RUNNING]
    metrics.observe_cycle(result, 0.01, second)
    assert metrics._jobs[RUNNING] is record and record.share > 0  # kept, with its retries and times
    writer.submit(result)
    assert not _pod_group_writes(writer) and RUNNING in writer._groups  # its status stands

    labelled = copy.deepcopy(running)
    labelled["metadata"]["labels"] = {"changed": "yes"}
    store.apply_event(_KINDS["Pod"], "MODIFIED", labelled)
    third = store.snapshot(token=conf, settle=True)
    assert third.settled.entries[RUNNING].job is not built  # built again
    assert list(third.settled.undecided) == [RUNNING]
    back = run_cycle(third, conf, registry)
    assert back.pod_groups[RUNNING] == decided.pod_groups[RUNNING]
    writer.submit(back)
    assert RUNNING not in _pod_group_writes(writer)  # the same status as written: nothing to write


def test_a_job_settled_at_sight_waits_for_a_session_to_decide_its_status() -> None:
    """A snapshot whose cycle never ran (it failed) leaves the status undecided: the next session decides
    and reports it; a job that leaves the settled ones meanwhile is not decided."""
    gone = pod(name="g-0", cpu="1", node_name="n0", phase="Running")
    running = [pod_group(name="r", phase="Running"), pod(name="r-0", group="r", node_name="n0")]
    store = fed([node(name="n0", cpu="8"), *running, gone])
    conf, registry = load_conf(None), default_registry()
    first = store.snapshot(token=conf, settle=True)
    assert len(first.settled.undecided) == 2 and not first.jobs
    store.apply_event(_KINDS["Pod"], "DELETED", gone)
    second = store.snapshot(token=conf, settle=True)
    assert list(second.settled.undecided) == [RUNNING]
    result = run_cycle(second, conf, registry)
    assert list(result.pod_groups) == [RUNNING] and result.pod_groups[RUNNING].phase is PodGroupPhase.RUNNING
    assert not run_cycle(store.snapshot(token=conf, settle=True), conf, registry).pod_groups


def test_nothing_settles_under_another_configuration_or_beside_a_fractional_request() -> None:
    store = fed(
        [node(name="n0", cpu="8"), pod_group(name="r", phase="Running"), pod(name="r-0", group="r", node_name="n0")]
    )
    conf, registry = load_conf(None), default_registry()
    run_cycle(store.snapshot(token=conf, settle=True), conf, registry)
    assert store.snapshot(token=conf, settle=True).settled
    other = load_conf(None)
    assert not store.snapshot(token=other, settle=True).settled  # its status was decided under `conf`
    run_cycle(store.snapshot(token=other, settle=True), other, registry)
    assert store.snapshot(token=other, settle=True).settled
    store.apply_event(_KINDS["Pod"], "ADDED", pod(name="f", cpu="1500u"))  # 1.5 milli-CPU
    assert not store.snapshot(token=other, settle=True).settled


def test_a_cycle_result_without_settled_jobs_drops_their_records() -> None:
    writer = StatusWriter(cast(ApiClient, object()), scheduler_name="py-volcano")
    store = fed(
        [node(name="n0", cpu="8"), pod_group(name="r", phase="Running"), pod(name="r-0", group="r", node_name="n0")]
    )
    conf = load_conf(None)
    writer.submit(run_cycle(store.snapshot(token=conf), conf, default_registry()))
    assert RUNNING in writer._groups
    writer.submit(CycleResult())
    assert RUNNING not in writer._groups


def _record(store: Store, result: CycleResult) -> None:
    """Record the phases a cycle decided, as the runner does."""
    store.record_phases({job: (status.phase, status.shadow) for job, status in result.pod_groups.items()})


def test_a_placed_pod_without_a_podgroup_settles_once_a_cycle_decided_it_running() -> None:
    """Recording the Running phase a cycle decided does not build the one-pod group again: the next
    snapshot takes it with that phase and it settles there, not a cycle later (`BuiltJob.adopt`)."""
    new = pod(name="a", cpu="1")
    store = fed([node(name="n0", cpu="8"), new])
    conf, registry = load_conf(None), default_registry()
    placed = run_cycle(store.snapshot(token=conf, settle=True), conf, registry)
    job = next(iter(placed.pod_groups))
    assert placed.binds and placed.pod_groups[job].phase is PodGroupPhase.INQUEUE  # bound tasks count next cycle
    _record(store, placed)
    bound = copy.deepcopy(new)
    bound["spec"]["nodeName"], bound["status"] = "n0", {"phase": "Running"}
    store.apply_event(_KINDS["Pod"], "MODIFIED", bound)

    second = store.snapshot(token=conf, settle=True)
    running = run_cycle(second, conf, registry)
    assert running.pod_groups[job].phase is PodGroupPhase.RUNNING
    _record(store, running)
    assert job not in store.dirty

    third = store.snapshot(token=conf, settle=True)
    assert job not in third.jobs and third.settled.entries[job].job is second.jobs[job]
    assert second.jobs[job].phase is PodGroupPhase.RUNNING
    assert second.jobs[job].pod_group.phase is PodGroupPhase.RUNNING


def test_the_metrics_drop_the_record_of_a_settled_job_whose_pod_goes() -> None:
    """The metrics follow the settled jobs by their changes (`Settled.changes`): a job that leaves them
    because its only pod was deleted loses its record, as it would if every record were compared."""
    running = pod(name="a", cpu="1", node_name="n0", phase="Running")
    store = fed([node(name="n0", cpu="8"), running, pod(name="b", cpu="1", node_name="n0", phase="Running")])
    conf, registry, metrics = load_conf(None), default_registry(), Metrics()
    for _ in range(3):  # built, decided Running, settled
        snapshot = store.snapshot(token=conf, settle=True)
        result = run_cycle(snapshot, conf, registry)
        metrics.observe_cycle(result, 0.01, snapshot)
        _record(store, result)
    assert len(snapshot.settled) == 2 and not snapshot.jobs and len(metrics._jobs) == 2
    store.apply_event(_KINDS["Pod"], "DELETED", running)
    snapshot = store.snapshot(token=conf, settle=True)
    metrics.observe_cycle(run_cycle(snapshot, conf, registry), 0.01, snapshot)
    assert len(snapshot.settled) == 1 and len(metrics._jobs) == 1
    assert next(iter(metrics._jobs.values())).name == next(iter(snapshot.settled.entries.values())).job.name


def test_a_settled_job_back_for_a_change_it_does_not_read_is_carried_again_unread() -> None:
    """An eviction of a settled job's pod, refused before any snapshot saw it, brings the job back for one
    snapshot, which takes the very entry it had and settles it again; the snapshot after carries it,
    its pod not read (`Settled.carry_change` counts it among the jobs that entered the carried ones)."""
    running = pod(name="r-0", group="r", cpu="1", node_name="n0")
    others = [pod_group(name="b", phase="Running"), pod(name="b-0", group="b", cpu="1", node_name="n0")]
    store = fed([node(name="n0", cpu="8"), pod_group(name="r", phase="Running"), running, *others])
    conf, registry = load_conf(None), default_registry()

    def cycle() -> ClusterInfo:
        snapshot = store.snapshot(token=conf, settle=True)
        _record(store, run_cycle(snapshot, conf, registry))
        return snapshot

    for _ in range(4):  # built, decided Running, settled, carried
        cycle()
    entry = store.settled.entries[RUNNING]
    store.mark_releasing("default/r-0")
    store.eviction_settled("default/r-0", ok=False)
    back = cycle()
    assert RUNNING not in back.jobs and back.settled.entries[RUNNING] is entry  # taken and settled again
    read: list[list[str]] = []
    pods = store._pods

    def reading(carried: Collection[JobID]) -> list[ParsedPod]:
        listed = pods(carried)
        read.append([parsed.task.name for parsed in listed])
        return listed

    store._pods = reading  # type: ignore[method-assign]
    assert len(cycle().settled) == 2 and read == [[]]


def test_a_job_another_scheduler_has_pods_in_does_not_settle_at_sight() -> None:
    """Its other pods are no tasks of it: a change to them would not bring it back."""
    store = fed(
        [
            node(name="n0", cpu="8"),
            pod_group(name="r", phase="Running"),
            pod(name="r-0", group="r", node_name="n0"),
            pod(name="r-1", group="r", node_name="n0", scheduler="default-scheduler"),
        ]
    )
    snapshot = store.snapshot(token=load_conf(None), settle=True)
    assert RUNNING in snapshot.jobs and not snapshot.settled


def test_a_job_waiting_on_its_bind_settles_inqueue_once_a_cycle_decided_it() -> None:
    """A bind in flight (Binding) holds its node: the Inqueue one-pod group settles the snapshot after the
    cycle that saw it so, not only once the bind is seen."""
    store = fed([node(name="n0", cpu="8"), pod(name="a", cpu="1")])
    conf, registry = load_conf(None), default_registry()
    placed = run_cycle(store.snapshot(token=conf, settle=True), conf, registry)
    [(task, node_name)] = placed.binds
    _record(store, placed)
    store.assume(task.key, node_name)
    waiting = store.snapshot(token=conf, settle=True)
    [job] = waiting.jobs.values()
    decided = run_cycle(waiting, conf, registry)
    assert decided.pod_groups[job.uid].phase is PodGroupPhase.INQUEUE
    _record(store, decided)
    assert job.uid in store.snapshot(token=conf, settle=True).settled.entries
