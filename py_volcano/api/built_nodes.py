"""BuiltNodes: the nodes one snapshot built, handed as they are to the next while nothing changed them.

A node's state in a snapshot follows from its NodeSpec and the pods placed on it (in listing order,
with the job each belongs to). The store replaces a parsed object whenever anything in it changes, so
when the next snapshot finds the very same spec and pod objects, and the job ids the same, it would
build the same node again; it takes the built one instead, unless a session changed it since (every
change of a node's tasks counts in `NodeInfo.version`). A cycle that places 100 pods in a cluster of
150,000 rebuilds the few nodes it touched, not every node's tasks.

When every node spec is the one built before (`covers`), the snapshot does not even place the pods of
the jobs it took unchanged (`ClusterInfo.build`): they sit where they sat, so `build_changed` looks
only at the nodes that a placed pod, a job no longer taken, a pod of no job or a session touched.
"""

from __future__ import annotations

from collections.abc import Collection, Container
from dataclasses import dataclass

from py_volcano.api.job_info import TaskInfo
from py_volcano.api.manifests import ParsedPod
from py_volcano.api.node_info import NodeInfo, NodeSpec
from py_volcano.api.types import JobID

__all__ = ["BuiltNode", "BuiltNodes", "EitherOf"]

Placed = list[tuple[ParsedPod, TaskInfo]]


class EitherOf:
    """Membership in either of two containers, without building their union (a snapshot's jobs and the
    many settled ones it carries)."""

    __slots__ = ("_first", "_second")

    def __init__(self, first: Container[JobID], second: Container[JobID]) -> None:
        self._first, self._second = first, second

    def __contains__(self, key: object) -> bool:
        return key in self._first or key in self._second


@dataclass(slots=True)
class BuiltNode:
    """One node as a snapshot built it: what it was built from (its spec and placed pods with their
    job-side tasks), its `version` then, and whether a placed pod belonged to no job of that snapshot
    (`loose`: such pods are placed again by every snapshot)."""

    node: NodeInfo
    spec: NodeSpec
    pairs: Placed
    version: int
    loose: bool

    def unchanged(self, spec: NodeSpec, pairs: Placed) -> bool:
        """Whether building from `spec` and `pairs` gives this node, which no session changed since."""
        return (
            spec is self.spec
            and self.node.version == self.version
            and [pod for pod, _ in pairs] == [pod for pod, _ in self.pairs]
            and [task.job for _, task in pairs] == [task.job for _, task in self.pairs]
        )


class BuiltNodes:
    """The nodes of the last snapshot, by name; `build` or `build_changed` makes the next snapshot's nodes."""

    __slots__ = ("nodes",)

    def __init__(self) -> None:
        self.nodes: dict[str, BuiltNode] = {}

    def covers(self, specs: list[NodeSpec]) -> bool:
        """Whether `specs` are, in order, the very node specs of the last snapshot."""
        return len(specs) == len(self.nodes) and all(
            last.spec is spec for last, spec in zip(self.nodes.values(), specs, strict=True)
        )

    def build(
        self, specs: list[NodeSpec], placed: dict[str, Placed], jobs: Collection[JobID]
    ) -> dict[str, NodeInfo]:
        """Return the snapshot's nodes in `specs` order, each with its `placed` tasks (pod, job-side
        task); a node unchanged since the last snapshot is the same object, the others are built.
        `jobs` are the snapshot's job ids: a pod of none makes its node `loose`."""
        built: dict[str, BuiltNode] = {}
        for spec in specs:
            built[spec.name] = self._node(spec, placed.get(spec.name, []), jobs)
        self.nodes = built
        return {name: entry.node for name, entry in built.items()}

    def build_changed(
        self,
        specs: list[NodeSpec],
        placed: dict[str, Placed],
        jobs: Container[JobID],
        taken: Container[JobID],
        touched: Collection[str],
    ) -> dict[str, NodeInfo]:
        """`build` for a snapshot whose specs the last one `covers` and that placed only the pods of the
        jobs it did not take (`placed`, in listing order): the pods of the `taken` jobs are where the last
        snapshot put them. A node no such pod, no job of `touched` nodes and no session changed is taken
        as it is; the others get their taken jobs' pods and the placed ones, in listing order."""
        built: dict[str, BuiltNode] = {}
        for spec in specs:
            last = self.nodes[spec.name]
            fresh = placed.get(spec.name)
            if not fresh and not last.loose and spec.name not in touched and last.node.version == last.version:
                built[spec.name] = last
                continue
            pairs = [pair for pair in last.pairs if pair[1].job in taken]
            if fresh:
                pairs.extend(fresh)
                pairs.sort(key=lambda pair: pair[0].order)
            built[spec.name] = self._node(spec, pairs, jobs)
        self.nodes = built
        return {name: entry.node for name, entry in built.items()}

    def _node(self, spec: NodeSpec, pairs: Placed, jobs: Container[JobID]) -> BuiltNode:
        last = self.nodes.get(spec.name)
        if last is not None and last.unchanged(spec, pairs):
            node = last.node
        else:
            node = NodeInfo(spec)
            for _, task in pairs:
                node.add_task(task)
        loose = any(task.job not in jobs for _, task in pairs)
        return BuiltNode(node, spec, pairs, node.version, loose)
