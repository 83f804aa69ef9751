"""Shards: the e2e `single` workload scheduled by 1, 2 and 4 `py-volcano run` instances, each owning a
NodeShard (`shard.volcano.sh/v1alpha1`) of the cluster's nodes (issue 16, `shards_pods_per_s_{1,2,4}`).

For N instances the kwok nodes are labelled `bench.py-volcano.io/shard=<i>` round-robin (i = 0..N-1),
`sync_node_shards` fills NodeShard `shard-<i>` from each label, and N fresh processes start with
`--scheduler-sharding-mode=hard --scheduler-sharding-name=shard-<i>`. With one instance it is sharded
too, over every node, so the three runs pay the same per-node shard mask and NodeShard poll. Every
instance has the same `schedulerName`: the pods are not split, each instance may place any of them on
its own nodes, and the API server refuses the second Binding of a pod with 409 (a conflict).

The instances log at debug level, so every bind is a `task_bound` line with its node; after the phase
the bench checks that no instance bound a pod to a node outside its shard (`outside_shard`), that no
pod was bound by two instances or twice (`bound_twice`), that each logged node is the pod's node
(`node_differs`) and that every bound pod was logged by one instance (`unattributed`). Per instance:
binds and bind errors (`volcano_pod_binds_total`), 409s and other failures (`bind_failed` lines by
status), CPU seconds over the phase, cycles and peak RSS. The window, p50/p99 and the control plane's
CPU per pod are `bench.e2e.measure_phase`'s, as for every phase.

Usage: python -m bench shards [--nodes 1000] [--pods 10000] [--instances 1,2,4] [--no-null]
       [--lease-seconds 1200] [--json]
(without `--no-null` the null scheduler runs the same workload first, for its figure beside.)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import secrets
import time
from collections import Counter
from typing import Any

from bench.cluster import (
    CREATE_CONCURRENCY,
    BenchCluster,
    PyVolcano,
    Sampler,
    code_version,
    gather_limited,
    load_average,
    machine,
)
from bench.e2e import SCHEDULER, measure_phase
from bench.report import print_table, ratio
from bench.side_by_side import null_phase
from py_volcano.api import NODE_SHARD_PATH
from py_volcano.cache.shards import sync_node_shards

__all__ = ["INSTANCES", "main", "print_shards", "shards_phase", "speedups"]

INSTANCES = (1, 2, 4)
"""Instance counts `bench all` measures."""
SHARD_LABEL = "bench.py-volcano.io/shard"
_MERGE_PATCH = "application/merge-patch+json"


async def shard_nodes(cluster: BenchCluster, instances: int) -> dict[str, list[str]]:
    """Label the cluster's nodes round-robin into `instances` groups and fill NodeShard `shard-<i>` from
    group i's label; return the nodes of each NodeShard."""

    async def label(node: str, group: int) -> None:
        body = {"metadata": {"labels": {SHARD_LABEL: str(group)}}}
        await cluster.ok("PATCH", f"/api/v1/nodes/{node}", body, content_type=_MERGE_PATCH)

    calls = [functools.partial(label, node, i % instances) for i, node in enumerate(cluster.nodes)]
    await gather_limited(calls, CREATE_CONCURRENCY)
    deadline = time.monotonic() + 60
    while (await cluster.api.request("GET", NODE_SHARD_PATH, params={"limit": "1"}))[0] != 200:
        if time.monotonic() > deadline:
            raise TimeoutError("the NodeShard CRD is not served after 60 s")
        await asyncio.sleep(0.5)
    selectors = [(f"shard-{i}", f"{SHARD_LABEL}={i}") for i in range(instances)]
    return await sync_node_shards(cluster.api, selectors)


def logged(proc: PyVolcano, event: str) -> list[dict[str, Any]]:
    """Return the JSON log lines of `event` the process wrote so far."""
    lines = []
    with contextlib.suppress(OSError):
        for text in proc.log_path.read_text(errors="replace").splitlines():
            try:
                line = json.loads(text)
            except ValueError:
                continue
            if isinstance(line, dict) and line.get("event") == event:
                lines.append(line)
    return lines


async def start_instances(cluster: BenchCluster, shards: dict[str, list[str]]) -> list[PyVolcano]:
    """Start one sharded py-volcano per NodeShard; return them once each has read its nodes and run a cycle."""
    tag = f"{len(shards)}-{len(cluster.nodes)}-{secrets.token_hex(2)}"
    procs = [
        PyVolcano(
            cluster.kubeconfig,
            cluster.work_dir / "py-volcano-logs",
            name=f"{name}-of-{tag}",
            extra=("--scheduler-sharding-mode=hard", f"--scheduler-sharding-name={name}", "--log-level=debug"),
        )
        for name in shards
    ]
    try:
        for proc, nodes in zip(procs, shards.values(), strict=True):
            await proc.wait_ready()
            deadline = time.monotonic() + 60
            while not any(line.get("nodes") == len(nodes) for line in logged(proc, "node_shard_changed")):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{proc.log_path.name} did not read its {len(nodes)} nodes: {proc.tail()}")
                await asyncio.sleep(0.2)
            while (await proc.metrics())["cycles"] < 1:
                await asyncio.sleep(0.1)
    except BaseException:
        await asyncio.gather(*(proc.stop() for proc in procs))
        raise
    return procs


async def pod_nodes(cluster: BenchCluster, namespace: str) -> dict[str, str]:
    """Return `namespace/name` -> node ("" when unbound) of every pod of `namespace`."""
    out: dict[str, str] = {}
    params = {"limit": "2000"}
    while True:
        body = await cluster.ok("GET", f"/api/v1/namespaces/{namespace}/pods", params=params)
        for pod in body.get("items") or []:
            out[f"{namespace}/{pod['metadata']['name']}"] = (pod.get("spec") or {}).get("nodeName") or ""
        token = (body.get("metadata") or {}).get("continue")
        if not token:
            return out
        params = {"limit": "2000", "continue": token}


def check_binds(
    placed: dict[str, str], shards: dict[str, list[str]], binds: list[list[tuple[str, str]]]
) -> dict[str, int]:
    """Count the binds that break sharding: `binds[i]` is instance i's logged (pod, node) pairs for the
    pods of `placed` (pod -> node it is on), `shards` the nodes of each instance's NodeShard, in order."""
    outside = differs = 0
    times = Counter(task for pairs in binds for task, _ in pairs)
    for nodes, pairs in zip(shards.values(), binds, strict=True):
        own = set(nodes)
        outside += sum(node not in own for _, node in pairs)
        differs += sum(placed.get(task) != node for task, node in pairs)
    return {
        "outside_shard": outside,
        "bound_twice": sum(n > 1 for n in times.values()),
        "node_differs": differs,
        "unattributed": sum(bool(node) and task not in times for task, node in placed.items()),
    }


async def shards_phase(cluster: BenchCluster, *, instances: int, pods: int) -> dict[str, Any]:
    """Schedule the `single` workload of `pods` one-pod jobs with `instances` sharded py-volcano processes;
    return the phase's figures, each instance's and the sharding checks. Cleanup afterwards."""
    shards = await shard_nodes(cluster, instances)
    procs = await start_instances(cluster, shards)
    namespace = ""
    try:
        cpu_before = [proc.cpu_seconds() for proc in procs]
        async with contextlib.AsyncExitStack() as stack:
            samplers = [await stack.enter_async_context(Sampler(proc)) for proc in procs]
            figures, namespace = await measure_phase(
                cluster, name=f"shards-{instances}", scheduler=SCHEDULER, pods=pods
            )
        cpu = [round(proc.cpu_seconds() - before, 1) for proc, before in zip(procs, cpu_before, strict=True)]
        rss = [proc.memory_mib().get("VmHWM") for proc in procs]
        alive = [proc.proc.poll() is None for proc in procs]
        placed = await pod_nodes(cluster, namespace)
    finally:
        codes = await asyncio.gather(*(proc.stop() for proc in procs))
        for name in shards:
            await cluster.api.request("DELETE", f"{NODE_SHARD_PATH}/{name}")
    prefix = f"{namespace}/"
    binds = [
        [(str(x["task"]), str(x["node"])) for x in logged(p, "task_bound") if x["task"].startswith(prefix)]
        for p in procs
    ]
    detail = []
    for i, (name, proc) in enumerate(zip(shards, procs, strict=True)):
        failed = Counter(str(x.get("status")) for x in logged(proc, "bind_failed") if x["task"].startswith(prefix))
        detail.append(
            dict(samplers[i].summary())
            | {
                "shard": name,
                "nodes": len(shards[name]),
                "logged_binds": len(binds[i]),
                "conflicts_409": failed.pop("409", 0),
                "other_bind_failures": dict(failed),
                "cpu_s": cpu[i],
                "rss_mib": rss[i],
                "alive_at_end": alive[i],
                "exit_code": codes[i],
            }
        )
    bound = figures.get("bound") or 0
    scheduler_cpu = round(sum(cpu), 1)
    figures |= {
        "phase": "shards",
        "instances": instances,
        "sharding": "hard, one NodeShard per instance (with 1 instance: every node)",
        "by_instance": detail,
        "binds_by_instance": "/".join(str(d["binds"]) for d in detail),
        "conflicts_409": sum(d["conflicts_409"] for d in detail),
        "bind_errors": sum(d["bind_errors"] for d in detail),
        "scheduler_cpu_s": scheduler_cpu,
        "scheduler_cpu_ms_per_pod": round(1000 * scheduler_cpu / bound, 2) if bound else None,
        "apiserver_cpu_ms_per_pod": (figures.get("cpu_ms_per_pod") or {}).get("kube-apiserver"),
        "checks": check_binds(placed, shards, binds),
    }
    figures["sharding_ok"] = not any(figures["checks"].values()) and all(alive)
    await cluster.delete_namespace(namespace)
    return figures


def speedups(records: dict[str, dict[str, Any]], null: dict[str, Any] | None) -> dict[str, float | None]:
    """Return each instance count's pods/s over one instance's (`shards_N_over_1`) and over the null
    scheduler's (`shards_N_over_null`); records are keyed by the instance count as a string."""
    one = (records.get("1") or {}).get("pods_per_s")
    out: dict[str, float | None] = {}
    for count, record in records.items():
        rate = record.get("pods_per_s")
        if count != "1":
            out[f"shards_{count}_over_1"] = ratio(rate, one)
        out[f"shards_{count}_over_null"] = ratio(rate, (null or {}).get("pods_per_s"))
    return out


COLUMNS = (
    ("instances", "instances"),
    ("nodes", "nodes"),
    ("pods", "pods"),
    ("create_per_s", "created/s"),
    ("pods_per_s", "pods/s"),
    ("over_one", "x one"),
    ("over_null", "/ null"),
    ("bind_window_per_s", "binds/s(window)"),
    ("p50_latency_s", "p50 s"),
    ("p99_latency_s", "p99 s"),
    ("binds_by_instance", "binds by instance"),
    ("conflicts_409", "409s"),
    ("bind_errors", "bind errors"),
    ("scheduler_cpu_s", "sched CPU s"),
    ("apiserver_cpu_ms_per_pod", "API server ms/pod"),
    ("sharding_ok", "sharding ok"),
)


def print_shards(records: dict[str, dict[str, Any]], null: dict[str, Any] | None) -> None:
    """Print the shard phases as a table, the null scheduler's phase on the same workload as its last row."""
    ratios = speedups(records, null)
    rows = [
        record
        | {"over_one": ratios.get(f"shards_{count}_over_1"), "over_null": ratios.get(f"shards_{count}_over_null")}
        for count, record in records.items()
    ]
    if null:
        rows.append(null | {"instances": "null scheduler", "over_null": 1.0})
    print_table(rows, COLUMNS)


async def run(*, nodes: int, pods: int, instances: tuple[int, ...], lease_seconds: int, null: bool) -> dict[str, Any]:
    """Start a control plane with `nodes` kwok nodes; run the null scheduler (with `null`), then each shard
    phase; return the report."""
    cluster = BenchCluster(lease_seconds=lease_seconds)
    report: dict[str, Any] = {"machine": machine(), "code": code_version(), "load_average_start": load_average()}
    try:
        report["control_plane_start_s"] = round(await cluster.start(), 1)
        report["scale"] = await cluster.scale_nodes(nodes)
        if null:
            report["null"] = await null_phase(cluster, pods=pods)
        report["shards"] = {}
        for count in instances:
            report["shards"][str(count)] = await shards_phase(cluster, instances=count, pods=pods)
    finally:
        report["control_plane_rss_mib"] = cluster.component_rss_mib()
        report["load_average_end"] = load_average()
        await cluster.stop()
    report["ratios"] = speedups(report["shards"], report.get("null"))
    report |= {f"shards_pods_per_s_{n}": r.get("pods_per_s") for n, r in report["shards"].items()}
    print_shards(report["shards"], report.get("null"))
    return report


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse the arguments, run, print the table (and JSON with --json)."""
    parser = argparse.ArgumentParser(prog="python -m bench shards", description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--instances", default=",".join(map(str, INSTANCES)), help="comma list of instance counts")
    parser.add_argument("--no-null", action="store_true", help="skip the null scheduler's phase")
    parser.add_argument("--lease-seconds", type=int, default=1200, help="kwok node Lease duration (40: default)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    report = asyncio.run(
        run(
            nodes=args.nodes,
            pods=args.pods,
            instances=tuple(int(n) for n in args.instances.split(",")),
            lease_seconds=args.lease_seconds,
            null=not args.no_null,
        )
    )
    if args.json:
        print(json.dumps(report))
    return report


if __name__ == "__main__":
    main()
