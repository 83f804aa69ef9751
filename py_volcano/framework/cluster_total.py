"""The cluster total the share plugins divide (proportion, capacity, drf, overcommit), and the nodes whose
pods use more than the node allocates.

Volcano sums every node's allocatable. A node whose allocatable falls below what already runs on it
(a kubelet that reserved more, a device plugin that lost devices, a status that flapped) then makes
the cluster total smaller than what the queues hold: a queue's allocated can exceed its deserved, or
the whole cluster, and the queue is refused every new pod until those pods end. Here each node counts
for the larger of its allocatable and its used, dimension by dimension, so what runs always fits in
the total and such a node wedges no queue; the node itself still has no idle room, so nothing new is
placed on it (docs/semantics.md, "Overcommitted nodes").
"""

from __future__ import annotations

from collections.abc import Iterable

from py_volcano.api import ZERO, NodeInfo, Resource

__all__ = ["cluster_total", "overcommitted"]


def _amounts(resource: Resource, names: list[str]) -> str:
    quantities = resource.to_quantities()
    return ", ".join(f"{name} {quantities.get(name, '0')}" for name in names)


def cluster_total(nodes: Iterable[NodeInfo]) -> Resource:
    """Return the sum over nodes of max(allocatable, used), per dimension."""
    total = Resource()
    for node in nodes:
        total.add(node.allocatable.clone().set_max_resource(node.used))
    return total


def overcommitted(nodes: Iterable[NodeInfo]) -> dict[str, str]:
    """Return, by node name, why each node whose pods use more than it allocates is overcommitted."""
    found: dict[str, str] = {}
    for node in nodes:
        fits, short = node.used.less_equal_with_resources_name(node.allocatable, ZERO)
        if not fits:
            found[node.name] = (
                f"node {node.name}: its pods use more {', '.join(short)} than it allocates "
                f"(used {_amounts(node.used, short)}; allocatable {_amounts(node.allocatable, short)}); "
                "the cluster total counts what they use"
            )
    return found
