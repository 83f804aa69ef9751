"""In-memory cycle benchmark: one scheduling cycle over synthetic clusters with the default configuration.

Prints, per size: snapshot time (`Store.snapshot`, as each cycle of the runner), time per action, the
whole cycle, pods bound and pods placed per second. The collector is handled as the runner handles it:
the cluster, once built, is frozen out of collections (`wait_synced`) and the collector is paused over
the snapshot and the cycle (`cache.collector_paused`; `bench.synthetic.timed_cycle`).
Usage: python -m bench.inmem [--sizes 1000x10000,5000x50000] [--json]
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from bench.synthetic import Shape, build_cluster, timed_cycle
from py_volcano.logs import configure_logging
from py_volcano.registry import default_registry, load_conf

__all__ = ["main", "measure"]

DEFAULT_SIZES = "1000x10000"


def measure(nodes: int, pods: int) -> dict[str, Any]:
    """Run one cycle at this size and return its figures."""
    cluster = build_cluster(Shape(nodes=nodes, pending_pods=pods))
    conf, registry = load_conf(None), default_registry()
    timed = timed_cycle(cluster, conf, registry)
    result, cycle_s = timed.result, timed.cycle_s
    placed = len(result.binds) + len(result.pipelined)
    return {
        "nodes": nodes,
        "pending_pods": pods,
        "jobs": len(timed.snapshot.jobs),
        "snapshot_s": round(timed.snapshot_s, 3),
        "cycle_s": round(cycle_s, 3),
        "actions_s": {name: round(s, 3) for name, s in result.action_durations.items()},
        "plugins_open_close_s": round(sum(result.plugin_durations.values()), 3),
        "bound": len(result.binds),
        "pods_per_s": round(placed / cycle_s, 1) if cycle_s else None,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the sizes given and print a table (and JSON with --json)."""
    parser = argparse.ArgumentParser(prog="python -m bench.inmem")
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help="comma list of NODESxPODS")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    configure_logging("warning", "console")
    rows = [measure(*map(int, size.split("x"))) for size in args.sizes.split(",")]
    print(f"{'nodes':>6} {'pods':>7} {'jobs':>5} {'snapshot s':>10} {'cycle s':>8} {'bound':>6} {'pods/s':>8}  actions")
    for row in rows:
        actions = " ".join(f"{k}={v}" for k, v in row["actions_s"].items())
        print(f"{row['nodes']:>6} {row['pending_pods']:>7} {row['jobs']:>5} {row['snapshot_s']:>10} "
              f"{row['cycle_s']:>8} {row['bound']:>6} {row['pods_per_s']:>8}  {actions}")
    report = {"inmem": rows}
    if args.json:
        print(json.dumps(report))
    return report


if __name__ == "__main__":
    main()
