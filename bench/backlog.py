"""`python -m bench backlog [--json]`: small pods arriving while a backlog that never fits waits (issue 17).

On one control plane with `--nodes` kwok nodes (1,000; 32 CPU each), a fresh `py-volcano run`:

1. `--backlog` pods (20,000) that no node can hold (64 CPU each) are created at once, and the phase
   waits until the scheduler has tried every one of them (its `volcano_schedule_attempts_total
   {result="unschedulable"}` reaches the backlog) and settles for `--settle` seconds;
2. a stream of `--stream` small pods (100m CPU) is created at `--rate` pods per second, in another
   namespace watched by a separate process;
3. per small pod, creation to bind as the watch saw them: p50, p99 and max (`backlog_small_pod_p99_s`
   is the p99; the issue's target is under 2 s), with the scheduler's own cycle count and mean cycle
   time over the stream, its peak RSS, and the load average before and after.

Both namespaces are deleted afterwards (the scheduler stopped first, so cleanup is not measured).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import secrets
import time
import urllib.request
from dataclasses import asdict, dataclass
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from bench.cluster import (
    BenchCluster,
    PodWatch,
    PyVolcano,
    Sampler,
    code_version,
    load_average,
    machine,
    percentile,
    pod_manifest,
)
from bench.e2e import start_volcano

__all__ = ["BacklogLoad", "backlog_phase", "main"]

SCHEDULER = "py-volcano"


@dataclass(frozen=True)
class BacklogLoad:
    """How big the backlog phase is."""

    nodes: int = 1000
    backlog: int = 20_000
    stream: int = 600
    rate: float = 20.0
    settle: float = 10.0

    @classmethod
    def quick(cls) -> BacklogLoad:
        """A variant that runs in a few minutes: 5,000 pods in the backlog, a 20 s stream."""
        return cls(backlog=5_000, stream=400)


def unschedulable_attempts(port: int) -> float:
    """Read `volcano_schedule_attempts_total{result="unschedulable"}` from the scheduler's /metrics."""
    url = f"http://127.0.0.1:{port}/metrics?name[]=volcano_schedule_attempts_total"
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "volcano_schedule_attempts_total" and sample.labels.get("result") == "unschedulable":
                return float(sample.value)
    return 0.0


async def wait_backlog_tried(proc: PyVolcano, backlog: int, *, timeout: float) -> float:
    """Wait until the scheduler has tried every backlog pod once; return the seconds it took."""
    began = time.monotonic()
    while await asyncio.to_thread(unschedulable_attempts, proc.port) < backlog:
        if time.monotonic() - began > timeout:
            raise TimeoutError(f"the backlog was not tried within {timeout:.0f}s: {proc.tail()}")
        await asyncio.sleep(1.0)
    return time.monotonic() - began


async def stream_pods(cluster: BenchCluster, namespace: str, count: int, rate: float) -> dict[str, float]:
    """Create `count` small pods at `rate` per second (each sent at its own time); return when and how fast."""
    path = f"/api/v1/namespaces/{namespace}/pods"
    began = time.monotonic()

    async def create(index: int) -> None:
        await asyncio.sleep(max(0.0, began + index / rate - time.monotonic()))
        body = pod_manifest(f"s-{index:05d}", scheduler=SCHEDULER, cpu="100m", memory="64Mi")
        for attempt in range(5):
            status, answer = await cluster.api.request("POST", path, body=body)
            if status in (201, 409):
                return
            if status not in (429, 500, 503, 504) or attempt == 4:
                raise RuntimeError(f"POST {path} s-{index:05d}: HTTP {status}: {str(answer)[:300]}")
            await asyncio.sleep(0.2 * (attempt + 1))

    await asyncio.gather(*(create(i) for i in range(count)))
    seconds = time.monotonic() - began
    return {"seconds": round(seconds, 2), "per_s": round(count / seconds, 1)}


async def backlog_phase(cluster: BenchCluster, load: BacklogLoad) -> dict[str, Any]:
    """Run the phase on a cluster already scaled to `load.nodes` nodes; return its figures."""
    figures: dict[str, Any] = {"phase": "backlog", "nodes": len(cluster.nodes)} | asdict(load)
    waiting = await cluster.namespace(f"backlog-{secrets.token_hex(2)}")
    stream = await cluster.namespace(f"stream-{secrets.token_hex(2)}")
    proc, ready_s = await start_volcano(cluster, f"backlog-{secrets.token_hex(2)}")
    try:
        figures["ready_s"] = round(ready_s, 2)
        bodies = [pod_manifest(f"b-{i:05d}", scheduler=SCHEDULER, cpu="64") for i in range(load.backlog)]
        created = await cluster.create_all(f"/api/v1/namespaces/{waiting}/pods", bodies)
        figures["backlog_create_s"] = created["seconds"]
        figures["backlog_tried_s"] = round(await wait_backlog_tried(proc, load.backlog, timeout=1800), 1)
        await asyncio.sleep(load.settle)
        figures["load_average_before"] = load_average()
        async with (
            PodWatch(cluster.kubeconfig, stream, expect=load.stream, timeout=600) as watch,
            Sampler(proc) as sampler,
        ):
            figures["stream_created"] = await stream_pods(cluster, stream, load.stream, load.rate)
            result = await watch.result()
        latencies = result.latencies()
        figures |= {
            "bound": len(result.bound),
            "p50_latency_s": _rounded(percentile(latencies, 0.5)),
            "p99_latency_s": _rounded(percentile(latencies, 0.99)),
            "max_latency_s": _rounded(max(latencies) if latencies else None),
            "volcano": dict(sampler.summary()),
            "rss_mib": proc.memory_mib().get("VmHWM"),
            "load_average_after": load_average(),
        }
        if result.error:
            figures["watch_error"] = result.error
    finally:
        await proc.stop()
    for namespace in (stream, waiting):
        with contextlib.suppress(RuntimeError, TimeoutError):
            await cluster.delete_namespace(namespace)
    return figures


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def print_backlog(record: dict[str, Any]) -> None:
    """Print the phase's headline figures."""
    volcano, get = record.get("volcano") or {}, record.get
    print(
        f"backlog {get('backlog')} pods on {get('nodes')} nodes (all tried in {get('backlog_tried_s')} s); "
        f"{get('bound')}/{get('stream')} small pods at {get('rate')}/s: p50 {get('p50_latency_s')} s, "
        f"p99 {get('p99_latency_s')} s, max {get('max_latency_s')} s; {volcano.get('cycles')} cycles "
        f"of {volcano.get('mean_cycle_s')} s; RSS {get('rss_mib')} MiB",
        flush=True,
    )


async def run(load: BacklogLoad, *, lease_seconds: int) -> dict[str, Any]:
    """Start a control plane, scale it, run the phase, stop it."""
    cluster = BenchCluster(lease_seconds=lease_seconds)
    report: dict[str, Any] = {"machine": machine(), "code": code_version(), "load_average_start": load_average()}
    try:
        report["control_plane_start_s"] = round(await cluster.start(), 1)
        report["scale"] = await cluster.scale_nodes(load.nodes)
        report["backlog"] = await backlog_phase(cluster, load)
    finally:
        report["load_average_end"] = load_average()
        await cluster.stop()
    report["backlog_small_pod_p99_s"] = report["backlog"].get("p99_latency_s")
    return report


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse the arguments, run, print the figures (and the JSON with --json)."""
    parser = argparse.ArgumentParser(prog="python -m bench backlog", description=__doc__.split("\n\n")[0])
    defaults = BacklogLoad()
    parser.add_argument("--quick", action="store_true", help="5,000 pods in the backlog, a 20 s stream")
    parser.add_argument("--nodes", type=int, default=defaults.nodes)
    parser.add_argument("--backlog", type=int)
    parser.add_argument("--stream", type=int)
    parser.add_argument("--rate", type=float, default=defaults.rate, help="small pods created per second")
    parser.add_argument("--lease-seconds", type=int, default=1200, help="kwok node Lease duration (40: default)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    base = BacklogLoad.quick() if args.quick else defaults
    load = BacklogLoad(
        nodes=args.nodes,
        backlog=args.backlog or base.backlog,
        stream=args.stream or base.stream,
        rate=args.rate,
        settle=base.settle,
    )
    report = asyncio.run(run(load, lease_seconds=args.lease_seconds))
    print_backlog(report["backlog"])
    if args.json:
        print(json.dumps(report))
    return report
