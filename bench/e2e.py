"""End to end on the real control plane (`e2e.controlplane.ControlPlane`): kwok fake nodes, py-volcano as
a subprocess, workloads created at once, binds seen through a watch.

Phases, at each node count (`--nodes`, default 1,000 and 5,000):

* `single`: `--pods` one-pod jobs (pods without a PodGroup, `schedulerName: py-volcano`) created
  concurrently;
* `gang`: `--gangs` PodGroups of `--gang-size` pods (minMember = size), the groups first, then every pod
  concurrently;

and once, at the largest node count:

* `restart`: `--restart-pods` pods in the cluster, all but `--restart-pending` of them created bound
  (`spec.nodeName`) while a scheduler runs; once kwok has marked them all Running and the plane is at
  rest (`SETTLED_CORES`; `--restart-unsettled`: at once) the scheduler is stopped, the pending pods are
  created, and a fresh `py-volcano run` starts: time from its spawn to /readyz, to the first bind seen
  and to the last; the longest its /healthz kept a caller waiting meanwhile (asked every 0.25 s: how
  long its event loop was held); its peak RSS (VmHWM) with everything cached.

Figures of a scheduling phase (the clock is the benchmark's; creation and binds as a watch in a separate
process saw them):

* `pods_per_s`: pods bound / (last bind seen - first creation sent);
* `bind_window_per_s`: pods bound / (last bind seen - first bind seen);
* `p50/p99_latency_s`: per pod, bind seen - creation seen (the ADDED event), same watch stream;
* `scheduler`: py-volcano's own /metrics over the phase: binds, bind rate (counter sampled every 0.5 s),
  cycles and mean cycle time, and p50/p99 of `volcano_task_scheduling_latency_milliseconds`
  (interpolated in buckets that double, so coarse);
* `rss_mib`: VmHWM of the py-volcano process at the end of the phase (a fresh process per phase).

Usage: python -m bench.e2e [--nodes 1000,5000] [--pods 10000] [--gangs 20] [--gang-size 500]
       [--restart-pods 50000] [--restart-pending 5000] [--restart-unsettled] [--repeat 1] [--quick] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from bench.cluster import (
    BenchCluster,
    PodWatch,
    PyVolcano,
    Sampler,
    WatchResult,
    code_version,
    cpu_seconds,
    http_status,
    load_average,
    machine,
    percentile,
    pod_manifest,
)
from bench.profile import PySpy, print_summary
from bench.profile import summarise as summarise_profile
from bench.report import median_of, print_table

__all__ = ["Workload", "main", "measure_phase", "restart_phase", "volcano_phase"]

SCHEDULER = "py-volcano"
PODGROUPS = "/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups"


@dataclass(frozen=True)
class Workload:
    """How big each phase is."""

    nodes: tuple[int, ...] = (1000, 5000)
    pods: int = 10_000
    gangs: int = 20
    gang_size: int = 500
    restart_pods: int = 150_000
    restart_pending: int = 5_000
    steady_rate: float = 150.0
    steady_seconds: float = 60.0

    @classmethod
    def quick(cls) -> Workload:
        """A variant that runs in a couple of minutes: 1,000 nodes, 2,000 pods."""
        return cls(
            nodes=(1000,),
            pods=2000,
            gangs=4,
            gang_size=500,
            restart_pods=10_000,
            restart_pending=1000,
            steady_rate=50.0,
            steady_seconds=20.0,
        )


@contextlib.asynccontextmanager
async def cpu_meter(
    cluster: BenchCluster, out: dict[str, Any], extra: dict[str, int] | None = None
) -> AsyncIterator[None]:
    """Record in `out["cpu_s"]` the CPU seconds each control-plane component (and `extra` pids) used."""
    pids = dict(cluster.plane.pids()) | (extra or {})
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    began = time.monotonic()
    yield
    wall = time.monotonic() - began
    out["cpu_s"] = {name: round(cpu_seconds(pid) - before[name], 1) for name, pid in pids.items()}
    out["wall_s"] = round(wall, 1)


async def cpu_cores(pids: dict[str, int], *, seconds: float) -> dict[str, float]:
    """Return the cores each of `pids` kept busy over the next `seconds`."""
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    await asyncio.sleep(seconds)
    return {name: round((cpu_seconds(pid) - before[name]) / seconds, 2) for name, pid in pids.items()}


#: The plane is at rest when etcd, the API server, the controller manager and kwok together keep fewer
#: cores than this busy (5,000 nodes and 150,000 pods at rest: heartbeats and the controllers' resyncs).
SETTLED_CORES = 0.3


async def until_quiet(
    pids: dict[str, int], *, below: float, seconds: float = 10.0, timeout: float = 1800.0
) -> tuple[dict[str, float], bool]:
    """Wait until `pids` together keep fewer than `below` cores busy over `seconds`, or `timeout` passed;
    return the cores of the last window and whether they were below."""
    deadline = time.monotonic() + timeout
    while True:
        cores = await cpu_cores(pids, seconds=seconds)
        quiet = sum(cores.values()) < below
        if quiet or time.monotonic() > deadline:
            return cores, quiet


class Background:
    """Runs `_run` as a task while entered; leaving cancels it and waits for it."""

    _task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Self:
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def _run(self) -> None:
        raise NotImplementedError


class CpuTimeline(Background):
    """The CPU seconds each of `pids` had used, sampled every `interval` while entered (monotonic clock)."""

    def __init__(self, pids: dict[str, int], interval: float = 0.25) -> None:
        self.pids, self.interval = pids, interval
        self.samples: list[tuple[float, dict[str, float]]] = []

    async def __aexit__(self, *exc_info: object) -> None:
        await super().__aexit__(*exc_info)
        self._sample()

    async def _run(self) -> None:
        while True:
            self._sample()
            await asyncio.sleep(self.interval)

    def _sample(self) -> None:
        self.samples.append((time.monotonic(), {name: cpu_seconds(pid) for name, pid in self.pids.items()}))

    def between(self, start: float, end: float) -> dict[str, float]:
        """CPU seconds each process used from the last sample at or before `start` to the first at or
        after `end` (so within `interval` of the span on each side)."""
        first = max((s for s in self.samples if s[0] <= start), default=self.samples[0], key=lambda s: s[0])
        last = min((s for s in self.samples if s[0] >= end), default=self.samples[-1], key=lambda s: s[0])
        return {name: round(last[1][name] - first[1][name], 1) for name in last[1]} | {
            "wall": round(last[0] - first[0], 1)
        }


class ProbeWaits(Background):
    """How long py-volcano's /healthz kept a caller waiting, asked every `interval` while entered (one
    request at a time: an event loop held for 10 s shows as one answer 10 s late)."""

    def __init__(self, port: int, interval: float = 0.25) -> None:
        self.url, self.interval = f"http://127.0.0.1:{port}/healthz", interval
        self.waits: list[float] = []

    async def _run(self) -> None:
        while True:
            began = time.monotonic()
            try:
                await asyncio.to_thread(http_status, self.url, timeout=120.0)
            except OSError as exc:  # refused: not listening yet; else no answer within the timeout
                if isinstance(getattr(exc, "reason", exc), ConnectionRefusedError):
                    await asyncio.sleep(self.interval)
                    continue
            self.waits.append(time.monotonic() - began)
            await asyncio.sleep(self.interval)

    def longest(self) -> float | None:
        """The longest wait for an answer, seconds (None: never answered)."""
        return round(max(self.waits), 2) if self.waits else None


def summarise(result: WatchResult, created: dict[str, float], total: int) -> dict[str, Any]:
    """Turn what the watch saw into a phase's figures."""
    bound = len(result.bound)
    figures: dict[str, Any] = {
        "pods": total,
        "bound": bound,
        "create_s": created["seconds"],
        "create_per_s": created["per_s"],
    }
    if bound:
        first_bind, last_bind = min(result.bound.values()), max(result.bound.values())
        latencies = result.latencies()
        figures |= {
            "first_bind_s": round(first_bind - created["started"], 3),
            "makespan_s": round(last_bind - created["started"], 3),
            "pods_per_s": round(bound / (last_bind - created["started"]), 1),
            "bind_window_per_s": round(bound / (last_bind - first_bind), 1) if last_bind > first_bind else None,
            "p50_latency_s": round(percentile(latencies, 0.5) or 0.0, 3),
            "p99_latency_s": round(percentile(latencies, 0.99) or 0.0, 3),
            "max_latency_s": round(max(latencies), 3) if latencies else None,
        }
    figures["watch_reconnects"] = result.reconnects
    if result.error:
        figures["watch_error"] = result.error
    return figures


def workload_pods(
    *, scheduler: str, pods: int, gangs: int = 0, gang_size: int = 0
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Return (PodGroups, pods): `pods` one-pod jobs, or `gangs` groups of `gang_size` when gangs > 0."""
    if not gangs:
        return [], [pod_manifest(f"p-{i:05d}", scheduler=scheduler) for i in range(pods)]
    groups = [
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": f"gang-{g:02d}"},
            "spec": {"minMember": gang_size, "queue": "default"},
        }
        for g in range(gangs)
    ]
    bodies = [
        pod_manifest(f"g{g:02d}-{i:04d}", scheduler=scheduler, group=f"gang-{g:02d}")
        for g in range(gangs)
        for i in range(gang_size)
    ]
    return groups, bodies


async def measure_phase(
    cluster: BenchCluster,
    *,
    name: str,
    scheduler: str,
    pods: int,
    gangs: int = 0,
    gang_size: int = 0,
    volcano: PyVolcano | None = None,
    profile: Path | None = None,
    timeout: float = 900.0,
) -> tuple[dict[str, Any], str]:
    """Create the workload at once in a fresh namespace and watch it being bound; return (figures, namespace).

    The caller deletes the namespace (after stopping the scheduler, so cleanup is not measured).
    """
    namespace = await cluster.namespace(f"{name}-{secrets.token_hex(2)}")
    groups, bodies = workload_pods(scheduler=scheduler, pods=pods, gangs=gangs, gang_size=gang_size)
    if groups:
        await cluster.create_all(PODGROUPS.format(ns=namespace), groups)
    sampler = Sampler(volcano) if volcano is not None else None
    figures: dict[str, Any] = {"phase": name, "scheduler": scheduler, "nodes": len(cluster.nodes)}
    extra = {"py-volcano": volcano.pid} if volcano is not None else {}
    load_before = load_average()
    counters = await cluster.api_counters()
    async with contextlib.AsyncExitStack() as stack:
        watch = await stack.enter_async_context(
            PodWatch(cluster.kubeconfig, namespace, expect=len(bodies), timeout=timeout)
        )
        if sampler is not None:
            await stack.enter_async_context(sampler)
        if profile is not None and volcano is not None:
            await stack.enter_async_context(PySpy(volcano.pid, profile))
            figures["profiled"] = str(profile)
        await stack.enter_async_context(cpu_meter(cluster, figures, extra))
        created = await cluster.create_all(f"/api/v1/namespaces/{namespace}/pods", bodies)
        result = await watch.result()
    figures |= summarise(result, created, len(bodies))
    if result.bound:
        figures["cpu_ms_per_pod"] = {k: round(1000 * v / len(result.bound), 2) for k, v in figures["cpu_s"].items()}
    after = await cluster.api_counters()
    delta = {key: value - counters.get(key, 0.0) for key, value in after.items()}
    figures["api_terminated_pod_watches"] = delta.pop("terminated pod watches", 0.0)
    if result.bound:  # API requests per bound pod, the most frequent first (the ones the phase caused)
        per_pod = sorted(((v / len(result.bound), k) for k, v in delta.items() if v), reverse=True)
        figures["api_requests_per_pod"] = {k: round(v, 3) for v, k in per_pod if v >= 0.01}
    if sampler is not None:
        figures["volcano"] = dict(sampler.summary())
    figures["load_average"] = load_before
    return figures, namespace


async def start_volcano(cluster: BenchCluster, name: str) -> tuple[PyVolcano, float]:
    """Start py-volcano; return it and the seconds until /readyz once it has run a cycle."""
    proc = PyVolcano(cluster.kubeconfig, cluster.work_dir / "py-volcano-logs", name=name)
    try:
        await proc.wait_ready()
        while (await proc.metrics())["cycles"] < 1:
            await asyncio.sleep(0.1)
    except BaseException:
        await proc.stop()
        raise
    return proc, time.monotonic() - proc.started


async def volcano_phase(
    cluster: BenchCluster, *, name: str, pods: int, gangs: int = 0, gang_size: int = 0, profile: Path | None = None
) -> dict[str, Any]:
    """One scheduling phase with a fresh py-volcano process (under py-spy with `profile`); cleanup afterwards."""
    proc, ready_s = await start_volcano(cluster, f"{name}-{len(cluster.nodes)}-{secrets.token_hex(2)}")
    try:
        figures, namespace = await measure_phase(
            cluster,
            name=name,
            scheduler=SCHEDULER,
            pods=pods,
            gangs=gangs,
            gang_size=gang_size,
            volcano=proc,
            profile=profile,
        )
        figures["ready_s"] = round(ready_s, 2)
        figures["rss_mib"] = proc.memory_mib().get("VmHWM")
    finally:
        await proc.stop()
    await cluster.delete_namespace(namespace)
    return figures


async def restart_phase(
    cluster: BenchCluster,
    *,
    total: int,
    pending: int,
    settle: bool = True,
    profile: Path | None = None,
    profile_seconds: float = 35.0,
) -> dict[str, Any]:
    """Time to the first bind of a fresh py-volcano with `total` pods in the cluster, `pending` unbound;
    with `settle`, the restart comes once kwok has marked every bound pod Running and the plane is at rest
    (`SETTLED_CORES`: a live cluster as a restarting scheduler finds it), else right after their creation;
    with `profile`, the restarted process's first `profile_seconds` recorded there by py-spy (at 150,000
    pods, about its spawn to its first bind).

    Its pods stay (deleting 150,000 took ~12 min): the runners run it last and stop the plane next."""
    namespace = await cluster.namespace(f"restart-{secrets.token_hex(2)}")
    path = f"/api/v1/namespaces/{namespace}/pods"
    nodes = cluster.nodes
    figures: dict[str, Any] = {"phase": "restart", "nodes": len(nodes), "pods": total, "pending": pending}
    first, _ = await start_volcano(cluster, f"before-restart-{secrets.token_hex(2)}")
    try:
        bound_bodies = [
            pod_manifest(f"b-{i:05d}", scheduler=SCHEDULER, node=nodes[i % len(nodes)]) for i in range(total - pending)
        ]
        created = await cluster.create_all(path, bound_bodies)
        figures["create_bound_s"] = created["seconds"]
        # let the running scheduler's watch catch up before reading its memory; how busy the plane still is
        figures["plane_cores_after_create"] = await cpu_cores(cluster.plane.pids(), seconds=5.0)
        if settle:
            began = time.monotonic()
            figures["running_s"] = round(await cluster.until_running(namespace), 1)
            # kwok reads the events of its own status writes minutes behind and keeps a core busy meanwhile
            cores, quiet = await until_quiet(cluster.plane.pids(), below=SETTLED_CORES)
            figures["plane_cores_settled"], figures["plane_at_rest"] = cores, quiet
            figures["settle_s"] = round(time.monotonic() - began, 1)
        figures["rss_before_restart_mib"] = first.memory_mib().get("VmHWM")
    finally:
        await first.stop()
    pending_bodies = [
        pod_manifest(f"w-{i:05d}", scheduler=SCHEDULER, labels={"bench": "pending"}) for i in range(pending)
    ]
    await cluster.create_all(path, pending_bodies)
    figures["load_average"] = load_average()
    plane = cluster.plane.pids()
    async with PodWatch(cluster.kubeconfig, namespace, expect=pending, selector="bench=pending") as watch:
        proc = PyVolcano(
            cluster.kubeconfig, cluster.work_dir / "py-volcano-logs", name=f"restarted-{secrets.token_hex(2)}"
        )
        timeline, probes = CpuTimeline(plane | {"py-volcano": proc.pid}), ProbeWaits(proc.port)
        try:
            async with contextlib.AsyncExitStack() as stack:
                await stack.enter_async_context(timeline)
                await stack.enter_async_context(probes)
                if profile is not None:
                    await stack.enter_async_context(PySpy(proc.pid, profile, seconds=profile_seconds))
                    figures["profiled"], figures["profiled_seconds"] = str(profile), profile_seconds
                figures["ready_s"] = round(await proc.wait_ready(), 2)
                result = await watch.result()
            figures["healthz_longest_wait_s"] = probes.longest()
            if result.bound:
                first_bind = min(result.bound.values())
                figures["first_bind_s"] = round(first_bind - proc.started, 2)
                figures["last_bind_s"] = round(max(result.bound.values()) - proc.started, 2)
                ready = proc.started + figures["ready_s"]
                figures["cpu_s_to_ready"] = timeline.between(proc.started, ready)
                figures["cpu_s_ready_to_first_bind"] = timeline.between(ready, first_bind)
            figures["bound"] = len(result.bound)
            figures["volcano"] = {k: v for k, v in (await proc.metrics()).items() if k != "latency_buckets"}
            figures["rss_mib"] = proc.memory_mib().get("VmHWM")
        finally:
            await proc.stop()
    return figures


COLUMNS = (
    ("nodes", "nodes"),
    ("phase", "phase"),
    ("pods", "pods"),
    ("create_per_s", "created/s"),
    ("pods_per_s", "pods/s"),
    ("bind_window_per_s", "binds/s(window)"),
    ("sched_bind_rate", "binds/s(sched)"),
    ("p50_latency_s", "p50 s"),
    ("p99_latency_s", "p99 s"),
    ("hist_p99", "p99 s(hist)"),
    ("cycles", "cycles"),
    ("mean_cycle_s", "cycle s"),
    ("rss_mib", "RSS MiB"),
    ("runs", "runs"),
)


def table_row(record: dict[str, Any]) -> dict[str, Any]:
    """Flatten a phase record for the table."""
    volcano = record.get("volcano") or {}
    return record | {
        "sched_bind_rate": volcano.get("bind_rate_per_s"),
        "hist_p99": volcano.get("hist_p99_latency_s"),
        "cycles": volcano.get("cycles"),
        "mean_cycle_s": volcano.get("mean_cycle_s"),
    }


def print_restart(record: dict[str, Any]) -> None:
    """Print the restart phase as a table."""
    print_table(
        [record],
        (
            ("nodes", "nodes"),
            ("pods", "pods in cluster"),
            ("pending", "pending"),
            ("settle_s", "settle s"),
            ("ready_s", "ready s"),
            ("first_bind_s", "first bind s"),
            ("last_bind_s", "last bind s"),
            ("healthz_longest_wait_s", "healthz wait s"),
            ("rss_before_restart_mib", "RSS before MiB"),
            ("rss_mib", "RSS MiB"),
        ),
    )


PHASES = ("single", "gang", "restart")


async def run(
    workload: Workload,
    *,
    repeat: int,
    lease_seconds: int,
    phases: tuple[str, ...] = PHASES,
    settle: bool = True,
    profile: Path | None = None,
    profile_seconds: float = 35.0,
) -> dict[str, Any]:
    """Run the e2e `phases` on one control plane; return the records (medians over `repeat`). With
    `profile`, every `single` phase runs under py-spy, and so does the restarted process for its first
    `profile_seconds`, recording into that file (the last one stays)."""
    cluster = BenchCluster(lease_seconds=lease_seconds)
    report: dict[str, Any] = {"machine": machine(), "code": code_version(), "load_average_start": load_average()}
    report["phases"] = []
    try:
        report["control_plane_start_s"] = round(await cluster.start(), 1)
        for count in workload.nodes:
            report[f"nodes_{count}"] = await cluster.scale_nodes(count)
            runs: dict[str, list[dict[str, Any]]] = {name: [] for name in ("single", "gang") if name in phases}
            for _ in range(repeat):
                if "single" in runs:
                    runs["single"].append(
                        await volcano_phase(cluster, name="single", pods=workload.pods, profile=profile)
                    )
                if "gang" in runs:
                    runs["gang"].append(
                        await volcano_phase(
                            cluster, name="gang", pods=0, gangs=workload.gangs, gang_size=workload.gang_size
                        )
                    )
            rows = [median_of(records) | {"all": records} for records in runs.values()]
            report["phases"] += rows
            if rows:
                print_table([table_row(r) for r in rows], COLUMNS)
        if "restart" in phases:
            report["restart"] = await restart_phase(
                cluster,
                total=workload.restart_pods,
                pending=workload.restart_pending,
                settle=settle,
                profile=profile,
                profile_seconds=profile_seconds,
            )
            print_restart(report["restart"])
    finally:
        report["control_plane_rss_mib"] = cluster.component_rss_mib()
        report["load_average_end"] = load_average()
        await cluster.stop()
    return report


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse the arguments, run, print the table (and JSON with --json)."""
    parser = argparse.ArgumentParser(prog="python -m bench.e2e", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000 nodes, 2,000 pods, 4 gangs of 500")
    parser.add_argument("--nodes", help="comma list of node counts")
    parser.add_argument("--pods", type=int)
    parser.add_argument("--gangs", type=int)
    parser.add_argument("--gang-size", type=int)
    parser.add_argument("--restart-pods", type=int)
    parser.add_argument("--restart-pending", type=int)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--phases", default=",".join(PHASES), help="comma list of single, gang, restart")
    parser.add_argument(
        "--restart-unsettled",
        action="store_true",
        help="restart right after the bound pods are created, while kwok still marks them Running",
    )
    parser.add_argument(
        "--lease-seconds", type=int, default=1200, help="kwok node Lease duration (40: default cluster)"
    )
    parser.add_argument(
        "--profile", type=Path, help="record the single phases and the restarted process with py-spy into this file"
    )
    parser.add_argument(
        "--profile-seconds", type=float, default=35.0, help="how long the restarted process is recorded from its spawn"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    workload = workload_from_args(args)
    phases = tuple(args.phases.split(","))
    report = asyncio.run(
        run(
            workload,
            repeat=args.repeat,
            lease_seconds=args.lease_seconds,
            phases=phases,
            settle=not args.restart_unsettled,
            profile=args.profile,
            profile_seconds=args.profile_seconds,
        )
    )
    if args.profile is not None:
        print_summary(summarise_profile(args.profile))
    if args.json:
        print(json.dumps(report))
    return report


def workload_from_args(args: argparse.Namespace) -> Workload:
    """Return the workload the arguments describe (`--quick` as the base, then each override)."""
    base = Workload.quick() if args.quick else Workload()
    overrides: dict[str, Any] = {}
    if args.nodes:
        overrides["nodes"] = tuple(int(n) for n in args.nodes.split(","))
    for key in ("pods", "gangs", "gang_size", "restart_pods", "restart_pending"):
        if getattr(args, key, None) is not None:
            overrides[key] = getattr(args, key)
    return Workload(**(base.__dict__ | overrides))


if __name__ == "__main__":
    main()
