"""In-memory cycle with network-topology-aware on a three-tier HyperNode tree, against the same cluster without it.

The cluster is `bench.synthetic`'s (nodes, queues, gangs of 1 to 64 pods, ten pods per node) plus a
HyperNode tree: leaf switches of 16 nodes (tier 1), 8 leaves per aggregation switch (tier 2), 4
aggregations per spine (tier 3). On: the default configuration with `network-topology-aware` in the
second tier, and every gang of 2 pods or more sets a `networkTopology` (one in three soft; the others hard,
highest tier 1 up to 16 pods, 2 above). Off: the same objects without any `networkTopology`, and the
default configuration. Each figure is one cycle (`run_cycle`); the snapshot, the same path for both, is
timed apart. Usage: python -m bench.network_topology [--sizes 1000,5000] [--json]
"""

from __future__ import annotations

import argparse
import copy
import json
from typing import Any

from bench.synthetic import Shape, load, manifests, timed_cycle
from py_volcano.framework import default_conf_text
from py_volcano.logs import configure_logging
from py_volcano.registry import default_registry, load_conf

__all__ = ["main", "measure"]

DEFAULT_SIZES = "1000,5000"
WARM_UP = 100
PODS_PER_NODE = 10
LEAF, AGGREGATION, SPINE = 16, 8, 4
PLUGIN = "  - name: network-topology-aware\n"


def hyper_node(name: str, tier: int, members: list[str], kind: str) -> dict[str, Any]:
    """A HyperNode whose members are chosen by exact name."""
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": {"tier": tier, "members": [{"type": kind, "selector": {"exactMatch": {"name": m}}} for m in members]},
    }


def three_tiers(node_names: list[str]) -> list[dict[str, Any]]:
    """Leaves of LEAF nodes, aggregations of AGGREGATION leaves, spines of SPINE aggregations."""
    objects: list[dict[str, Any]] = []
    below, kind = node_names, "Node"
    for tier, (size, prefix) in enumerate(((LEAF, "leaf"), (AGGREGATION, "agg"), (SPINE, "spine")), start=1):
        names = []
        for start in range(0, len(below), size):
            names.append(f"{prefix}-{start // size:04d}")
            objects.append(hyper_node(names[-1], tier, below[start : start + size], kind))
        below, kind = names, "HyperNode"
    return objects


def with_topology(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same objects, every gang of 2 pods or more with a network topology."""
    changed = copy.deepcopy(objects)
    for position, obj in enumerate(o for o in changed if o["kind"] == "PodGroup"):
        size = obj["spec"]["minMember"]
        if size < 2:
            continue
        if position % 3 == 0:
            obj["spec"]["networkTopology"] = {"mode": "soft"}
        else:
            obj["spec"]["networkTopology"] = {"mode": "hard", "highestTierAllowed": 1 if size <= LEAF else 2}
    return changed


def measure(nodes: int) -> dict[str, Any]:
    """Run one cycle on and one off at `nodes` nodes; return their figures."""
    base = manifests(Shape(nodes=nodes, pending_pods=nodes * PODS_PER_NODE))
    tree = three_tiers([o["metadata"]["name"] for o in base if o["kind"] == "Node"])
    registry = default_registry()
    default = default_conf_text()
    confs = {"on": default + PLUGIN, "off": default}
    objects = {"on": with_topology(base) + tree, "off": base + tree}
    row: dict[str, Any] = {"nodes": nodes, "pending_pods": nodes * PODS_PER_NODE, "hypernodes": len(tree)}
    for name in ("off", "on"):
        conf = load_conf(confs[name], registry=registry)
        timed = timed_cycle(load(objects[name]), conf, registry)
        row[f"{name}_snapshot_s"] = round(timed.snapshot_s, 3)
        row[f"{name}_cycle_s"] = round(timed.cycle_s, 3)
        row[f"{name}_bound"] = len(timed.result.binds)
    row["ratio"] = round(row["on_cycle_s"] / row["off_cycle_s"], 3) if row["off_cycle_s"] else None
    return row


def keys(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The report keys: `network_topology_cycle_s_1k`, `..._off_cycle_s_1k`, `..._ratio_1k` per size."""
    found: dict[str, Any] = {}
    for row in rows:
        size = f"{row['nodes'] // 1000}k" if row["nodes"] % 1000 == 0 else str(row["nodes"])
        found[f"network_topology_cycle_s_{size}"] = row["on_cycle_s"]
        found[f"network_topology_off_cycle_s_{size}"] = row["off_cycle_s"]
        found[f"network_topology_ratio_{size}"] = row["ratio"]
    return found


def print_rows(rows: list[dict[str, Any]]) -> None:
    """Print one line per size."""
    print(f"{'nodes':>6} {'pods':>7} {'hypernodes':>10} {'off s':>7} {'on s':>7} {'ratio':>6} {'bound off/on':>13}")
    for row in rows:
        print(
            f"{row['nodes']:>6} {row['pending_pods']:>7} {row['hypernodes']:>10} {row['off_cycle_s']:>7} "
            f"{row['on_cycle_s']:>7} {row['ratio']:>6} {row['off_bound']:>6}/{row['on_bound']}",
            flush=True,
        )


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the sizes given, print a table (and JSON with --json)."""
    parser = argparse.ArgumentParser(prog="python -m bench.network_topology")
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help="comma list of node counts")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    configure_logging("warning", "console")
    measure(WARM_UP)  # imports and first-call caches, paid by neither measured run
    rows = [measure(int(size)) for size in args.sizes.split(",")]
    print_rows(rows)
    report = keys(rows) | {"network_topology": rows}
    if args.json:
        print(json.dumps(report))
    return report


if __name__ == "__main__":
    main()
