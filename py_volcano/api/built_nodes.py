"""BuiltNodes: the nodes one snapshot built, handed as they are to the next while nothing changed them.

A node's state in a snapshot follows from its NodeSpec and the pods placed on it (in listing order,
with the job each belongs to). The store replaces a parsed object whenever anything in it changes, so
when the next snapshot finds the very same spec and pod objects, and the job ids the same, it would
build the same node again; it takes the built one instead, unless a session changed it since (every
change of a node's tasks counts in `NodeInfo.version`). A cycle that places 100 pods in a cluster of
150,000 rebuilds the few nodes it touched, not every node's tasks.
"""

from __future__ import annotations

from dataclasses import dataclass

from py_volcano.api.job_info import TaskInfo
from py_volcano.api.manifests import ParsedPod
from py_volcano.api.node_info import NodeInfo, NodeSpec
from py_volcano.api.types import JobID

__all__ = ["BuiltNode", "BuiltNodes"]


@dataclass(slots=True)
class BuiltNode:
    """One node as a snapshot built it: what it was built from and its `version` then."""

    node: NodeInfo
    spec: NodeSpec
    pods: list[ParsedPod]
    jobs: list[JobID | None]
    version: int

    def unchanged(self, spec: NodeSpec, pods: list[ParsedPod], jobs: list[JobID | None]) -> bool:
        """Whether building from `spec`, `pods` and `jobs` gives this node, which no session changed since."""
        return (
            spec is self.spec
            and self.node.version == self.version
            and pods == self.pods
            and jobs == self.jobs
        )


class BuiltNodes:
    """The nodes of the last snapshot, by name; `build` makes the next snapshot's nodes."""

    __slots__ = ("nodes",)

    def __init__(self) -> None:
        self.nodes: dict[str, BuiltNode] = {}

    def build(
        self, specs: list[NodeSpec], placed: dict[str, list[tuple[ParsedPod, TaskInfo]]]
    ) -> dict[str, NodeInfo]:
        """Return the snapshot's nodes in `specs` order, each with its `placed` tasks (pod, job-side
        task); a node unchanged since the last snapshot is the same object, the others are built."""
        built: dict[str, BuiltNode] = {}
        nodes: dict[str, NodeInfo] = {}
        for spec in specs:
            pairs = placed.get(spec.name, ())
            pods = [pod for pod, _ in pairs]
            jobs = [task.job for _, task in pairs]
            last = self.nodes.get(spec.name)
            if last is not None and last.unchanged(spec, pods, jobs):
                node = last.node
            else:
                node = NodeInfo(spec)
                for _, task in pairs:
                    node.add_task(task)
            nodes[spec.name] = node
            built[spec.name] = BuiltNode(node, spec, pods, jobs, node.version)
        self.nodes = built
        return nodes
