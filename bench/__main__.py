"""`python -m bench all [--quick] [--repeat N] [--json]`: every benchmark of issue 6 in one run, on one
control plane, printing the tables and one JSON object; or `python -m bench NAME ARGS...` for one of
`inmem`, `network_topology`, `large_cluster`, `e2e`, `side_by_side`, `backlog`, `volcano`, `shards`, `steady`, `faults`,
`predicates`, `preempt`, `profile` (`faults`, six minutes of control-plane faults, is not part of `all`).

`all` runs, in this order:

1. the in-memory cycle at `--inmem-size` (5,000 nodes x 50,000 pods), before the control plane starts, and
   the in-memory cycle with network-topology-aware on a three-tier HyperNode tree against the same cluster
   without it (`bench.network_topology`: 1,000 and 5,000 nodes; quick 1,000), and the cycle that places
   100 new pods in a cluster of 5,000 nodes and 150,000 bound pods, then as many placed one by one by the
   fast path (`bench.large_cluster`, in its own process so its peak RSS is its own; quick 1,000 nodes x
   30,000 pods);
2. a control plane with kwok nodes; at each node count (1,000 then 5,000; `--quick`: 1,000), `--repeat`
   times, interleaved: py-volcano `single` (10,000 one-pod jobs; quick 2,000), py-volcano `gang`
   (20 x 500; quick 4 x 500), kube-scheduler on the `single` workload, when `VOLCANO_SCHEDULER` names a
   vc-scheduler binary Volcano's own scheduler on it (`bench.volcano`, each pod in a PodGroup as Volcano's
   controller would make; `volcano_pods_per_s`, absent otherwise), the bind ceiling;
   the null scheduler (`bench.null_scheduler`: binds each pod as soon as it is seen, on the same
   workload); the medians are reported; after the first node count's phases, the backlog phase
   (`bench.backlog`: 20,000 pods that never fit, then a stream of small pods; quick 5,000) gives
   `backlog_small_pod_p99_s`; at the largest node count, the steady phases (`bench.steady`: 150 pods/s
   for 60 s, quick 50 for 20 s) by py-volcano and by kube-scheduler in turn, `--repeat` times (medians),
   then the shard phases, once (`bench.shards`:
   the `single` workload scheduled by 1, 2 and 4 `py-volcano run` instances in hard sharding mode, each
   owning a NodeShard of the nodes; `shards_pods_per_s_{1,2,4}`, printed beside the null scheduler's figure);
3. with `--profile`, one more py-volcano `single` phase at the largest node count under py-spy,
   summarised by part (its figures are not used: the profiler perturbs them);
4. the restart at the largest node count (150,000 pods, 5,000 pending: issue 16's scale; quick 10,000 and
   1,000): `first_bind_after_restart_s`, and `first_bind_after_restart_150k_s` when the cluster held
   150,000 pods (null otherwise).

The headline keys are the figures at the largest node count. Every figure is measured in that run.
`machine_reference_s` (10 million integer additions in a Python loop, timed at the start and at the end)
says how fast this host was during the run; in-memory figures are also given normalised by it.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import gc
import importlib
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import backlog, e2e, faults, inmem, large_cluster, network_topology, shards, side_by_side, steady, volcano
from bench.backlog import BacklogLoad, backlog_phase, print_backlog
from bench.cluster import BenchCluster, code_version, load_average, machine
from bench.e2e import COLUMNS, Workload, print_restart, restart_phase, table_row, volcano_phase
from bench.profile import PySpy, print_summary, summarise
from bench.profile import main as profile_main
from bench.report import median_of, print_table, ratio
from bench.shards import INSTANCES as SHARD_INSTANCES
from bench.shards import print_shards, shards_phase
from bench.side_by_side import ceiling_phase, kube_scheduler_phase, null_phase, ratios
from bench.steady import WHO, steady_pairs
from py_volcano.logs import configure_logging

RSS_LIMIT_MIB = 1536.0
STEADY_COLUMNS = (
    ("scheduler", "steady"),
    ("rate_per_s", "rate/s"),
    ("bound", "bound"),
    ("p50_latency_s", "p50 s"),
    ("p99_latency_s", "p99 s"),
)
REPO = Path(__file__).resolve().parent.parent


def machine_reference() -> float:
    """Return the seconds this host takes for a fixed pure-Python workload: 10 million integer additions."""
    began = time.perf_counter()
    total = 0
    for i in range(10_000_000):
        total += i
    return round(time.perf_counter() - began, 3)


def measure_inmem(size: str) -> dict[str, Any]:
    """Run the in-memory cycle once at `NODESxPODS`."""
    nodes, pods = (int(x) for x in size.split("x"))
    configure_logging("warning", "console")
    row = inmem.measure(nodes, pods)
    gc.collect()
    print_table(
        [row],
        (
            ("nodes", "nodes"),
            ("pending_pods", "pods"),
            ("snapshot_s", "snapshot s"),
            ("cycle_s", "cycle s"),
            ("bound", "bound"),
            ("pods_per_s", "pods/s"),
        ),
    )
    return row


def measure_large_cluster(nodes: int, bound: int) -> dict[str, Any]:
    """Run `bench.large_cluster` in a fresh process (its VmHWM is then its own); an error record on failure."""
    command = [sys.executable, "-m", "bench.large_cluster", "--nodes", str(nodes), "--bound", str(bound), "--json"]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=False)
    lines = done.stdout.splitlines()
    print("\n".join(lines[:-1]), flush=True)
    if done.returncode != 0 or not lines:
        message = f"large_cluster: exit {done.returncode}: {done.stderr.strip()[-500:]}"
        print(f"phase failed: {message}", file=sys.stderr, flush=True)
        return {"error": message}
    report: dict[str, Any] = json.loads(lines[-1])
    return report


async def attempt(what: str, phase: Any, errors: list[str]) -> dict[str, Any]:
    """Await one phase; on failure record the error and return an empty record, so the run goes on."""
    try:
        result: dict[str, Any] = await phase
    except Exception as exc:
        message = f"{what}: {type(exc).__name__}: {exc}"
        print(f"phase failed: {message}", file=sys.stderr, flush=True)
        errors.append(message)
        return {"phase": what, "error": message}
    return result


async def run_all(
    workload: Workload,
    *,
    repeat: int,
    qps: int,
    lease_seconds: int,
    profile: Path | None,
    backlog_load: BacklogLoad,
) -> dict[str, Any]:
    """Run the control-plane phases; return them by node count, the backlog, the restart and the profile."""
    cluster = BenchCluster(lease_seconds=lease_seconds)
    vc_binary = volcano.configured_binary()
    report: dict[str, Any] = {"by_nodes": {}, "errors": []}
    errors: list[str] = report["errors"]
    try:
        report["control_plane_start_s"] = round(await cluster.start(), 1)
        for count in workload.nodes:
            scaled = await cluster.scale_nodes(count)
            runs: dict[str, list[dict[str, Any]]] = {
                "py-volcano": [],
                "gang": [],
                "kube-scheduler": [],
                **({"volcano": []} if vc_binary else {}),
                "ceiling": [],
                "null": [],
            }
            for _ in range(repeat):
                phases = {
                    "py-volcano": volcano_phase(cluster, name="single", pods=workload.pods),
                    "gang": volcano_phase(
                        cluster, name="gang", pods=0, gangs=workload.gangs, gang_size=workload.gang_size
                    ),
                    "kube-scheduler": kube_scheduler_phase(cluster, pods=workload.pods, qps=qps),
                    **({"volcano": volcano.volcano_phase(cluster, pods=workload.pods)} if vc_binary else {}),
                    "ceiling": ceiling_phase(cluster, pods=workload.pods),
                    "null": null_phase(cluster, pods=workload.pods),
                }
                for name, phase in phases.items():
                    runs[name].append(await attempt(f"{name} at {count} nodes", phase, errors))
            result: dict[str, Any] = {"nodes": count, "scale": scaled}
            for name, records in runs.items():
                measured = [r for r in records if "error" not in r] or records
                result[name] = median_of(measured) | {"all": records}
            result["ratios"] = ratios(result["py-volcano"], result["kube-scheduler"], result["ceiling"])
            rates = (result["py-volcano"].get("pods_per_s"), result["null"].get("pods_per_s"))
            result["ratios"]["e2e_over_null"] = ratio(*rates)
            result["ratios"]["gang_over_single"] = (
                round(result["gang"]["pods_per_s"] / result["py-volcano"]["pods_per_s"], 3)
                if result["gang"].get("pods_per_s") and result["py-volcano"].get("pods_per_s")
                else None
            )
            print_table([table_row(result[n]) for n in runs], COLUMNS)
            for key, value in result["ratios"].items():
                print(f"{key}: {value}")
            print(flush=True)
            report["by_nodes"][str(count)] = result
            if count == max(workload.nodes):
                report["steady"] = await attempt(
                    "steady",
                    steady_pairs(
                        cluster, rate=workload.steady_rate, seconds=workload.steady_seconds, qps=qps, repeat=repeat
                    ),
                    errors,
                )
                print_table([report["steady"].get(who) or {} for who in WHO], STEADY_COLUMNS)
                report["shards"] = {
                    str(n): await attempt(f"shards {n}", shards_phase(cluster, instances=n, pods=workload.pods), errors)
                    for n in SHARD_INSTANCES
                }
                print_shards(report["shards"], result["null"])
            if count == workload.nodes[0]:
                report["backlog"] = await attempt("backlog", backlog_phase(cluster, backlog_load), errors)
                print_backlog(report["backlog"])
        if profile is not None:
            if PySpy.available() is None:
                report["profile"] = {"error": "py-spy is not installed"}
            else:
                profiled = await attempt(
                    "profile", volcano_phase(cluster, name="single", pods=workload.pods, profile=profile), errors
                )
                summary = summarise(profile) if profile.exists() else {}
                if summary:
                    print_summary(summary, top=20)
                report["profile"] = {"phase": profiled, "summary": summary}
        report["restart"] = await attempt(
            "restart",
            restart_phase(cluster, total=workload.restart_pods, pending=workload.restart_pending),
            errors,
        )
        print_restart(report["restart"])
    finally:
        report["control_plane_rss_mib"] = cluster.component_rss_mib()
        await cluster.stop()
    return report


def headline(report: dict[str, Any], workload: Workload, full_size: bool) -> dict[str, Any]:
    """Return the keys of issue 6 and the targets, from the largest node count."""
    largest = report["by_nodes"][str(max(workload.nodes))]
    single, gang = largest["py-volcano"], largest["gang"]
    kube, ceiling, restart = largest["kube-scheduler"], largest["ceiling"], report["restart"]
    null, steady = largest.get("null") or {}, report.get("steady") or {}
    shard_runs = report.get("shards") or {}
    steady_volcano, steady_kube = steady.get("py-volcano") or {}, steady.get("kube-scheduler") or {}
    reference = report.get("machine_reference_s")
    inmem_rate = report["inmem"].get("pods_per_s")
    rss_all = [
        r.get("rss_mib") for n in report["by_nodes"].values() for k in ("py-volcano", "gang") for r in n[k]["all"]
    ]
    rss_all += [restart.get("rss_mib"), restart.get("rss_before_restart_mib")]
    rss = max((r for r in rss_all if r), default=None)
    keys = {
        "e2e_pods_per_s": single.get("pods_per_s"),
        "e2e_gang_pods_per_s": gang.get("pods_per_s"),
        "kube_scheduler_pods_per_s": kube.get("pods_per_s"),
        "bind_ceiling_pods_per_s": ceiling.get("pods_per_s"),
        "e2e_p50_latency_s": single.get("p50_latency_s"),
        "e2e_p99_latency_s": single.get("p99_latency_s"),
        "e2e_bind_window_pods_per_s": single.get("bind_window_per_s"),
        "e2e_scheduler_bind_rate_per_s": (single.get("volcano") or {}).get("bind_rate_per_s"),
        "inmem_pods_per_s_5k_nodes": inmem_rate,
        "inmem_pods_per_s_5k_nodes_normalised": round(inmem_rate * reference, 1) if inmem_rate and reference else None,
        "machine_reference_s": reference,
        "machine_reference_s_start": report.get("machine_reference_s_start"),
        "machine_reference_s_end": report.get("machine_reference_s_end"),
        "null_scheduler_pods_per_s": null.get("pods_per_s"),
        "e2e_over_null": largest["ratios"].get("e2e_over_null"),
        "steady_rate_pods_per_s": steady_volcano.get("rate_per_s"),
        "steady_p99_s": steady_volcano.get("p99_latency_s"),
        "kube_scheduler_steady_p99_s": steady_kube.get("p99_latency_s"),
        "first_bind_after_restart_s": restart.get("first_bind_s"),
        "first_bind_after_restart_150k_s": restart.get("first_bind_s") if workload.restart_pods >= 150_000 else None,
        "rss_mib": rss,
        "rss_mib_restart": restart.get("rss_mib"),
        "volcano_over_kube_scheduler": largest["ratios"]["volcano_over_kube_scheduler"],
        "volcano_over_ceiling": largest["ratios"]["volcano_over_ceiling"],
        "gang_over_single": largest["ratios"]["gang_over_single"],
        "nodes": largest["nodes"],
        "pods": workload.pods,
        "restart_pods": workload.restart_pods,
        "backlog_small_pod_p99_s": (report.get("backlog") or {}).get("p99_latency_s"),
        "large_cluster_cycle_s": report["large_cluster"].get("large_cluster_cycle_s"),
        "large_cluster_settling_cycle_s": report["large_cluster"].get("large_cluster_settling_cycle_s"),
        "large_cluster_rss_mib": report["large_cluster"].get("large_cluster_rss_mib"),
        "large_cluster_fast_path_s": report["large_cluster"].get("large_cluster_fast_path_s"),
        "large_cluster_fast_path_pod_ms": report["large_cluster"].get("large_cluster_fast_path_pod_ms"),
    } | {key: value for key, value in report["network_topology"].items() if key.startswith("network_topology_")}
    if "volcano" in largest:
        keys["volcano_pods_per_s"] = largest["volcano"].get("pods_per_s")
    steady_met = (
        None
        if keys["steady_p99_s"] is None or keys["kube_scheduler_steady_p99_s"] is None
        else keys["steady_p99_s"] <= keys["kube_scheduler_steady_p99_s"]
    )
    keys |= {f"shards_pods_per_s_{n}": (shard_runs.get(str(n)) or {}).get("pods_per_s") for n in SHARD_INSTANCES}
    keys["shards_2_over_1"] = ratio(keys["shards_pods_per_s_2"], keys["shards_pods_per_s_1"])
    keys["targets"] = {
        "e2e >= 0.9 x null scheduler": _at_least(keys["e2e_over_null"], 0.9),
        "e2e >= 1.5 x kube-scheduler": _at_least(keys["volcano_over_kube_scheduler"], 1.5),
        "steady p99 <= kube-scheduler's": steady_met,
        "in memory >= 15000 pods/s normalised at 5k nodes": _at_least(
            keys["inmem_pods_per_s_5k_nodes_normalised"], 15000
        ),
        "e2e >= 1000 pods/s": _at_least(keys["e2e_pods_per_s"], 1000),
        "e2e >= kube-scheduler": _at_least(keys["volcano_over_kube_scheduler"], 1.0),
        "gang within 20% of single": _at_least(keys["gang_over_single"], 0.8),
        "e2e >= 70% of bind ceiling": _at_least(keys["volcano_over_ceiling"], 0.7),
        "in memory >= 5000 pods/s at 5k nodes": _at_least(keys["inmem_pods_per_s_5k_nodes"], 5000),
        "first bind after restart <= 30 s": _at_most(keys["first_bind_after_restart_s"], 30),
        "first bind after restart with 150,000 pods <= 30 s": _at_most(keys["first_bind_after_restart_150k_s"], 30),
        "small pods past a backlog that never fits: p99 < 2 s": _at_most(keys["backlog_small_pod_p99_s"], 2.0),
        "RSS < 1.5 GiB (restart, everything cached)": _at_most(keys["rss_mib_restart"], RSS_LIMIT_MIB),
        "network-topology-aware at most 2x the cycle at 1k nodes": _at_most(keys.get("network_topology_ratio_1k"), 2.0),
        "large cluster cycle <= 0.2 s": _at_most(keys["large_cluster_cycle_s"], 0.2),
        "large cluster RSS < 1.5 GiB": _at_most(keys["large_cluster_rss_mib"], RSS_LIMIT_MIB),
        "2 shards >= 1.6 x one": _at_least(keys["shards_2_over_1"], 1.6),
    }
    keys["targets_at_issue_size"] = full_size
    return keys


def _at_least(value: float | None, bound: float) -> bool | None:
    return None if value is None else value >= bound


def _at_most(value: float | None, bound: float) -> bool | None:
    return None if value is None else value <= bound


def main_all(argv: list[str]) -> dict[str, Any]:
    """`python -m bench all`."""
    parser = argparse.ArgumentParser(prog="python -m bench all", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000 nodes, 2,000 pods: a couple of minutes")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each phase; medians are reported")
    parser.add_argument("--nodes", help="comma list of node counts (default 1000,5000; quick 1000)")
    parser.add_argument("--pods", type=int, help="one-pod jobs per phase")
    parser.add_argument("--inmem-size", default="5000x50000", help="NODESxPODS of the in-memory cycle")
    parser.add_argument("--kube-scheduler-qps", type=int, default=5000, help="0: kube-scheduler's stock 50/100")
    parser.add_argument("--lease-seconds", type=int, default=1200, help="kwok node Lease duration (40: default)")
    parser.add_argument("--profile", type=Path, help="also run one py-volcano phase under py-spy, recording here")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--out", type=Path, help="also write the JSON here (default .e2e/bench-all-<time>.json)")
    args = parser.parse_args(argv)
    workload = Workload.quick() if args.quick else Workload()
    if args.nodes:
        workload = Workload(**(workload.__dict__ | {"nodes": tuple(int(n) for n in args.nodes.split(","))}))
    if args.pods:
        workload = Workload(**(workload.__dict__ | {"pods": args.pods}))
    backlog_load = BacklogLoad.quick() if args.quick else BacklogLoad()
    started = datetime.datetime.now(datetime.UTC)
    report: dict[str, Any] = {
        "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        "command": "python -m bench all " + " ".join(argv),
        "machine": machine(),
        "code": code_version(),
        "load_average_start": load_average(),
        "workload": workload.__dict__
        | {"repeat": args.repeat, "kube_scheduler_qps": args.kube_scheduler_qps, "lease_seconds": args.lease_seconds}
        | {"backlog": backlog_load.__dict__},
    }
    report["machine_reference_s_start"] = machine_reference()
    report["inmem"] = measure_inmem(args.inmem_size)
    report["network_topology"] = network_topology.main(["--sizes", "1000" if args.quick else "1000,5000"])
    report["large_cluster"] = measure_large_cluster(*((1000, 30_000) if args.quick else (5000, 150_000)))
    report |= asyncio.run(
        run_all(
            workload,
            repeat=args.repeat,
            qps=args.kube_scheduler_qps,
            lease_seconds=args.lease_seconds,
            profile=args.profile,
            backlog_load=backlog_load,
        )
    )
    report["load_average_end"] = load_average()
    report["machine_reference_s_end"] = machine_reference()
    references = (report["machine_reference_s_start"], report["machine_reference_s_end"])
    report["machine_reference_s"] = round(sum(references) / 2, 3)
    report["code_end"] = code_version()
    full_size = max(workload.nodes) >= 5000 and workload.pods >= 10_000 and workload.restart_pods >= 50_000
    keys = headline(report, workload, full_size)
    report = keys | report
    print_headline(keys, report)
    out = args.out or REPO / ".e2e" / f"bench-all-{started.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1))
    print(f"report written to {out}", flush=True)
    if args.json:
        print(json.dumps(report))
    return report


def print_headline(keys: dict[str, Any], report: dict[str, Any]) -> None:
    """Print the headline figures and which targets are met."""
    print(
        f"{report['date']}  nproc={report['machine']['nproc']} cpu={report['machine']['cpu_model']!r}  "
        f"load average start {report['load_average_start']} end {report['load_average_end']}"
    )
    for key, value in keys.items():
        if key not in ("targets",):
            print(f"  {key}: {value}")
    print("targets" + ("" if keys["targets_at_issue_size"] else " (smaller than the issue's sizes)") + ":")
    for name, met in keys["targets"].items():
        print(f"  [{'not measured' if met is None else 'met' if met else 'NOT met'}] {name}")
    print(flush=True)


def _legacy(module: str) -> Callable[[list[str]], Any]:
    """Run a benchmark whose `main()` reads sys.argv."""

    def run(rest: list[str]) -> Any:
        sys.argv = [f"bench.{module}", *rest]
        return importlib.import_module(f"bench.{module}").main()

    return run


COMMANDS: dict[str, Callable[[list[str]], Any]] = {
    "all": main_all,
    "inmem": inmem.main,
    "network_topology": network_topology.main,
    "large_cluster": large_cluster.main,
    "backlog": backlog.main,
    "volcano": volcano.main,
    "shards": shards.main,
    "steady": steady.main,
    "e2e": e2e.main,
    "side_by_side": side_by_side.main,
    "faults": faults.main,
    "profile": profile_main,
    "predicates": _legacy("bench_predicates"),
    "preempt": _legacy("bench_preempt"),
}


def main(argv: list[str] | None = None) -> None:
    """Dispatch `python -m bench NAME ARGS...`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        sys.exit(f"unknown benchmark {name!r}: one of {', '.join(COMMANDS)}")
    COMMANDS[name](rest)


if __name__ == "__main__":
    main()
