"""`python -m bench.large_cluster [--nodes 5000] [--bound 150000] [--new 100] [--json]`: the cycle that
places a few new pods in a large, busy cluster, in memory.

The runner's path without an API server, as bench/backlog_cycle.py drives it: a `Store` fed by
`apply_event` with `--nodes` nodes (32 CPU, 128 GiB, 110 pods) and `--bound` pods already bound and
Running, spread evenly over the nodes (30 pods and 14 CPU of 32 each), as a live cluster looks once the
PodGroup controller has grouped everything: 60% Deployment pods (ReplicaSets of 1-10 replicas, one
PodGroup of minMember 1 each), 10% bare pods (a PodGroup each), 30% gangs of 8-32 pods over four
weighted queues. `--ungrouped` leaves the Deployment and bare pods without PodGroups (one-pod jobs, as
under `--no-podgroup-controller`). The collector is frozen once the store is filled (the runner's
`wait_synced`) and paused over each cycle (`cache.collector_paused`).

A first cycle over the whole cluster (the warm-up after a restart) places nothing; then `--cycles`
times (default 5), `--new` pending one-pod jobs of 100m CPU are created and a cycle places them, and
their binds' watch echoes are fed back before the next one. Each cycle is timed as the runner pays it:
`Backoff`, `Store.snapshot`, `run_cycle`, `Store.record_phases`, `StatusWriter.submit` (queued only),
`Metrics.observe_cycle`, and the release of the snapshot. Printed: wall and CPU seconds of each part,
the median wall total of the measured cycles (`large_cluster_cycle_s`: snapshot + cycle + metrics; the
first two are one-offs: the one in which the jobs the warm-up decided settle, and the first to carry
them, which looks at every pod and PodGroup once more), the first of them alone
(`large_cluster_settling_cycle_s`) and
the process's peak RSS (`large_cluster_rss_mib`, VmHWM). Then the fast path (`actions.arrivals`): one
more cycle keeps its session, and `--new` pods arrive one at a time, each taken from the store and placed
in that session as the runner does between cycles (`large_cluster_fast_path_s`: all of them,
`large_cluster_fast_path_pod_ms`: the median pod). `--profile FILE` records the measured cycles
under cProfile (their times are then inflated) and prints the top functions by own and cumulative time.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import pstats
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from bench.cluster import load_average, memory_mib
from py_volcano.actions.arrivals import place_arrivals
from py_volcano.api import CycleResult, JobID, PodGroupPhase
from py_volcano.cache import ApiClient, Backoff, StatusWriter
from py_volcano.cache.store import KINDS, Store
from py_volcano.framework import (
    PluginMemory,
    Registry,
    SchedulerConf,
    Session,
    end_session,
    run_cycle,
    shares_backlog,
)
from py_volcano.logs import configure_logging
from py_volcano.metrics import Metrics
from py_volcano.registry import default_registry, load_conf

__all__ = ["main", "measure"]

SCHEDULER = "py-volcano"
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
#: Requests of the bound pods, in turn per node so every node gets the same mix (~14 CPU, 28 GiB at 30 pods).
_SHAPES = (("100m", "256Mi"), ("250m", "512Mi"), ("500m", "1Gi"), ("1", "2Gi"))
_QUEUES = {"default": 1, "q1": 1, "q2": 2, "q3": 3, "q4": 4}
#: Share of the bound pods per kind of workload.
_MIX = {"deployment": 0.6, "bare": 0.1, "gang": 0.3}
_BOUND_AT = "2026-01-01T00:00:00Z"
_NEW_AT = "2026-01-02T00:00:00Z"
#: The parts of a cycle timed, in the runner's order.
PARTS = ("backoff", "snapshot", "cycle", "phases", "status", "metrics", "release")


def _node(index: int) -> dict[str, Any]:
    resources = {"cpu": "32", "memory": "128Gi", "pods": "110"}
    return {
        "kind": "Node",
        "metadata": {"name": f"n-{index:05d}", "uid": f"node-{index}", "labels": {"zone": f"z{index % 4}"}},
        "spec": {},
        "status": {
            "allocatable": resources,
            "capacity": resources,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _pod(
    name: str,
    namespace: str,
    *,
    cpu: str,
    memory: str,
    node: str = "",
    group: str = "",
    owner: tuple[str, str] | None = None,
    created: str = _BOUND_AT,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": f"{namespace}-{name}",
        "creationTimestamp": created,
    }
    if group:
        metadata["annotations"] = {GROUP_ANNOTATION: group}
    if owner is not None:
        kind, uid = owner
        metadata["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": kind, "name": uid, "uid": uid, "controller": True}
        ]
    spec: dict[str, Any] = {
        "schedulerName": SCHEDULER,
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
    }
    status: dict[str, Any] = {"phase": "Pending"}
    if node:
        spec["nodeName"] = node
        status = {"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"}]}
    return {"kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


def _pod_group(name: str, namespace: str, *, members: int, queue: str, running: int) -> dict[str, Any]:
    return {
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"pg-{namespace}-{name}",
            "creationTimestamp": _BOUND_AT,
        },
        "spec": {"minMember": members, "queue": queue},
        "status": {"phase": "Running", "running": running},
    }


def cluster_objects(nodes: int, bound: int, *, ungrouped: bool) -> Iterator[dict[str, Any]]:
    """Yield the cluster's objects: queues, nodes, then the bound pods by workload with their PodGroups."""
    for name, weight in _QUEUES.items():
        yield {"kind": "Queue", "metadata": {"name": name, "uid": f"queue-{name}"}, "spec": {"weight": weight}}
    for index in range(nodes):
        yield _node(index)
    placed = 0

    def bound_pod(name: str, namespace: str, **links: Any) -> dict[str, Any]:
        nonlocal placed
        cpu, memory = _SHAPES[(placed // nodes) % len(_SHAPES)]
        pod = _pod(name, namespace, cpu=cpu, memory=memory, node=f"n-{placed % nodes:05d}", **links)
        placed += 1
        return pod

    made = dict.fromkeys(_MIX, 0)  # pods per kind of workload so far; the one furthest below its share goes next
    while placed < bound:
        kind = min(_MIX, key=lambda name: made[name] - _MIX[name] * placed)
        number, left = sum(made.values()), bound - placed
        if kind == "deployment":  # a ReplicaSet of 1-10 replicas, grouped by the controller (minMember 1)
            size, uid = min(1 + number % 10, left), f"rs-{number:06d}"
            group = "" if ungrouped else f"podgroup-{uid}"
            if group:
                yield _pod_group(group, "apps", members=1, queue="default", running=size)
            for replica in range(size):
                yield bound_pod(f"{uid}-{replica}", "apps", group=group, owner=("ReplicaSet", uid))
        elif kind == "bare":  # a pod of no owner, with the PodGroup the controller makes for it
            size, name = 1, f"bare-{number:06d}"
            group = "" if ungrouped else f"podgroup-{name}"
            if group:
                yield _pod_group(group, "bare", members=1, queue="default", running=1)
            yield bound_pod(name, "bare", group=group)
        else:  # a gang of 8-32 pods
            size, name = min(8 + number % 25, left), f"gang-{number:06d}"
            yield _pod_group(name, "batch", members=size, queue=f"q{1 + number % 4}", running=size)
            for member in range(size):
                yield bound_pod(f"{name}-{member}", "batch", group=name)
        made[kind] += size


class _Clock:
    """Wall and CPU seconds of each part of one cycle."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}

    def part(self, name: str, run: Callable[[], Any]) -> Any:
        wall, cpu = time.perf_counter(), time.process_time()
        value = run()
        self.wall[name] = time.perf_counter() - wall
        self.cpu[name] = time.process_time() - cpu
        return value


def measure(
    *, nodes: int, bound: int, new: int, cycles: int, ungrouped: bool = False, profile: Path | None = None
) -> dict[str, Any]:
    """Fill a store, run the warm-up cycle and `cycles` cycles placing `new` pods each; return the figures."""
    kinds = {kind.name: kind for kind in KINDS}
    store, version = Store(scheduler_name=SCHEDULER), 0

    def put(obj: dict[str, Any], event: str = "ADDED") -> None:
        nonlocal version
        version += 1
        obj["metadata"]["resourceVersion"] = str(version)
        store.apply_event(kinds[obj["kind"]], event, obj)

    began = time.perf_counter()
    for obj in cluster_objects(nodes, bound, ungrouped=ungrouped):
        put(obj)
    fill_s = time.perf_counter() - began
    gc.collect()
    gc.freeze()  # as the runner's `wait_synced`: the listing lives long, out of every collection
    conf, registry, metrics = load_conf(None), default_registry(), Metrics()
    backoff = Backoff(initial=1.0, maximum=10.0, flush_after=300.0, clock=time.monotonic)
    memory = PluginMemory(datetime.now().astimezone())
    status = StatusWriter(cast(ApiClient, None), scheduler_name=SCHEDULER)  # submit only queues; nothing is sent
    profiler = cProfile.Profile() if profile is not None else None
    rows: list[dict[str, Any]] = []
    for number in range(cycles + 1):
        for index in range(new if number else 0):
            put(_pod(f"new-{number}-{index}", "stream", cpu="100m", memory="128Mi", created=_NEW_AT))
        measured = profiler if profiler is not None and number else nullcontext()
        clock, result, jobs = _cycle(store, backoff, conf, registry, metrics, memory, status, number, measured)
        for task, node in result.binds:  # the binds' watch echoes, before the next cycle
            put(_pod(task.name, task.namespace, cpu="100m", memory="128Mi", node=node, created=_NEW_AT), "MODIFIED")
        total = ("snapshot", "cycle", "metrics")
        rows.append(
            {
                "jobs": jobs,
                "binds": len(result.binds),
                "wall_s": {part: round(clock.wall[part], 4) for part in PARTS},
                "cpu_s": {part: round(clock.cpu[part], 4) for part in PARTS},
                "total_s": round(sum(clock.wall[part] for part in total), 4),
                "total_cpu_s": round(sum(clock.cpu[part] for part in total), 4),
                "all_parts_s": round(sum(clock.wall.values()), 4),
                "actions_s": {name: round(s, 4) for name, s in result.action_durations.items()},
            }
        )
    if profiler is not None and profile is not None:
        profiler.dump_stats(profile)
    arrivals = [_pod(f"fast-{i}", "stream", cpu="100m", memory="128Mi", created=_NEW_AT) for i in range(new)]
    fast = _fast_path(store, conf, registry, memory, arrivals, put)
    steady = rows[1:]
    report: dict[str, Any] = {
        "nodes": nodes,
        "bound_pods": bound,
        "new_pods": new,
        "ungrouped": ungrouped,
        "records": store.counts(),
        "fill_s": round(fill_s, 1),
        "cycles": rows,
        "large_cluster_cycle_s": statistics.median(row["total_s"] for row in steady) if steady else None,
        "large_cluster_cycle_cpu_s": statistics.median(row["total_cpu_s"] for row in steady) if steady else None,
        "large_cluster_settling_cycle_s": steady[0]["total_s"] if steady else None,
        "large_cluster_rss_mib": memory_mib(os.getpid()).get("VmHWM"),
        "large_cluster_fast_path_s": round(sum(fast), 4),
        "large_cluster_fast_path_pod_ms": round(statistics.median(fast) * 1000, 3) if fast else None,
        "load_average": load_average(),
        "profiled": profile is not None,
    }
    return report


def _cycle(
    store: Store,
    backoff: Backoff,
    conf: SchedulerConf,
    registry: Registry,
    metrics: Metrics,
    memory: PluginMemory,
    status: StatusWriter,
    number: int,
    profiler: AbstractContextManager[Any],
) -> tuple[_Clock, CycleResult, int]:
    """Run one cycle as `Runner.cycle` does, timing each part."""
    clock = _Clock()
    with profiler:

        def backed_off() -> frozenset[JobID]:
            backoff.wake(store.take_changes(), preempting=bool({"preempt", "reclaim"} & set(conf.actions)))
            return backoff.skipped()

        skip: frozenset[JobID] = clock.part("backoff", backed_off)
        gc.disable()
        sharing = shares_backlog(conf)
        shared = skip if sharing else frozenset()
        snapshot = clock.part("snapshot", lambda: store.snapshot(backlog=shared, token=conf, settle=sharing))
        jobs = len(snapshot.jobs) + len(snapshot.settled)
        now = datetime.now().astimezone()
        result: CycleResult = clock.part(
            "cycle",
            lambda: run_cycle(snapshot, conf, registry, cycle=number, now=now, memory=memory, skip=skip),
        )

        def phases() -> None:
            backoff.record(result.unschedulable_jobs, result.pod_groups.keys())
            store.record_phases(_phases(result))

        clock.part("phases", phases)
        clock.part("status", lambda: status.submit(result))
        clock.part("metrics", lambda: metrics.observe_cycle(result, clock.wall["cycle"], snapshot))

        def release() -> None:
            nonlocal snapshot
            del snapshot  # freed by reference counting, before the collector resumes

        clock.part("release", release)
        gc.enable()
    return clock, result, jobs


def _fast_path(
    store: Store,
    conf: SchedulerConf,
    registry: Registry,
    memory: PluginMemory,
    arrivals: list[dict[str, Any]],
    put: Callable[[dict[str, Any]], None],
) -> list[float]:
    """A cycle that keeps its session, then each of `arrivals` put in the store and placed in that session
    by the fast path, as `Runner._place_arrivals` does; return the seconds of each placement."""
    kept: list[Session] = []
    gc.disable()
    snapshot = store.snapshot(token=conf, settle=shares_backlog(conf))
    run_cycle(snapshot, conf, registry, memory=memory, keep=kept.append)
    del snapshot
    seconds: list[float] = []
    for obj in arrivals:
        put(obj)
        began = time.perf_counter()
        jobs, _ = store.take_arrivals()
        place_arrivals(kept[0], jobs)
        seconds.append(time.perf_counter() - began)
    end_session(kept[0])
    gc.enable()
    return seconds


def _phases(result: CycleResult) -> dict[JobID, tuple[PodGroupPhase, bool]]:
    return {job: (group.phase, group.shadow) for job, group in result.pod_groups.items()}


def print_report(report: dict[str, Any]) -> None:
    """Print one line per cycle and the headline figures."""
    print(
        f"{report['nodes']} nodes, {report['bound_pods']} bound pods ({report['records']}), "
        f"filled in {report['fill_s']} s; load average {report['load_average']}"
    )
    for number, row in enumerate(report["cycles"]):
        parts = ", ".join(f"{part} {row['wall_s'][part]}" for part in PARTS)
        print(
            f"cycle {number}{' (warm-up)' if not number else ''}: {row['jobs']} jobs, {row['binds']} binds; "
            f"wall s: {parts}; snapshot+cycle+metrics {row['total_s']} s wall, {row['total_cpu_s']} s CPU"
        )
    print(
        f"large_cluster_cycle_s {report['large_cluster_cycle_s']} (CPU {report['large_cluster_cycle_cpu_s']}), "
        f"large_cluster_rss_mib {report['large_cluster_rss_mib']}; the fast path: {report['new_pods']} pods "
        f"{report['large_cluster_fast_path_s']} s, {report['large_cluster_fast_path_pod_ms']} ms a pod"
        + ("  (profiled: times inflated)" if report["profiled"] else "")
    )


def print_profile(path: Path, top: int, cycles: int) -> None:
    """Print the top functions of a cProfile recording by own and by cumulative time, seconds per cycle."""
    root = f"{Path(__file__).resolve().parent.parent}/"
    stats: dict[tuple[str, int, str], tuple[int, int, float, float, Any]] = pstats.Stats(str(path)).stats  # type: ignore[attr-defined]
    for column, title in ((2, "own"), (3, "cumulative")):
        print(f"top {top} by {title} time, seconds per measured cycle (of {cycles}):")
        print(f"{'own s':>8} {'cum s':>8} {'calls':>9}  function")
        ranked = sorted(stats.items(), key=lambda item: item[1][column], reverse=True)[:top]
        for (file, line, function), (_, calls, own, cumulative, _) in ranked:
            where = f"{file.removeprefix(root)}:{line}({function})" if line else function
            print(f"{own / cycles:>8.4f} {cumulative / cycles:>8.4f} {calls // cycles:>9}  {where}")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse the arguments, run, print the figures (and the JSON with --json)."""
    parser = argparse.ArgumentParser(prog="python -m bench.large_cluster", description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--bound", type=int, default=150_000, help="pods already bound and Running")
    parser.add_argument("--new", type=int, default=100, help="pending pods created before each measured cycle")
    parser.add_argument("--cycles", type=int, default=5, help="measured cycles after the warm-up")
    parser.add_argument("--ungrouped", action="store_true", help="Deployment and bare pods without PodGroups")
    parser.add_argument("--profile", type=Path, help="record the measured cycles under cProfile here")
    parser.add_argument("--top", type=int, default=30, help="functions printed from the profile")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    configure_logging("warning", "console")
    report = measure(
        nodes=args.nodes,
        bound=args.bound,
        new=args.new,
        cycles=args.cycles,
        ungrouped=args.ungrouped,
        profile=args.profile,
    )
    print_report(report)
    if args.profile is not None:
        print_profile(args.profile, args.top, args.cycles)
    if args.json:
        print(json.dumps(report))
    return report


if __name__ == "__main__":
    main()
