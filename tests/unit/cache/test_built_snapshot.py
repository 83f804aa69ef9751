"""A store hands a snapshot the jobs and nodes it built for the last one while nothing changed them
(`BuiltJobs`, `BuiltNodes`), and a job a cycle left unchanged keeps its status: the same decisions,
statuses, job and node state as a snapshot built afresh, over cycles whose binds come back or not and
pods that go away between them."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any, cast

from hypothesis import HealthCheck, given, settings
from hypothesis import event as note_event
from hypothesis import strategies as st

from py_volcano.api import (
    BuiltJob,
    ClusterInfo,
    CycleResult,
    JobID,
    JobInfo,
    NodeInfo,
    PodGroupPhase,
    QueueFigures,
    Resource,
)
from py_volcano.cache.store import KINDS, Store
from py_volcano.framework import PluginMemory, SchedulerConf, run_cycle, shares_backlog
from py_volcano.registry import default_registry
from tests.builders import node, pod
from tests.unit.framework.test_backoff_equivalence import CONFS, clusters

_KINDS = {kind.name: kind for kind in KINDS}


def _feed(store: Store, objects: list[dict[str, Any]]) -> None:
    for kind in KINDS:
        for obj in objects:
            if obj["kind"] == kind.name:
                store.apply_event(kind, "ADDED", obj)


def _node_state(node_info: NodeInfo) -> tuple[Any, ...]:
    tasks = [(uid, task.status, task.job, task.node_name) for uid, task in node_info.tasks.items()]
    resources = (node_info.idle, node_info.used, node_info.releasing, node_info.pipelined)
    pods = (node_info.used_pods, node_info.releasing_pods, node_info.pipelined_pods)
    return (node_info.name, tuple(repr(r) for r in resources), pods, tasks)


def _job_state(job: JobInfo) -> tuple[Any, ...]:
    tasks = [(uid, task.status, task.node_name, task.job) for uid, task in job.tasks.items()]
    index = [(status, list(bucket)) for status, bucket in job.task_status_index.items()]
    phases = (job.phase, job.pod_group.phase)
    fields = (*phases, job.priority, job.queue, job.min_available, job.job_fit_error, dict(job.fit_errors))
    return (job.uid, fields, repr(job.allocated), repr(job.total_request), tasks, index)


def _exact(resource: Resource | None) -> tuple[Any, ...] | None:
    if resource is None:
        return None
    return resource.milli_cpu, resource.memory, sorted(resource.scalars.items())


def _exact_figures(figures: QueueFigures) -> tuple[Any, ...]:
    resources = (figures.allocated, figures.request, figures.deserved, figures.real_capability, figures.inqueue)
    return (*(_exact(resource) for resource in resources), figures.share, figures.overused)


def _decisions(result: CycleResult) -> tuple[Any, ...]:
    """What a cycle decided; a settled job's status is the one decided before, which stands."""
    binds = sorted((task.key, name) for task, name in result.binds)
    evictions = sorted((task.key, name) for task, name in result.evictions)
    queues = {name: _exact_figures(figures) for name, figures in result.queues.items()}
    groups = {**result.pod_groups, **{uid: cast(BuiltJob, entry).status for uid, entry in result.settled.items()}}
    statuses = {
        name: (status.running, status.inqueue, status.pending) for name, status in result.queue_statuses.items()
    }
    return binds, evictions, sorted(result.pipelined.items()), groups, result.pod_waits, queues, statuses


def cycles_decide_alike(snapshots: list[ClusterInfo], conf: SchedulerConf, memory: PluginMemory) -> list[CycleResult]:
    """Run a cycle over the kept store's snapshot (with `memory`) and one over the fresh store's; assert
    they decide alike and return both results."""
    results = [
        run_cycle(snapshots[0], conf, default_registry(), memory=memory),
        run_cycle(snapshots[1], conf, default_registry()),
    ]
    assert _decisions(results[0]) == _decisions(results[1])
    return results


def echoes(result: CycleResult, pods: dict[str, dict[str, Any]], data: Any) -> list[tuple[str, dict[str, Any]]]:
    """The watch echoes of the cycle's binds that the test lets come back: the pod bound, and Running or
    not yet (then, later, the echo of a bound pod that starts)."""
    changes: list[tuple[str, dict[str, Any]]] = []
    for task, node_name in result.binds:
        if data.draw(st.booleans(), label=f"echo of {task.name}"):
            bound = copy.deepcopy(pods[task.name])
            bound["spec"]["nodeName"] = node_name
            bound["status"] = {"phase": data.draw(st.sampled_from(["Running", "Pending"]), label="its phase")}
            changes.append(("MODIFIED", bound))
    waiting = sorted(name for name, obj in pods.items() if obj["spec"].get("nodeName") and _phase(obj) == "Pending")
    starting = st.lists(st.sampled_from(waiting), max_size=2, unique=True) if waiting else st.just([])
    for name in data.draw(starting, label="started"):
        started = copy.deepcopy(pods[name])
        started["status"] = {"phase": "Running"}
        changes.append(("MODIFIED", started))
    return changes


def record_phases(kept: Store, result: CycleResult, recorded: dict[JobID, tuple[PodGroupPhase, bool]]) -> None:
    """Record in `kept` the PodGroup phases its cycle decided, as the runner does, and in `recorded`
    every phase recorded so far, for the stores built afresh (`Store.record_phases`)."""
    decided = {job: (status.phase, status.shadow) for job, status in result.pod_groups.items()}
    kept.record_phases(decided)
    recorded.update(decided)


def assume_binds(kept: Store, result: CycleResult, assumed: dict[str, str]) -> None:
    """Hold each bind of the cycle in `kept` as the binder does until its echo comes, and note it in
    `assumed` (pod key -> node), which keeps the binds still in flight for the stores built afresh."""
    for task, node_name in result.binds:
        kept.assume(task.key, node_name)
        assumed[task.key] = node_name


def in_flight(kept: Store, assumed: dict[str, str]) -> None:
    """Forget in `assumed` the binds whose echo `kept` has seen (or whose pod went)."""
    for key in [key for key in assumed if kept.bind_observed(key)]:
        del assumed[key]


def _phase(obj: dict[str, Any]) -> str:
    return str((obj.get("status") or {}).get("phase") or "")


def apply_changes(
    store: Store, changes: list[tuple[str, str, dict[str, Any]]], tables: dict[str, dict[str, Any]], releasing: set[str]
) -> None:
    """Feed (kind, event, object) changes to `store` as watch events, and follow them in `tables` (each
    kind's objects by name) and in the `releasing` pod keys (a deleted pod releases nothing any more)."""
    for kind, event, obj in changes:
        store.apply_event(_KINDS[kind], event, obj)
        name = obj["metadata"]["name"]
        if event == "DELETED":
            tables[kind].pop(name, None)
            if kind == "Pod":
                releasing.discard(f"default/{name}")
        else:
            tables[kind][name] = obj


def maybe_evict(store: Store, pods: dict[str, dict[str, Any]], releasing: set[str], data: Any) -> None:
    """Sometimes mark one placed pod releasing, as an eviction does, in `store` and in `releasing`."""
    placed = sorted(name for name, obj in pods.items() if obj["spec"].get("nodeName"))
    if placed and data.draw(st.integers(0, 3), label="evicted") == 0:
        key = f"default/{data.draw(st.sampled_from(placed), label='releasing')}"
        store.mark_releasing(key)
        releasing.add(key)


def counting_store(objects: list[dict[str, Any]]) -> tuple[Store, list[int]]:
    """A store fed `objects`, and the number of settled jobs each of its snapshots carries."""
    store = Store(scheduler_name="py-volcano")
    carried: list[int] = []
    carry = store._carried

    def noted(*args: Any) -> dict[Any, Any]:
        jobs = carry(*args)
        carried.append(len(jobs))
        return jobs

    store._carried = noted  # type: ignore[method-assign,assignment]
    _feed(store, objects)
    return store, carried


def _all_jobs(snapshot: ClusterInfo) -> list[tuple[Any, ...]]:
    """The state of every job of the snapshot, settled ones included, by id."""
    jobs = [*snapshot.jobs.values(), *(entry.job for entry in snapshot.settled.entries.values())]
    return sorted(_job_state(job) for job in jobs)


def test_an_unchanged_node_is_the_one_built_before_and_a_changed_one_is_built_again() -> None:
    store = Store(scheduler_name="py-volcano")
    _feed(store, [node(name="n0", cpu="4"), node(name="n1", cpu="4"), pod(name="a", node_name="n1")])
    first = store.snapshot()
    second = store.snapshot()
    assert second.nodes["n0"] is first.nodes["n0"] and second.nodes["n1"] is first.nodes["n1"]
    second.nodes["n0"].add_task(first.nodes["n1"].tasks[next(iter(first.nodes["n1"].tasks))])  # a session's change
    store.apply_event(_KINDS["Pod"], "DELETED", pod(name="a", node_name="n1"))
    third = store.snapshot()
    assert third.nodes["n0"] is not second.nodes["n0"] and not third.nodes["n0"].tasks
    assert third.nodes["n1"] is not second.nodes["n1"] and not third.nodes["n1"].tasks


def test_a_node_is_looked_at_again_when_it_held_a_pod_of_no_job_or_a_job_not_taken() -> None:
    """Pods of taken jobs are not placed again; a node that held another scheduler's pod, or a pod of a
    job the next snapshot builds again, still loses that pod when it goes."""
    store = Store(scheduler_name="py-volcano")
    ours, foreign = pod(name="a", node_name="n0"), pod(name="f", node_name="n0", scheduler="other")
    rebuilt = pod(name="b", node_name="n1")
    _feed(store, [node(name="n0", cpu="8"), node(name="n1", cpu="8"), ours, foreign, rebuilt])
    store.snapshot()
    second = store.snapshot()
    assert second.nodes["n0"].tasks.keys() == store.snapshot().nodes["n0"].tasks.keys()
    store.apply_event(_KINDS["Pod"], "DELETED", foreign)
    store.apply_event(_KINDS["Pod"], "DELETED", rebuilt)
    third = store.snapshot()
    assert [task.name for task in third.nodes["n0"].tasks.values()] == ["a"]
    assert not third.nodes["n1"].tasks


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(objects=clusters(), conf=st.sampled_from(sorted(CONFS)), data=st.data())
def test_jobs_and_nodes_handed_on_decide_as_built_afresh(objects: list[dict[str, Any]], conf: str, data: Any) -> None:
    """Three cycles over a store and plugin memory kept between them and over a fresh store and memory
    fed the same events: the same decisions, queue figures and node state each cycle, whether each
    bind's echo came back and some pods went away. The kept store leaves settled jobs out of its
    snapshots where the configuration allows (`api.Settled`)."""
    sharing = shares_backlog(CONFS[conf])
    settled = 0
    kept, carried = counting_store(objects)
    memory = PluginMemory(datetime.now(UTC))
    events: list[tuple[str, dict[str, Any]]] = [("ADDED", obj) for obj in objects]
    pods = {obj["metadata"]["name"]: obj for obj in objects if obj["kind"] == "Pod"}
    recorded: dict[JobID, tuple[PodGroupPhase, bool]] = {}
    assumed: dict[str, str] = {}
    for _ in range(3):
        fresh = Store(scheduler_name="py-volcano")
        for kind in KINDS:
            for event, obj in events:
                if obj["kind"] == kind.name:
                    fresh.apply_event(kind, event, obj)
        fresh.record_phases(recorded)
        for key, node_name in assumed.items():
            fresh.assume(key, node_name)
        snapshots: list[ClusterInfo] = [kept.snapshot(token=CONFS[conf], settle=sharing), fresh.snapshot()]
        settled += len(snapshots[0].settled)
        before = [[_node_state(n) for n in s.nodes.values()] for s in snapshots]
        assert before[0] == before[1]
        assert _all_jobs(snapshots[0]) == _all_jobs(snapshots[1])
        order = list(snapshots[1].jobs)
        assert list(snapshots[0].jobs) == [uid for uid in order if uid not in snapshots[0].settled.entries]
        results = cycles_decide_alike(snapshots, CONFS[conf], memory)
        record_phases(kept, results[0], recorded)
        assume_binds(kept, results[0], assumed)
        changes = echoes(results[0], pods, data)
        for task, _ in results[0].evictions:
            changes.append(("DELETED", pods[task.name]))
        if pods:
            gone = data.draw(st.lists(st.sampled_from(sorted(pods)), max_size=2, unique=True), label="gone")
            changes.extend(("DELETED", pods[name]) for name in gone)
        for event, obj in changes:
            kept.apply_event(_KINDS["Pod"], event, obj)
            if event == "DELETED":
                pods.pop(obj["metadata"]["name"], None)
            else:
                pods[obj["metadata"]["name"]] = obj
        in_flight(kept, assumed)
        events = [(e, o) for e, o in events if o["kind"] != "Pod"] + [("ADDED", o) for o in pods.values()]
    note_event(f"jobs settled: {bool(settled)}, carried: {bool(sum(carried))}")


def test_an_unchanged_job_is_the_one_built_before_with_its_status_and_a_changed_one_is_built_again() -> None:
    store = Store(scheduler_name="py-volcano")
    _feed(store, [node(name="n0", cpu="4"), pod(name="a", node_name="n0"), pod(name="b", cpu="2")])
    conf = CONFS["default"]
    first = store.snapshot()
    result = run_cycle(first, conf, default_registry())
    [(bound, _)] = result.binds
    assert bound.job is not None
    running = next(key for key, job in first.jobs.items() if "b" not in {t.name for t in job.tasks.values()})
    second = store.snapshot()
    assert second.jobs[running] is first.jobs[running]
    assert second.jobs[bound.job] is not first.jobs[bound.job]  # the cycle allocated its task
    again = run_cycle(second, conf, default_registry())
    assert again.pod_groups[running] is result.pod_groups[running]
    third = store.snapshot()
    third.jobs[running].job_fit_error = "a session's note"
    assert store.snapshot().jobs[running] is not third.jobs[running]
