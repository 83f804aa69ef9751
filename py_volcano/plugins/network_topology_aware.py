"""network-topology-aware: keep a job inside the lowest tier of the HyperNode tree that holds it (Volcano's).

Three functions, over the session's `hyper_nodes` tree:

- hypernode search (`hyper_node_gradient`): under the root allocate gives, the hypernodes of tier <=
  the job's highest allowed tier, grouped by tier, lowest first; a job with no task placed yet skips
  a hypernode whose idle and future idle sums (at session open) both fall short of its `minResources`.
- hypernode order: the hypernode-level binpack of the whole job, the weighted mean over the weighed
  resources of (used + job request) / allocatable, 0 when the job would overflow it; hypernodes tied
  at the top score add the share of the job's tasks already on them; times 100 and `weight`.
- node order: for a job with a network topology, how low the common ancestor of the node's hypernode and
  the job's hypernode is, (top tier - its tier) / (top tier - lowest tier), 1 on the job's own
  hypernode, tied nodes adding the job's task share; for other pods (`hypernode.binpack.normal-pod.enable`)
  the mean over tiers t of fading^(t-1) times the pod-level binpack of the node's hypernode of tier t
  (1 where the node has none); both times 100 and `weight`.

`used` per hypernode follows every allocation and deallocation of the session, as Volcano's event handler.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from py_volcano.api import CPU, MEMORY, FloatArray, HyperNodeTopology, JobInfo, Resource, TaskInfo
from py_volcano.framework import Arguments, EventHandler, IndexArray, Session

__all__ = ["NAME", "NetworkTopologyArgs", "NetworkTopologyAwarePlugin", "new"]

NAME = "network-topology-aware"
MAX_NODE_SCORE = 100.0


@dataclass(slots=True, frozen=True)
class NetworkTopologyArgs:
    """network-topology-aware's arguments, read as Volcano reads them: a negative weight becomes 1."""

    weight: int = 1
    """`weight`: multiplies every score of the plugin."""
    resources: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({CPU: 1, MEMORY: 1}))
    """Hypernode-level binpack weights: `hypernode.binpack.cpu`, `hypernode.binpack.memory` (1 each) and
    `hypernode.binpack.resources.<name>` (1) for each name of the comma list `hypernode.binpack.resources`."""
    normal_pod_enable: bool = True
    """`hypernode.binpack.normal-pod.enable`: score nodes for pods of jobs without a network topology."""
    normal_pod_fading: float = 0.8
    """`hypernode.binpack.normal-pod.fading`: tier t weighs fading^(t-1); negative becomes 0.8."""

    @classmethod
    def parse(cls, args: Arguments) -> NetworkTopologyArgs:
        """Read the arguments; ConfigError on a value of the wrong type."""
        resources: dict[str, int] = {
            CPU: _weight(args.get_int("hypernode.binpack.cpu", 1)),
            MEMORY: _weight(args.get_int("hypernode.binpack.memory", 1)),
        }
        for name in args.get_str("hypernode.binpack.resources", "").split(","):
            name = name.strip()
            if name:
                resources[name] = _weight(args.get_int(f"hypernode.binpack.resources.{name}", 1))
        fading = args.get_float("hypernode.binpack.normal-pod.fading", 0.8)
        return cls(
            weight=_weight(args.get_int("weight", 1)),
            resources=MappingProxyType(resources),
            normal_pod_enable=args.get_bool("hypernode.binpack.normal-pod.enable", True),
            normal_pod_fading=fading if fading >= 0 else 0.8,
        )


def _weight(value: int) -> int:
    return value if value >= 0 else 1


class HyperNodeScores:
    """One session's per-hypernode sums (allocatable and used of the weighed resources) and the scores."""

    __slots__ = ("_open_sums", "alloc", "args", "names", "scale", "ssn", "tier_weights", "topology", "used")

    def __init__(self, ssn: Session, args: NetworkTopologyArgs) -> None:
        self.ssn = ssn
        self.args = args
        self.topology: HyperNodeTopology = ssn.hyper_nodes
        self.scale = MAX_NODE_SCORE * args.weight
        arrays = ssn.arrays
        self.names = [name for name in args.resources if name in arrays.columns]
        columns = [arrays.columns[name] for name in self.names]
        allocatable, used = arrays.allocatable[:, columns], arrays.used()[:, columns]
        rows = self.topology.rows
        self.alloc: FloatArray = np.array([allocatable[r].sum(axis=0) for r in rows]).reshape(len(rows), -1)
        self.used: FloatArray = np.array([used[r].sum(axis=0) for r in rows]).reshape(len(rows), -1)
        tiers = [*self.topology.real_tiers, self.topology.tiers[self.topology.top]]
        fading = args.normal_pod_fading
        self.tier_weights = [(t, fading ** (t - 1)) for t in range(min(tiers), max(tiers) + 1)]
        self._open_sums: tuple[FloatArray, FloatArray] | None = None

    # Bookkeeping ------------------------------------------------------------------------------

    def _chain(self, task: TaskInfo) -> list[int]:
        node = self.ssn.nodes.get(task.node_name)
        if node is None:
            return []
        leaf = int(self.topology.lowest[node.index])
        return list(self.topology.ancestors(leaf if leaf != -1 else self.topology.top))

    def allocated(self, task: TaskInfo) -> None:
        """Count the task in the used sums of every hypernode holding its node."""
        chain = self._chain(task)
        if chain and self.names:
            self.used[chain] += [task.resreq.get(name) for name in self.names]

    def deallocated(self, task: TaskInfo) -> None:
        """Take the task out of the used sums."""
        chain = self._chain(task)
        if chain and self.names:
            self.used[chain] -= [task.resreq.get(name) for name in self.names]

    # Scores -----------------------------------------------------------------------------------

    def binpack(self, request: Resource, hyper_nodes: IndexArray | list[int]) -> FloatArray:
        """Volcano's hypernode-level binpack of `request` on each of `hyper_nodes` (0 where it overflows)."""
        total: FloatArray = np.zeros(len(hyper_nodes))
        over = np.zeros(len(hyper_nodes), dtype=bool)
        weight_sum = 0
        for name in request.names():
            weight = self.args.resources.get(name)
            if weight is None:
                continue
            wanted = request.get(name)
            if name not in self.names:
                over[:] = True  # no node has it: allocatable 0
                continue
            column = self.names.index(name)
            allocatable = self.alloc[hyper_nodes, column]
            after = self.used[hyper_nodes, column] + wanted
            over |= after > allocatable
            total += weight * after / np.where(allocatable > 0, allocatable, 1.0)
            weight_sum += weight
        if weight_sum <= 0:
            return np.zeros(len(hyper_nodes))
        result: FloatArray = np.where(over, 0.0, total / weight_sum)
        return result

    def _task_rows(self, job: JobInfo) -> IndexArray:
        nodes = self.ssn.nodes
        return np.fromiter(
            (nodes[task.node_name].index for task in job.tasks.values() if task.node_name in nodes), dtype=np.intp
        )

    def task_shares(self, job: JobInfo, hyper_nodes: list[int]) -> list[float]:
        """The share of the job's tasks on nodes of each hypernode (Volcano's scoreWithTaskNum)."""
        if not job.tasks:
            return [1.0] * len(hyper_nodes)
        topology, rows = self.topology, self._task_rows(job)
        shares = []
        for hyper_node in hyper_nodes:
            if hyper_node == topology.top:
                count = len(rows)
            else:
                count = int(np.count_nonzero(topology.at_tier[topology.tiers[hyper_node]][rows] == hyper_node))
            shares.append(count / len(job.tasks))
        return shares

    def hyper_node_order(self, job: JobInfo, candidates: list[int]) -> list[float]:
        """Score candidate hypernodes for the whole job: binpack, then the task share among those tied on top."""
        request = Resource()
        for task in job.tasks.values():
            request.add(task.resreq)
        scores = self.binpack(request, candidates)
        if len(candidates) > 1:
            tied = np.flatnonzero(scores == scores.max())
            if len(tied) > 1:
                scores[tied] += self.task_shares(job, [candidates[k] for k in tied])
        return [float(score) * self.scale for score in scores]

    def gradient(self, job: JobInfo, root: int) -> list[list[int]]:
        """The hypernodes under `root` the job may use, grouped by tier, lowest tier first."""
        spec = job.pod_group.network_topology
        tier = self.topology.highest_tier(spec) if spec is not None else None
        if tier is None:
            return [[root]]
        placed = self.ssn.allocated_hyper_node(job) != -1
        groups: dict[int, list[int]] = {}
        for hyper_node in self.topology.subtree(root):
            level = self.topology.tiers[hyper_node]
            if level <= tier and (placed or self._may_hold(job.min_resources, hyper_node)):
                groups.setdefault(level, []).append(hyper_node)
        return [groups[level] for level in sorted(groups)]

    def _may_hold(self, need: Resource | None, hyper_node: int) -> bool:
        """Volcano's resource pre-filter: minResources fits the idle or the future idle sum at open."""
        if need is None:
            return True
        idle, future = self._sums()
        arrays = self.ssn.arrays
        vector = np.zeros(len(arrays.dims))
        for name in need.names():
            column = arrays.columns.get(name)
            if column is None:
                return False
            vector[column] = need.get(name)
        return bool((vector <= idle[hyper_node] + 0.1).all() or (vector <= future[hyper_node] + 0.1).all())

    def _sums(self) -> tuple[FloatArray, FloatArray]:
        if self._open_sums is None:
            arrays = self.ssn.arrays
            idle, future = arrays.idle, arrays.future_idle()
            rows = self.topology.rows
            self._open_sums = (
                np.array([idle[r].sum(axis=0) for r in rows]),
                np.array([future[r].sum(axis=0) for r in rows]),
            )
        return self._open_sums

    def node_order(self, task: TaskInfo, rows: IndexArray) -> FloatArray:
        """Score candidate node rows for the task (see the module docstring)."""
        job = self.ssn.jobs.get(task.job) if task.job else None
        if job is None:
            return np.zeros(len(rows))
        spec = job.pod_group.network_topology
        if spec is not None and self.topology.highest_tier(spec) is not None:
            return self._near_job(job, rows) * self.scale
        if not self.args.normal_pod_enable:
            return np.zeros(len(rows))
        return self._normal_pod(task, rows) * self.scale

    def _near_job(self, job: JobInfo, rows: IndexArray) -> FloatArray:
        """Per row, the tier score of the common ancestor of the node's hypernode (its lowest, else the top)
        and the job's: walking up from the job's, each ancestor scores the rows under it not yet scored."""
        allocated = self.ssn.allocated_hyper_node(job)
        if allocated == -1:
            return np.zeros(len(rows))
        topology = self.topology
        scores: FloatArray = np.zeros(len(rows))
        scored = np.zeros(len(rows), dtype=bool)
        for ancestor in topology.ancestors(allocated):
            if ancestor == topology.top:
                under = ~scored
            else:
                under = (topology.at_tier[topology.tiers[ancestor]][rows] == ancestor) & ~scored
            scores[under] = self._tier_score(topology.tiers[ancestor])
            scored |= under
        leaves = topology.lowest[rows]
        scores[leaves == allocated] = 1.0
        tied = np.flatnonzero(scores == scores.max())
        if len(tied) > 1:
            # Volcano's tie-break: the share of the job's tasks on each tied node's hypernode.
            placed = topology.lowest[self._task_rows(job)]
            placed = np.where(placed == -1, topology.top, placed)
            counts = np.bincount(placed, minlength=len(topology.names)) / max(len(job.tasks), 1)
            holders = np.where(leaves[tied] == -1, topology.top, leaves[tied])
            scores[tied] += counts[holders]
        return scores

    def _tier_score(self, tier: int) -> float:
        """(highest tier - tier) / (highest - lowest), over the tiers of the tree and the top."""
        lowest, highest = self.tier_weights[0][0], self.tier_weights[-1][0]
        if lowest == highest:
            return 1.0
        return (highest - tier) / (highest - lowest) if lowest <= tier <= highest else 0.0

    def _normal_pod(self, task: TaskInfo, rows: IndexArray) -> FloatArray:
        topology = self.topology
        everywhere = np.arange(len(topology.names), dtype=np.intp)
        per_hyper_node = self.binpack(task.resreq, everywhere)
        total: FloatArray = np.zeros(len(rows))
        weight_sum = 0.0
        top_tier = topology.tiers[topology.top]
        for tier, weight in self.tier_weights:
            weight_sum += weight
            if tier == top_tier:
                total += weight * per_hyper_node[topology.top]
                continue
            column = topology.at_tier.get(tier)
            if column is None:
                total += weight  # no hypernode of this tier: a full score (Volcano prefers such nodes)
                continue
            holders = column[rows]
            total += weight * np.where(holders >= 0, per_hyper_node[holders], 1.0)
        return total / weight_sum if weight_sum > 0 else total


class NetworkTopologyAwarePlugin:
    """Place jobs with a network topology in the lowest tier that holds them; binpack hypernodes."""

    name = NAME

    def __init__(self, args: NetworkTopologyArgs) -> None:
        self.args = args
        self.scores: HyperNodeScores | None = None

    def on_session_open(self, ssn: Session) -> None:
        """Sum the hypernodes' resources and register the search, the hypernode and the node order."""
        scores = self.scores = HyperNodeScores(ssn, self.args)
        ssn.add_hyper_node_gradient_fn(NAME, scores.gradient)
        ssn.add_hyper_node_order_fn(NAME, scores.hyper_node_order)
        ssn.add_batch_node_order_fn(NAME, scores.node_order)
        ssn.add_event_handler(EventHandler(allocate=scores.allocated, deallocate=scores.deallocated))

    def on_session_close(self, ssn: Session) -> None:
        """Drop the session state."""
        self.scores = None


def new(args: NetworkTopologyArgs) -> NetworkTopologyAwarePlugin:
    """Build the plugin."""
    return NetworkTopologyAwarePlugin(args)
