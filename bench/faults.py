"""`python -m bench faults [--nodes 500] [--pods 2000] [--kills 5] [--faults a,b] [--json]`: each fault
of `e2e/faults.py` played once on a bigger cluster, timed (issue 17).

On one control plane with `--nodes` kwok nodes (32 CPU each), every fault gets a namespace, a scheduler
name and a burst of `--pods` pods of its own (6 CPU each, so that 5 fit a node: the burst fills 80% of
the cluster; a fifth of the pods are gangs of 8; two pods no node can hold), and its own `py-volcano run`:

1. `etcd SIGKILL`: etcd killed once the first pod is bound, started again 3 s later on the same data;
2. `kube-apiserver stopped`: stopped (SIGTERM, SIGKILL after 3 s) with the whole burst pending, started
   again 20 s later;
3. `kube-apiserver restart under load`: stopped and started at once while the burst is being scheduled;
4. `leader SIGKILL`: two replicas under leader election, the leader SIGKILLed `--kills` times during a
   burst spread over the takeovers, a fresh standby started each time.

For each: `down_s` (fault to start), `ready_s` (start to health check passed),
`first_bind_after_back_s` and `all_bound_after_back_s` (from the start, or the new leader's election, to
the first and the last bind the schedulers logged; `created_all_after_back_s`: when the burst's last pod
was created, which the last bind cannot precede), and the audit of `e2e/fault_audit.py`: pods bound
twice, pods moved, binds of bound pods refused, overcommitted nodes, pods pending that fit (all must be
0). Not part of `bench all`: the faults take about six minutes of their own.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import sys
import time
from collections.abc import Callable
from typing import Any

from kubernetes import client, config

from bench.cluster import BenchCluster, code_version, load_average, machine
from bench.report import print_table
from e2e.faults import Load, Outcome, Probe, apiserver_restart, apiserver_stop, etcd_kill, leader_kill
from e2e.harness import Rest, create_namespace, delete_namespace, token

__all__ = ["FAULTS", "main", "run"]

#: The faults `--faults` may name, in the order they are played.
FAULTS = ("etcd-kill", "apiserver-stop", "apiserver-restart", "leader-kill")

COLUMNS = (
    ("fault", "fault"),
    ("down_s", "down s"),
    ("ready_s", "ready s"),
    ("first_bind_after_back_s", "first bind s"),
    ("all_bound_after_back_s", "all bound s"),
    ("created_all_after_back_s", "all created s"),
    ("bound", "bound"),
    ("double_binds", "double"),
    ("refused_binds", "refused"),
    ("overcommitted", "overcommitted"),
    ("pending_that_fit", "pending fit"),
)


def rest_client(kubeconfig: str) -> Rest:
    """A plain-dict REST client with a connection per creating thread."""
    configuration = client.Configuration()
    config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
    configuration.connection_pool_maxsize = 16
    return Rest(client.ApiClient(configuration))


def play(
    cluster: BenchCluster, rest: Rest, fault: Callable[[Probe, Load], Outcome], load: Load, timeout: float
) -> dict[str, Any]:
    """Play one fault in a fresh namespace; empty the namespace afterwards (not timed)."""
    namespace = create_namespace(rest, token("fault"))
    probe = Probe(cluster.plane, rest, namespace, token("pv"), cluster.nodes, timeout=timeout)
    try:
        outcome = fault(probe, load)
    finally:
        for process in probe.schedulers:
            if process.proc.poll() is None:
                process.kill()
        rest.request("DELETE", Rest.path("Pod", namespace), {"gracePeriodSeconds": 0})
        delete_namespace(rest, namespace, wait=False)
    summary = outcome.summary()
    summary["problems"] = outcome.problems()
    return summary


def faults_named(names: list[str], kills: int) -> list[Callable[[Probe, Load], Outcome]]:
    """Return the faults to play, in the order of FAULTS."""
    by_name: dict[str, Callable[[Probe, Load], Outcome]] = {
        "etcd-kill": etcd_kill,
        "apiserver-stop": apiserver_stop,
        "apiserver-restart": apiserver_restart,
        "leader-kill": lambda probe, load: leader_kill(probe, load, kills=kills),
    }
    return [fault for name, fault in by_name.items() if name in names]


async def run(
    nodes: int, load: Load, faults: list[Callable[[Probe, Load], Outcome]], *, lease_seconds: int, timeout: float
) -> dict[str, Any]:
    """Start the cluster, play the faults, stop; return the figures by fault (and any error)."""
    cluster = BenchCluster(lease_seconds=lease_seconds)
    report: dict[str, Any] = {"faults": [], "errors": []}
    try:
        report["control_plane_start_s"] = round(await cluster.start(), 1)
        report["nodes_scale"] = await cluster.scale_nodes(nodes)
        rest = rest_client(str(cluster.kubeconfig))
        for fault in faults:
            began = time.monotonic()
            try:
                summary = await asyncio.to_thread(play, cluster, rest, fault, load, timeout)
            except Exception as exc:  # one fault failing must not hide the others' figures
                message = f"{type(exc).__name__}: {exc}"
                print(f"fault failed: {message}", file=sys.stderr, flush=True)
                report["errors"].append(message)
                continue
            summary["phase_s"] = round(time.monotonic() - began, 1)
            report["faults"].append(summary)
            print(json.dumps(summary), flush=True)
    finally:
        await cluster.stop()
    return report


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse the arguments, run, print the table (and the JSON with --json)."""
    parser = argparse.ArgumentParser(prog="python -m bench faults", description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=2000, help="pods per fault (a fifth in gangs of 8)")
    parser.add_argument("--kills", type=int, default=5, help="leader SIGKILLs")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds each step may take")
    parser.add_argument("--lease-seconds", type=int, default=1200, help="kwok node Lease duration (40: default)")
    parser.add_argument("--faults", default=",".join(FAULTS), help="comma list of faults to play (default: all)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    names = args.faults.split(",")
    unknown = sorted(set(names) - set(FAULTS))
    if unknown:
        parser.error(f"unknown faults {unknown}: choose among {', '.join(FAULTS)}")
    gangs = args.pods // 5 // 8
    load = Load(singles=args.pods - gangs * 8, gangs=gangs, gang_size=8, cpu="6", memory="1Gi")
    started = datetime.datetime.now(datetime.UTC)
    report: dict[str, Any] = {
        "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        "command": "python -m bench faults " + " ".join(argv or []),
        "machine": machine(),
        "code": code_version(),
        "load_average_start": load_average(),
        "nodes": args.nodes,
        "load": {
            "singles": load.singles,
            "gangs": load.gangs,
            "gang_size": load.gang_size,
            "cpu": load.cpu,
            "unfit": load.unfit,
            "leader_kills": args.kills,
            "faults": names,
        },
    }
    faults = faults_named(names, args.kills)
    report |= asyncio.run(run(args.nodes, load, faults, lease_seconds=args.lease_seconds, timeout=args.timeout))
    report["load_average_end"] = load_average()
    print_table(report["faults"], COLUMNS)
    for summary in report["faults"]:
        for kill in summary.get("kills") or []:
            print(f"leader kill: takeover {kill['takeover_s']} s, first bind {kill['first_bind_s']} s after it")
    if args.json:
        print(json.dumps(report))
    return report
