"""Side by side on one control plane, in one run: the same one-pod workload scheduled by py-volcano, by
the upstream kube-scheduler (built by hack/build-control-plane.sh from the API server's Kubernetes
version), and the raw bind ceiling of the API server.

* `py-volcano`: as `bench.e2e`'s `single` phase (`schedulerName: py-volcano`).
* `kube-scheduler`: `ControlPlane.start_kube_scheduler()` with py-volcano stopped, pods with
  `schedulerName: default-scheduler`, same creation, same watch, same figures. Its client-side rate limit
  (`clientConnection.qps/burst`, 50/100 by default) is raised to `--kube-scheduler-qps` (default 5,000)
  so that it is not what limits it; py-volcano has no client-side limit. `--kube-scheduler-qps 0` keeps
  the stock configuration.
* `ceiling`: pods nobody schedules (`schedulerName: nobody`) are created first; then a tight loop POSTs
  every pods/binding with the scheduler's own async client (`py_volcano.cache.client.ApiClient`) and the
  scheduler's default `--bind-concurrency`, round-robin over the nodes. Its rate is binds / (last answer
  - first request): what the API server accepts when nothing else is done.

* `null` (with `--null`): the null scheduler of `bench all` (`bench.null_scheduler`: binds each pod
  round-robin as soon as it is seen), on the same creation and watch.

Ratios: py-volcano / kube-scheduler on `pods_per_s` (first creation to last bind, both sides alike),
py-volcano / ceiling, both on `pods_per_s` (the strict one, creation included on the scheduler's side)
and on the scheduler's bind window (first to last bind seen), and with `--null` py-volcano / the null
scheduler (`e2e_over_null`, as `bench all` reports it).

Between phases every pod is deleted (by collection, gracePeriodSeconds 0; kwok finishes the deletions).

Usage: python -m bench.side_by_side [--nodes 1000] [--pods 10000] [--repeat 1] [--null] [--quick] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import secrets
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator
from typing import Any

from bench.cluster import BenchCluster, code_version, cpu_seconds, load_average, machine, memory_mib, pod_manifest
from bench.e2e import COLUMNS, measure_phase, table_row, volcano_phase
from bench.report import median_of, print_table, ratio
from py_volcano.cache.client import ApiClient
from py_volcano.settings import BindingSettings

__all__ = ["ceiling_phase", "kube_scheduler_phase", "kube_scheduler_running", "main", "null_phase", "ratios"]

#: py-volcano's default --bind-concurrency.
BIND_CONCURRENCY = BindingSettings().concurrency


def kube_scheduler_config(qps: int) -> str:
    """Return a KubeSchedulerConfiguration raising the client rate limit to `qps` (0: stock)."""
    text = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
    text += "leaderElection:\n  leaderElect: false\n"
    if qps:
        text += f"clientConnection:\n  qps: {qps}\n  burst: {qps}\n"
    return text


def _ready(port: int) -> bool:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz", timeout=5, context=context) as response:
            return int(response.status) == 200
    except OSError:
        return False


@contextlib.asynccontextmanager
async def kube_scheduler_running(cluster: BenchCluster, *, qps: int) -> AsyncIterator[float]:
    """Run the upstream kube-scheduler on the bench cluster; yield the seconds until its /readyz."""
    config = cluster.work_dir / "bench-kube-scheduler.yaml"
    config.write_text(kube_scheduler_config(qps))
    began = time.monotonic()
    await asyncio.to_thread(cluster.plane.start_kube_scheduler, config)
    try:
        port = cluster.plane.ports["kube-scheduler"]
        while not await asyncio.to_thread(_ready, port):  # informers synced
            await asyncio.sleep(0.1)
        yield time.monotonic() - began
    finally:
        await asyncio.to_thread(cluster.plane.stop_kube_scheduler)


async def kube_scheduler_phase(cluster: BenchCluster, *, pods: int, qps: int) -> dict[str, Any]:
    """Schedule `pods` one-pod jobs with the upstream kube-scheduler; cleanup afterwards."""
    async with kube_scheduler_running(cluster, qps=qps) as ready_s:
        pid = cluster.plane.pids().get("kube-scheduler")
        figures, namespace = await measure_phase(
            cluster, name="kube-scheduler", scheduler="default-scheduler", pods=pods
        )
        figures["ready_s"] = round(ready_s, 2)
        figures["kube_scheduler_qps"] = qps or "stock"
        if pid is not None:
            figures["rss_mib"] = memory_mib(pid).get("VmHWM")
    await cluster.delete_namespace(namespace)
    return figures


async def ceiling_phase(cluster: BenchCluster, *, pods: int, concurrency: int = BIND_CONCURRENCY) -> dict[str, Any]:
    """Create `pods` unscheduled pods, then bind them all as fast as the API server takes it."""
    namespace = await cluster.namespace(f"ceiling-{secrets.token_hex(2)}")
    names = [f"c-{i:05d}" for i in range(pods)]
    created = await cluster.create_all(
        f"/api/v1/namespaces/{namespace}/pods", [pod_manifest(n, scheduler="nobody") for n in names]
    )
    nodes = cluster.nodes
    client = await ApiClient.connect(kubeconfig=str(cluster.kubeconfig), concurrency=concurrency, timeout=120.0)
    errors = 0

    async def bind(i: int, name: str) -> None:
        nonlocal errors
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": nodes[i % len(nodes)]},
        }
        status, _ = await client.request("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/binding", body=body)
        if status not in (200, 201):
            errors += 1

    load_before = load_average()
    try:
        began = time.monotonic()
        await asyncio.gather(*(bind(i, name) for i, name in enumerate(names)))
        seconds = time.monotonic() - began
    finally:
        await client.close()
    await cluster.delete_namespace(namespace)
    return {
        "phase": "ceiling",
        "scheduler": "bind client",
        "nodes": len(nodes),
        "pods": pods,
        "create_per_s": created["per_s"],
        "bound": pods - errors,
        "bind_errors": errors,
        "bind_s": round(seconds, 3),
        "pods_per_s": round((pods - errors) / seconds, 1),
        "bind_window_per_s": round((pods - errors) / seconds, 1),
        "concurrency": concurrency,
        "load_average": load_before,
    }


async def null_phase(cluster: BenchCluster, *, pods: int) -> dict[str, Any]:
    """Schedule `pods` one-pod jobs with the null scheduler (`bench.null_scheduler`): the same creation and
    watch as py-volcano's phase, binds sent as soon as each pod is seen."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.null_scheduler",
        f"--kubeconfig={cluster.kubeconfig}",
        "--scheduler-name=null-scheduler",
        f"--concurrency={BIND_CONCURRENCY}",
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), timeout=60.0)
        if line.strip() != b"watching":
            raise RuntimeError(f"null scheduler did not start: {line!r}")
        figures, namespace = await measure_phase(cluster, name="null", scheduler="null-scheduler", pods=pods)
        figures["cpu_s_null_scheduler"] = round(cpu_seconds(proc.pid), 2)
    finally:
        proc.kill()
        await proc.wait()
    await cluster.delete_namespace(namespace)
    return figures


def ratios(
    volcano: dict[str, Any],
    kube: dict[str, Any] | None,
    ceiling: dict[str, Any] | None,
    null: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Return py-volcano / kube-scheduler and py-volcano / ceiling, and / the null scheduler when it ran."""
    out = {
        "volcano_over_kube_scheduler": ratio(volcano.get("pods_per_s"), (kube or {}).get("pods_per_s")),
        "volcano_over_ceiling": ratio(volcano.get("pods_per_s"), (ceiling or {}).get("pods_per_s")),
        "volcano_bind_window_over_ceiling": ratio(volcano.get("bind_window_per_s"), (ceiling or {}).get("pods_per_s")),
    }
    if null is not None:
        out["e2e_over_null"] = ratio(volcano.get("pods_per_s"), null.get("pods_per_s"))
    return out


async def compare(cluster: BenchCluster, *, pods: int, repeat: int, qps: int, null: bool = False) -> dict[str, Any]:
    """Run the phases (the null scheduler's too with `null`) `repeat` times, interleaved; return medians,
    every run and the ratios."""
    runs: dict[str, list[dict[str, Any]]] = {"py-volcano": [], "kube-scheduler": [], "ceiling": []}
    if null:
        runs["null"] = []
    for _ in range(repeat):
        runs["py-volcano"].append(await volcano_phase(cluster, name="single", pods=pods))
        runs["kube-scheduler"].append(await kube_scheduler_phase(cluster, pods=pods, qps=qps))
        runs["ceiling"].append(await ceiling_phase(cluster, pods=pods))
        if null:
            runs["null"].append(await null_phase(cluster, pods=pods))
    medians = {name: median_of(records) | {"all": records} for name, records in runs.items()}
    out = {"nodes": len(cluster.nodes), **medians}
    out["ratios"] = ratios(medians["py-volcano"], medians["kube-scheduler"], medians["ceiling"], medians.get("null"))
    return out


def print_comparison(result: dict[str, Any]) -> None:
    """Print the phases and the ratios."""
    names = [name for name in ("py-volcano", "kube-scheduler", "ceiling", "null") if name in result]
    print_table([table_row(result[name]) for name in names], COLUMNS)
    for key, value in result["ratios"].items():
        print(f"{key}: {value}")
    print(flush=True)


async def run(
    *, nodes: tuple[int, ...], pods: int, repeat: int, qps: int, lease_seconds: int, null: bool = False
) -> dict[str, Any]:
    """Start a plane, and at each node count compare the schedulers; return the report."""
    cluster = BenchCluster(lease_seconds=lease_seconds)
    report: dict[str, Any] = {"machine": machine(), "code": code_version(), "load_average_start": load_average()}
    report["comparisons"] = []
    try:
        report["control_plane_start_s"] = round(await cluster.start(), 1)
        for count in nodes:
            report[f"nodes_{count}"] = await cluster.scale_nodes(count)
            result = await compare(cluster, pods=pods, repeat=repeat, qps=qps, null=null)
            print_comparison(result)
            report["comparisons"].append(result)
    finally:
        report["load_average_end"] = load_average()
        await cluster.stop()
    return report


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse the arguments, run, print the tables (and JSON with --json)."""
    parser = argparse.ArgumentParser(prog="python -m bench.side_by_side", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000 nodes, 2,000 pods")
    parser.add_argument("--nodes", help="comma list of node counts (default 1000,5000; quick 1000)")
    parser.add_argument("--pods", type=int, help="one-pod jobs per phase (default 10000; quick 2000)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--kube-scheduler-qps", type=int, default=5000, help="0: kube-scheduler's stock 50/100")
    parser.add_argument(
        "--lease-seconds", type=int, default=1200, help="kwok node Lease duration (40: default cluster)"
    )
    parser.add_argument("--null", action="store_true", help="the null scheduler too (e2e_over_null)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    nodes = tuple(int(n) for n in args.nodes.split(",")) if args.nodes else ((1000,) if args.quick else (1000, 5000))
    pods = args.pods or (2000 if args.quick else 10_000)
    report = asyncio.run(
        run(
            nodes=nodes,
            pods=pods,
            repeat=args.repeat,
            qps=args.kube_scheduler_qps,
            lease_seconds=args.lease_seconds,
            null=args.null,
        )
    )
    if args.json:
        print(json.dumps(report))
    return report


if __name__ == "__main__":
    main()
