"""Steady load: one-pod jobs created at a fixed rate, scheduled by py-volcano and by kube-scheduler in turn.

A burst measures how fast a backlog drains; a steady rate measures what a user waiting for one pod sees
when the cluster is busy but not overloaded: the p99 of creation-to-bind latency (first seen by the
watch to first seen bound, as every phase measures it) at a rate both schedulers sustain.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from typing import Any

from bench.cluster import BenchCluster, PodWatch, load_average, percentile, pod_manifest
from bench.e2e import SCHEDULER, start_volcano
from bench.side_by_side import kube_scheduler_running

__all__ = ["create_at_rate", "steady_phase"]


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
