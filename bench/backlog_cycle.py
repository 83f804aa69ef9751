"""`python -m bench.backlog_cycle [--json]`: the CPU a cycle costs past a backlog of backed-off jobs, in memory.

The runner's path without an API server: a `Store` fed `--nodes` nodes (32 CPU) and `--backlog` one-pod
jobs of 64 CPU (no node holds one), the runner's `Backoff`, `Store.snapshot` (sharing the backlog unless
`--no-share`), `run_cycle` with the default configuration, and `Metrics.observe_cycle`. The first cycle
tries (and backs off) the whole backlog; each later one gets `--new` small pods. Printed: the CPU time
(`time.process_time`) of snapshot, cycle and metrics per cycle, and the median total over the cycles
after the first two (the second builds the backlog that the later ones share).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from typing import Any

from py_volcano.cache import Backoff
from py_volcano.cache.store import KINDS, Store
from py_volcano.framework import run_cycle, shares_backlog
from py_volcano.logs import configure_logging
from py_volcano.metrics import Metrics
from py_volcano.registry import default_registry, load_conf

__all__ = ["main", "measure"]


def _node(index: int) -> dict[str, Any]:
    resources = {"cpu": "32", "memory": "128Gi", "pods": "110"}
    return {
        "kind": "Node",
        "metadata": {"name": f"n-{index:05d}", "uid": f"node-{index}"},
        "spec": {},
        "status": {
            "allocatable": resources,
            "capacity": resources,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _pod(name: str, namespace: str, cpu: str) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"{namespace}-{name}",
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {
            "schedulerName": "py-volcano",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}],
        },
        "status": {"phase": "Pending"},
    }


def measure(*, nodes: int, backlog: int, cycles: int, new: int, share: bool) -> dict[str, Any]:
    """Run the cycles and return the per-cycle figures."""
    kinds = {kind.name: kind for kind in KINDS}
    store, version = Store(scheduler_name="py-volcano"), 0
    clock = [0.0]
    backoff = Backoff(initial=1.0, maximum=10.0, flush_after=300.0, clock=lambda: clock[0])
    conf, registry, metrics = load_conf(None), default_registry(), Metrics()

    def put(obj: dict[str, Any]) -> None:
        nonlocal version
        version += 1
        obj["metadata"]["resourceVersion"] = str(version)
        store.apply_event(kinds[obj["kind"]], "ADDED", obj)

    for index in range(nodes):
        put(_node(index))
    put({"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}})
    for index in range(backlog):
        put(_pod(f"b-{index:05d}", "backlog", "64"))
    rows = []
    for number in range(cycles):
        for index in range(new if number else 0):
            put(_pod(f"s-{number}-{index}", "stream", "100m"))
        backoff.wake(store.take_changes(), preempting=False)
        skip = backoff.skipped()
        gc.disable()
        began = time.process_time()
        sharing = share and shares_backlog(conf)
        snapshot = store.snapshot(backlog=skip if sharing else frozenset(), token=conf, settle=sharing)
        built = time.process_time()
        result = run_cycle(snapshot, conf, registry, cycle=number, skip=skip)
        backoff.record(result.unschedulable_jobs, result.pod_groups.keys())
        store.record_phases({job: (status.phase, status.shadow) for job, status in result.pod_groups.items()})
        ran = time.process_time()
        metrics.observe_cycle(result, ran - built, snapshot)
        ended = time.process_time()
        del snapshot
        gc.enable()
        rows.append(
            {
                "backed_off": len(skip),
                "snapshot_s": round(built - began, 3),
                "cycle_s": round(ran - built, 3),
                "metrics_s": round(ended - ran, 3),
                "total_s": round(ended - began, 3),
                "binds": len(result.binds),
            }
        )
        clock[0] += 0.5
    steady = [row["total_s"] for row in rows[2:]]
    return {
        "nodes": nodes,
        "backlog": backlog,
        "share": share,
        "cycles": rows,
        "median_cycle_s": statistics.median(steady) if steady else None,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse the arguments, run, print the figures (and the JSON with --json)."""
    parser = argparse.ArgumentParser(prog="python -m bench.backlog_cycle", description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--backlog", type=int, default=20_000)
    parser.add_argument("--cycles", type=int, default=9)
    parser.add_argument("--new", type=int, default=5, help="small pods created before each cycle after the first")
    parser.add_argument("--no-share", action="store_true", help="build every job afresh (as before the backlog)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    configure_logging("warning", "console")
    report = measure(nodes=args.nodes, backlog=args.backlog, cycles=args.cycles, new=args.new, share=not args.no_share)
    for number, row in enumerate(report["cycles"]):
        print(
            f"cycle {number}: backed off {row['backed_off']}, snapshot {row['snapshot_s']} s, "
            f"cycle {row['cycle_s']} s, metrics {row['metrics_s']} s, binds {row['binds']}"
        )
    print(
        f"median CPU per cycle past the backlog ({'shared' if report['share'] else 'rebuilt'}): "
        f"{report['median_cycle_s']} s"
    )
    if args.json:
        print(json.dumps(report))
    return report


if __name__ == "__main__":
    main()
