"""A small three-tier HyperNode cluster for the network-topology tests: eight 4-CPU nodes, four leaf
switches of two nodes (tier 1), two aggregation switches (tier 2), one spine (tier 3)."""

from __future__ import annotations

from typing import Any

from py_volcano.api import ClusterInfo
from py_volcano.simulation import InMemoryCluster
from tests.builders import node, pod, pod_group

CONF = """actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: network-topology-aware
"""
CONF_WITHOUT_PLUGIN = CONF.replace("  - name: network-topology-aware\n", "")

LEAVES = {f"leaf-{j}": (f"node-{2 * j}", f"node-{2 * j + 1}") for j in range(4)}
AGGREGATIONS = {"agg-0": ("leaf-0", "leaf-1"), "agg-1": ("leaf-2", "leaf-3")}


def hyper_node(name: str, tier: int, members: tuple[str, ...], kind: str = "Node") -> dict[str, Any]:
    """A HyperNode manifest whose members are chosen by exact name."""
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": {"tier": tier, "members": [{"type": kind, "selector": {"exactMatch": {"name": m}}} for m in members]},
    }


def topology() -> list[dict[str, Any]]:
    """The nodes and the HyperNodes."""
    objects = [node(name=f"node-{i}") for i in range(8)]
    objects += [hyper_node(name, 1, members) for name, members in LEAVES.items()]
    objects += [hyper_node(name, 2, members, "HyperNode") for name, members in AGGREGATIONS.items()]
    objects.append(hyper_node("spine", 3, ("agg-0", "agg-1"), "HyperNode"))
    return objects


def gang(name: str, size: int, network: dict[str, Any] | None, *, cpu: str = "2", **group: Any) -> list[dict[str, Any]]:
    """A PodGroup of `size` pods (network topology `network`, none when None) and its pods."""
    manifest = pod_group(name=name, min_member=size, phase="Inqueue", **group)
    if network is not None:
        manifest["spec"]["networkTopology"] = network
    return [manifest] + [pod(name=f"{name}-{i}", group=name, cpu=cpu) for i in range(size)]


def snapshot(*objects: dict[str, Any]) -> ClusterInfo:
    """The store's snapshot of the objects, the runner's path (HyperNode tree included)."""
    return InMemoryCluster(objects, source="test", scheduler_name="py-volcano").snapshot()


def leaf_of(node_name: str) -> str:
    """The leaf switch of a node."""
    return next(leaf for leaf, nodes in LEAVES.items() if node_name in nodes)
