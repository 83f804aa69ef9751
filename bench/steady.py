"""Steady load: one-pod jobs created at a fixed rate, scheduled by py-volcano and by kube-scheduler in turn.

A burst measures how fast a backlog drains; a steady rate measures what a user waiting for one pod sees
when the cluster is busy but not overloaded: the p99 of creation-to-bind latency (first seen by the
watch to first seen bound, as every phase measures it) at a rate both schedulers sustain.
With `--repeat N` the two run N times in turn on one plane and the figures are the medians.
Usage: python -m bench steady [--nodes 5000] [--rate 150] [--seconds 60] [--repeat 1] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import time
from typing import Any

from bench.cluster import BenchCluster, PodWatch, code_version, load_average, machine, percentile, pod_manifest
from bench.e2e import SCHEDULER, start_volcano
from bench.report import median_of
from bench.side_by_side import kube_scheduler_running

__all__ = ["WHO", "create_at_rate", "main", "steady_pairs", "steady_phase"]

#: The schedulers measured, in the order they run.
WHO = ("py-volcano", "kube-scheduler")


async def create_at_rate(cluster: BenchCluster, namespace: str, bodies: list[dict[str, Any]], rate: float) -> float:
    """POST `bodies` as pods, the i-th at `i / rate` seconds from now; return the rate achieved."""
    path = f"/api/v1/namespaces/{namespace}/pods"
    began = time.monotonic()

    async def paced(i: int, body: dict[str, Any]) -> None:
        await asyncio.sleep(max(0.0, began + i / rate - time.monotonic()))
        await cluster.create_all(path, [body])

    await asyncio.gather(*(paced(i, body) for i, body in enumerate(bodies)))
    return len(bodies) / (time.monotonic() - began)


async def _measure(cluster: BenchCluster, *, scheduler: str, rate: float, seconds: float) -> dict[str, Any]:
    namespace = await cluster.namespace(f"steady-{secrets.token_hex(2)}")
    bodies = [pod_manifest(f"s-{i:05d}", scheduler=scheduler) for i in range(round(rate * seconds))]
    load_before = load_average()
    async with PodWatch(cluster.kubeconfig, namespace, expect=len(bodies), timeout=seconds + 300) as watch:
        achieved = await create_at_rate(cluster, namespace, bodies, rate)
        result = await watch.result()
    latencies = result.latencies()
    figures: dict[str, Any] = {
        "phase": "steady",
        "scheduler": scheduler,
        "nodes": len(cluster.nodes),
        "pods": len(bodies),
        "bound": len(result.bound),
        "rate_per_s": rate,
        "create_per_s": round(achieved, 1),
        "p50_latency_s": round(percentile(latencies, 0.5) or 0.0, 3),
        "p99_latency_s": round(percentile(latencies, 0.99) or 0.0, 3),
        "max_latency_s": round(max(latencies), 3) if latencies else None,
        "load_average": load_before,
    }
    if result.error:
        figures["watch_error"] = result.error
    await cluster.delete_namespace(namespace)
    return figures


async def steady_phase(cluster: BenchCluster, *, who: str, rate: float, seconds: float, qps: int) -> dict[str, Any]:
    """Create pods at `rate` per second for `seconds` with `who` ("py-volcano" or "kube-scheduler")
    scheduling them; return the latency figures."""
    if who == "kube-scheduler":
        async with kube_scheduler_running(cluster, qps=qps):
            return await _measure(cluster, scheduler="default-scheduler", rate=rate, seconds=seconds)
    proc, _ = await start_volcano(cluster, f"steady-{len(cluster.nodes)}-{secrets.token_hex(2)}")
    try:
        return await _measure(cluster, scheduler=SCHEDULER, rate=rate, seconds=seconds)
    finally:
        await proc.stop()


async def steady_pairs(
    cluster: BenchCluster, *, rate: float, seconds: float, qps: int, repeat: int
) -> dict[str, dict[str, Any]]:
    """Run the steady phase by py-volcano, then by kube-scheduler, `repeat` times in turn; return each
    scheduler's medians (`median_of`) with every run under "all"."""
    runs: dict[str, list[dict[str, Any]]] = {who: [] for who in WHO}
    for _ in range(repeat):
        for who in WHO:
            runs[who].append(await steady_phase(cluster, who=who, rate=rate, seconds=seconds, qps=qps))
    return {who: median_of(records) | {"all": records} for who, records in runs.items()}


async def run(*, nodes: int, rate: float, seconds: float, qps: int, lease_seconds: int, repeat: int) -> dict[str, Any]:
    """Start a control plane with `nodes` kwok nodes; run the steady phase by py-volcano, then by
    kube-scheduler, `repeat` times; return the report (medians)."""
    cluster = BenchCluster(lease_seconds=lease_seconds)
    report: dict[str, Any] = {"machine": machine(), "code": code_version(), "load_average_start": load_average()}
    try:
        report["control_plane_start_s"] = round(await cluster.start(), 1)
        report["scale"] = await cluster.scale_nodes(nodes)
        report |= await steady_pairs(cluster, rate=rate, seconds=seconds, qps=qps, repeat=repeat)
    finally:
        report["load_average_end"] = load_average()
        await cluster.stop()
    report["steady_p99_s"] = report.get("py-volcano", {}).get("p99_latency_s")
    report["kube_scheduler_steady_p99_s"] = report.get("kube-scheduler", {}).get("p99_latency_s")
    for who in WHO:
        row = report.get(who, {})
        print(
            f"{who:>15}: {row.get('bound')}/{row.get('pods')} bound, created {row.get('create_per_s')}/s, "
            f"p50 {row.get('p50_latency_s')} s, p99 {row.get('p99_latency_s')} s, max {row.get('max_latency_s')} s",
            flush=True,
        )
    return report


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse the arguments, run, print the figures (and JSON with --json)."""
    parser = argparse.ArgumentParser(prog="python -m bench steady", description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--rate", type=float, default=150.0, help="pods created per second")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--repeat", type=int, default=1, help="runs of each scheduler, in turn; medians reported")
    parser.add_argument("--kube-scheduler-qps", type=int, default=5000, help="0: kube-scheduler's stock 50/100")
    parser.add_argument("--lease-seconds", type=int, default=1200, help="kwok node Lease duration (40: default)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    report = asyncio.run(
        run(
            nodes=args.nodes,
            rate=args.rate,
            seconds=args.seconds,
            qps=args.kube_scheduler_qps,
            lease_seconds=args.lease_seconds,
            repeat=args.repeat,
        )
    )
    if args.json:
        print(json.dumps(report))
    return report


if __name__ == "__main__":
    main()
