"""The cluster total the share plugins divide (proportion, capacity, drf, overcommit), and the nodes whose
pods use more than the node allocates.

Volcano sums every node's allocatable. A node whose allocatable falls below what already runs on it
(a kubelet that reserved more, a device plugin that lost devices, a status that flapped) then makes
the cluster total smaller than what the queues hold: a queue's allocated can exceed its deserved, or
the whole cluster, and the queue is refused every new pod until those pods end. Here each node counts
for the larger of its allocatable and its used, dimension by dimension, so what runs always fits in
the total and such a node wedges no queue; the node itself still has no idle room, so nothing new is
placed on it (docs/semantics.md, "Overcommitted nodes").

`NodeTotals` keeps each node's share, used resources and verdict, so the next session of the process
computes them only for the nodes its NodeArrays could not carry (`NodeArrays.stale`), and moves the
totals by those nodes' differences instead of adding up every node again, where that is exact: every
figure involved a whole number below 2**52, so that each sum and difference is exact in a float and
the moved total equals the one added up afresh.
"""

from __future__ import annotations

from collections.abc import Sequence

from py_volcano.api import ZERO, NodeInfo, Resource, whole_resource

__all__ = ["NodeTotals", "overcommitted_in"]

#: Whole numbers from 0 to this add and subtract exactly in a float, in any order.
_EXACT = float(2**52)


def _exact(resource: Resource) -> bool:
    if not whole_resource(resource):
        return False
    scalars = resource.scalars
    return (
        0 <= resource.milli_cpu < _EXACT
        and 0 <= resource.memory < _EXACT
        and (not scalars or all(0 <= value < _EXACT for value in scalars.values()))
    )


def _sum(resources: Sequence[Resource]) -> Resource:
    total = Resource()
    for resource in resources:
        total.add(resource)
    return total


def _moved(total: Resource, changes: list[tuple[Resource, Resource]]) -> Resource | None:
    """`total` with each (before, after) pair's difference applied, or None where that may not equal the
    sum taken afresh (a figure fractional, negative or too large; a pair naming different scalars)."""
    if not _exact(total):
        return None
    moved = total.clone()
    for before, after in changes:
        if not (_exact(before) and _exact(after)) or before.scalars.keys() != after.scalars.keys():
            return None
        moved.sub_without_assert(before).add(after)
    return moved if _exact(moved) else None


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
    """A session's cluster total, used resources and overcommitted nodes, from each node's share, used
    resources and verdict, in node order."""

    __slots__ = ("_over", "_shares", "_used", "_verdicts", "overcommitted", "total", "used")

    def __init__(self, nodes: Sequence[NodeInfo], stale: list[int] | None, kept: NodeTotals | None) -> None:
        """Compute every node's share, used resources and verdict, or, given the rows `stale` of a
        NodeArrays carried from the session `kept` belongs to, only those rows'."""
        self._shares: list[Resource]
        self._used: list[Resource]
        self._verdicts: list[str | None]
        self._over: list[int]
        self.total: Resource
        self.used: Resource
        """Sum of every node's used resources."""
        if stale is None or kept is None or len(kept._shares) != len(nodes):
            self._shares = [_share(node) for node in nodes]
            self._used = [node.used.clone() for node in nodes]
            self._verdicts = [_verdict(node) for node in nodes]
            self._over = [index for index, verdict in enumerate(self._verdicts) if verdict is not None]
            self.total, self.used = _sum(self._shares), _sum(self._used)
            self._set_overcommitted(nodes)
            return
        self._shares, self._used, self._verdicts = list(kept._shares), list(kept._used), list(kept._verdicts)
        over = set(kept._over)
        shares: list[tuple[Resource, Resource]] = []
        used: list[tuple[Resource, Resource]] = []
        for index in stale:
            node = nodes[index]
            shares.append((self._shares[index], _share(node)))
            used.append((self._used[index], node.used.clone()))
            self._shares[index], self._used[index] = shares[-1][1], used[-1][1]
            verdict = self._verdicts[index] = _verdict(node)
            if verdict is None:
                over.discard(index)
            else:
                over.add(index)
        self._over = sorted(over)
        total, used_total = _moved(kept.total, shares), _moved(kept.used, used)
        self.total = total if total is not None else _sum(self._shares)
        self.used = used_total if used_total is not None else _sum(self._used)
        self._set_overcommitted(nodes)

    def _set_overcommitted(self, nodes: Sequence[NodeInfo]) -> None:
        self.overcommitted = {nodes[index].name: self._verdicts[index] or "" for index in self._over}
        """By node name, why each node whose pods use more than it allocates is overcommitted."""
