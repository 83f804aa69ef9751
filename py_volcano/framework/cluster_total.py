"""The cluster total the share plugins divide (proportion, capacity, drf, overcommit), and the nodes whose
pods use more than the node allocates.

Volcano sums every node's allocatable. A node whose allocatable falls below what already runs on it
(a kubelet that reserved more, a device plugin that lost devices, a status that flapped) then makes
the cluster total smaller than what the queues hold: a queue's allocated can exceed its deserved, or
the whole cluster, and the queue is refused every new pod until those pods end. Here each node counts
for the larger of its allocatable and its used, dimension by dimension, so what runs always fits in
the total and such a node wedges no queue; the node itself still has no idle room, so nothing new is
placed on it (docs/semantics.md, "Overcommitted nodes").

`NodeTotals` keeps each node's share and verdict, so the next session of the process computes them
only for the nodes its NodeArrays could not carry (`NodeArrays.stale`).
"""

from __future__ import annotations

from collections.abc import Sequence

from py_volcano.api import ZERO, NodeInfo, Resource

__all__ = ["NodeTotals", "overcommitted_in"]


def _amounts(resource: Resource, names: list[str]) -> str:
    quantities = resource.to_quantities()
    return ", ".join(f"{name} {quantities.get(name, '0')}" for name in names)


def _share(node: NodeInfo) -> Resource:
    return node.allocatable.clone().set_max_resource(node.used)


def overcommitted_in(node: NodeInfo) -> list[str]:
    """The dimensions in which the node's pods use more than it allocates (none: not overcommitted)."""
    return node.used.less_equal_with_resources_name(node.allocatable, ZERO)[1]


def _verdict(node: NodeInfo) -> str | None:
    short = overcommitted_in(node)
    if not short:
        return None
    return (
        f"node {node.name}: its pods use more {', '.join(short)} than it allocates "
        f"(used {_amounts(node.used, short)}; allocatable {_amounts(node.allocatable, short)}); "
        "the cluster total counts what they use"
    )


class NodeTotals:
    """A session's cluster total and overcommitted nodes, from each node's share and verdict, in node order."""

    __slots__ = ("_over", "_shares", "_verdicts", "overcommitted", "total")

    def __init__(self, nodes: Sequence[NodeInfo], stale: list[int] | None, kept: NodeTotals | None) -> None:
        """Compute every node's share and verdict, or, given the rows `stale` of a NodeArrays carried
        from the session `kept` belongs to, only those rows'."""
        self._shares: list[Resource]
        self._verdicts: list[str | None]
        self._over: list[int]
        self.total: Resource
        if stale is None or kept is None or len(kept._shares) != len(nodes):
            self._shares = [_share(node) for node in nodes]
            self._verdicts = [_verdict(node) for node in nodes]
            self._over = [index for index, verdict in enumerate(self._verdicts) if verdict is not None]
        else:
            self._shares, self._verdicts = list(kept._shares), list(kept._verdicts)
            over = set(kept._over)
            for index in stale:
                node = nodes[index]
                self._shares[index] = _share(node)
                verdict = self._verdicts[index] = _verdict(node)
                if verdict is None:
                    over.discard(index)
                else:
                    over.add(index)
            self._over = sorted(over)
        if kept is not None and stale == [] and len(kept._shares) == len(nodes):
            self.total = kept.total.clone()
        else:
            self.total = Resource()
            for share in self._shares:
                self.total.add(share)
        self.overcommitted = {nodes[index].name: self._verdicts[index] or "" for index in self._over}
        """By node name, why each node whose pods use more than it allocates is overcommitted."""
