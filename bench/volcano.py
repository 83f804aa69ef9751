"""Volcano's own scheduler on the bench cluster: the `single` workload (one-pod jobs created at once)
scheduled by the vc-scheduler binary `VOLCANO_SCHEDULER` names (built from Volcano's source, docs/parity.md),
measured with the same watch and figures as py-volcano's and kube-scheduler's phases (bench/e2e.py).

vc-scheduler runs as Volcano ships it: Volcano's default configuration (py-volcano's
`py_volcano/framework/default.conf`, the same text), `--schedule-period 1s` (its default), its default
client rate limit (2,000 QPS) and node sampling, klog at its default verbosity (py-volcano runs at
`warning`), `--scheduler-name volcano`, no leader election. Before it starts, the cluster gets what
Volcano's installation gives it (e2e/parity/volcano.py): the CRDs beside the binary that ours lack, the
`root` and `default` queues Open, and PodGroup status served as part of the object (vc-scheduler writes
it with a plain update); afterwards the status subresource is back and the queues created are deleted.

Volcano schedules a bare pod only once its podgroup controller has given it a PodGroup. Here each pod is
created already in its group: the PodGroups (`podgroup-<pod name>`, minMember 1, the pod's requests as
minResources, Pending) are created before the window, and the phase waits until vc-scheduler has moved
them all to Inqueue; the pods then carry the group annotation at creation. So the window holds the same
10,000 pod creations as every other phase, and vc-scheduler is measured alone, as py-volcano (without its
podgroup controller) and kube-scheduler are; its per-pod work in the window (bind, the group's status
write when it runs, events) is all its own. Where this differs from Volcano's controller: the group is
named after the pod, not its uid, and has no owner reference (the pod does not exist yet); the
controller's own PodGroup create and pod patch are not in the window.

Usage: VOLCANO_SCHEDULER=/path/to/vc-scheduler python -m bench volcano [--nodes 5000] [--pods 10000] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from bench.cluster import (
    BenchCluster,
    PodWatch,
    Subprocess,
    bucket_delta,
    code_version,
    histogram_quantile,
    load_average,
    machine,
    memory_mib,
    pod_manifest,
    scrape,
)
from bench.e2e import COLUMNS, cpu_meter, summarise, table_row
from bench.report import print_table
from e2e.controlplane import free_port
from e2e.harness import Rest
from e2e.parity.volcano import (
    BINARY_ENV,
    install_volcano_crds,
    podgroup_for,
    podgroup_status_subresource,
    system_queues,
)
from py_volcano.framework import default_conf_text

__all__ = ["VcScheduler", "configured_binary", "main", "volcano_phase"]

#: vc-scheduler's default scheduler name, which the workload's pods ask for.
SCHEDULER = "volcano"
#: Volcano's default --schedule-period.
SCHEDULE_PERIOD = "1s"
PODGROUPS = "/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups"


def configured_binary() -> str | None:
    """Return the vc-scheduler path `VOLCANO_SCHEDULER` names, None when it is unset."""
    return os.environ.get(BINARY_ENV) or None


class VcScheduler(Subprocess):
    """One vc-scheduler subprocess on the bench cluster, its metrics on a port of its own."""

    stop_timeout = 30.0

    def __init__(self, binary: str, cluster: BenchCluster) -> None:
        name = f"vc-scheduler-{secrets.token_hex(2)}"
        conf = cluster.work_dir / f"{name}.conf"
        conf.write_text(default_conf_text())
        log_path = cluster.work_dir / f"{name}.log"
        self.port = free_port()
        args = [
            binary,
            f"--kubeconfig={cluster.kubeconfig}",
            f"--scheduler-name={SCHEDULER}",
            f"--scheduler-conf={conf}",
            f"--schedule-period={SCHEDULE_PERIOD}",
            "--leader-elect=false",
            "--enable-metrics=true",
            f"--listen-address=127.0.0.1:{self.port}",
            f"--healthz-address=127.0.0.1:{free_port()}",
            "--cache-dumper=false",
        ]
        super().__init__(args, log_path)

    async def metrics(self) -> dict[str, Any]:
        """Scrape /metrics (Volcano's names: cycles and cycle time, the task-latency histogram)."""
        return await asyncio.to_thread(scrape, self.port)

    async def wait_cycle(self, timeout: float = 300.0) -> float:
        """Wait until a first cycle has ended (caches synced); return seconds since the process started."""
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"vc-scheduler exited {self.proc.returncode}: {self.tail()}")
            with contextlib.suppress(OSError):
                if (await self.metrics()).get("cycle_count", 0) >= 1:
                    return time.monotonic() - self.started
            if time.monotonic() > deadline:
                raise TimeoutError(f"vc-scheduler ran no cycle in {timeout:.0f}s: {self.tail()}")
            await asyncio.sleep(0.2)


@contextlib.contextmanager
def _rest(kubeconfig: Path) -> Iterator[Rest]:
    """Yield the e2e harness' REST client on the cluster; a failure of the parity helpers is a RuntimeError."""
    api = kubernetes.config.new_client_from_config(config_file=str(kubeconfig))
    try:
        yield Rest(api)
    except pytest.fail.Exception as exc:  # they fail a test; here it is a phase error
        raise RuntimeError(str(exc)) from None
    finally:
        api.close()


def _install(kubeconfig: Path, binary: str) -> list[str]:
    """Give the cluster Volcano's CRDs, its Open system queues and its PodGroup CRD shape; return the queues created."""
    with _rest(kubeconfig) as rest:
        install_volcano_crds(rest, binary)
        created = system_queues(rest)
        podgroup_status_subresource(rest, enabled=False)
        return created


def _uninstall(kubeconfig: Path, queues: list[str]) -> None:
    """Serve PodGroup status as a subresource again (py-volcano's CRD) and delete `queues`."""
    with _rest(kubeconfig) as rest:
        podgroup_status_subresource(rest, enabled=True)
        for name in queues:
            rest.delete("Queue", name)


@contextlib.asynccontextmanager
async def volcano_installed(cluster: BenchCluster, binary: str) -> AsyncIterator[None]:
    """Hold the cluster as Volcano's installation leaves it; put py-volcano's shape back afterwards."""
    created = await asyncio.to_thread(_install, cluster.kubeconfig, binary)
    try:
        yield
    finally:
        await asyncio.to_thread(_uninstall, cluster.kubeconfig, created)


async def _all_inqueue(cluster: BenchCluster, namespace: str, count: int, timeout: float = 600.0) -> float:
    """Wait until vc-scheduler has moved the `count` PodGroups of `namespace` past Pending; return the seconds."""
    began = time.monotonic()
    while True:
        body = await cluster.ok("GET", PODGROUPS.format(ns=namespace), params={"resourceVersion": "0"})
        phases = [(group.get("status") or {}).get("phase") for group in body.get("items") or []]
        if len(phases) >= count and all(phase not in (None, "", "Pending") for phase in phases):
            return time.monotonic() - began
        if time.monotonic() - began > timeout:
            left = sum(phase in (None, "", "Pending") for phase in phases)
            raise TimeoutError(f"{left} of {count} PodGroups still Pending after {timeout:.0f}s")
        await asyncio.sleep(1.0)


def scheduler_figures(first: dict[str, Any], last: dict[str, Any]) -> dict[str, Any]:
    """Return vc-scheduler's own figures between two scrapes: cycles, mean cycle, task-latency p99."""
    cycles = last.get("cycle_count", 0.0) - first.get("cycle_count", 0.0)
    cycle_ms = last.get("cycle_ms_sum", 0.0) - first.get("cycle_ms_sum", 0.0)
    p99 = histogram_quantile(bucket_delta(last["latency_buckets"], first["latency_buckets"]), 0.99)
    return {
        "cycles": int(cycles),
        "mean_cycle_s": round(cycle_ms / cycles / 1000, 3) if cycles else None,
        "hist_p99_latency_s": round(p99, 3) if p99 is not None else None,
    }


async def measure(cluster: BenchCluster, vc: VcScheduler, *, pods: int) -> tuple[dict[str, Any], str]:
    """Create each pod's PodGroup and wait until all are Inqueue, then create the pods at once and watch
    them being bound (bench/e2e.py's figures); return (figures, namespace)."""
    namespace = await cluster.namespace(f"volcano-{secrets.token_hex(2)}")
    names = [f"p-{i:05d}" for i in range(pods)]
    bodies = [pod_manifest(name, scheduler=SCHEDULER, group=f"podgroup-{name}") for name in names]
    groups = [podgroup_for(body, f"podgroup-{body['metadata']['name']}", namespace) for body in bodies]
    figures: dict[str, Any] = {"phase": "volcano", "scheduler": "vc-scheduler", "nodes": len(cluster.nodes)}
    figures["podgroups_create_s"] = (await cluster.create_all(PODGROUPS.format(ns=namespace), groups))["seconds"]
    figures["podgroups_inqueue_s"] = round(await _all_inqueue(cluster, namespace, pods), 1)
    load_before = load_average()
    first, counters = await vc.metrics(), await cluster.api_counters()
    async with (
        PodWatch(cluster.kubeconfig, namespace, expect=pods) as watch,
        cpu_meter(cluster, figures, {"vc-scheduler": vc.pid}),
    ):
        created = await cluster.create_all(f"/api/v1/namespaces/{namespace}/pods", bodies)
        result = await watch.result()
    figures |= summarise(result, created, pods)
    figures["volcano"] = scheduler_figures(first, await vc.metrics())
    if result.bound:  # CPU and API requests per bound pod (the most frequent first), as bench/e2e.py has them
        figures["cpu_ms_per_pod"] = {k: round(1000 * v / len(result.bound), 2) for k, v in figures["cpu_s"].items()}
        after = await cluster.api_counters()
        after.pop("terminated pod watches", None)
        per_pod = sorted(((v - counters.get(k, 0.0)) / len(result.bound), k) for k, v in after.items())
        figures["api_requests_per_pod"] = {k: round(v, 3) for v, k in reversed(per_pod) if v >= 0.01}
    figures["load_average"] = load_before
    return figures, namespace


async def volcano_phase(cluster: BenchCluster, *, pods: int) -> dict[str, Any]:
    """Schedule `pods` one-pod jobs with vc-scheduler (`VOLCANO_SCHEDULER`); stop it and clean up afterwards."""
    binary = configured_binary()
    if binary is None or not os.access(binary, os.X_OK):
        raise RuntimeError(f"{BINARY_ENV}={binary or ''} is not an executable vc-scheduler")
    async with volcano_installed(cluster, binary):
        vc = VcScheduler(binary, cluster)
        try:
            ready_s = await vc.wait_cycle()
            figures, namespace = await measure(cluster, vc, pods=pods)
            figures["ready_s"] = round(ready_s, 2)
            figures["rss_mib"] = memory_mib(vc.pid).get("VmHWM")
        finally:
            await vc.stop()
        await cluster.delete_namespace(namespace)
    return figures


async def run(*, nodes: tuple[int, ...], pods: int, lease_seconds: int) -> dict[str, Any]:
    """Start a plane and run the phase at each node count; return the report."""
    cluster = BenchCluster(lease_seconds=lease_seconds)
    report: dict[str, Any] = {"machine": machine(), "code": code_version(), "load_average_start": load_average()}
    report["phases"] = []
    try:
        report["control_plane_start_s"] = round(await cluster.start(), 1)
        for count in nodes:
            report[f"nodes_{count}"] = await cluster.scale_nodes(count)
            report["phases"].append(await volcano_phase(cluster, pods=pods))
            print_table([table_row(report["phases"][-1])], COLUMNS)
    finally:
        report["load_average_end"] = load_average()
        await cluster.stop()
    return report


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse the arguments, run, print the table (and JSON with --json)."""
    parser = argparse.ArgumentParser(prog="python -m bench volcano", description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", default="5000", help="comma list of node counts")
    parser.add_argument("--pods", type=int, default=10_000, help="one-pod jobs per phase")
    parser.add_argument("--lease-seconds", type=int, default=1200, help="kwok node Lease duration (40: default)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if configured_binary() is None:
        sys.exit(f"{BINARY_ENV} is unset: name a vc-scheduler binary (docs/parity.md)")
    nodes = tuple(int(n) for n in args.nodes.split(","))
    report = asyncio.run(run(nodes=nodes, pods=args.pods, lease_seconds=args.lease_seconds))
    if args.json:
        print(json.dumps(report))
    return report


if __name__ == "__main__":
    main()
