"""binpack: score nodes by how full they would be with the task, to pack tasks tightly (Volcano's binpack).

Per node: the weighted mean, over the resources the task requests and the plugin weighs, of
(used + request) / allocatable, times MaxNodeScore (100) and `binpack.weight`. A resource the node
lacks, or that would overflow it, scores 0 but keeps its weight in the mean. Vectorised over the
candidate rows with the session's `NodeArrays` (used = allocatable - idle, pipelined not counted).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from scheduler.api import CPU, MEMORY, NodeArrays, TaskInfo
from scheduler.framework import Arguments, IndexArray, Session

__all__ = ["NAME", "BinpackPlugin", "BinpackWeights", "new"]

NAME = "binpack"
MAX_NODE_SCORE = 100.0


class BinpackWeights:
    """`binpack.weight` and the weight of each resource (cpu, memory and `binpack.resources`)."""

    __slots__ = ("resources", "weight")

    def __init__(self, weight: int, resources: Mapping[str, int]) -> None:
        self.weight = weight
        self.resources = dict(resources)

    @classmethod
    def from_arguments(cls, args: Arguments) -> BinpackWeights:
        """Read the arguments as Volcano does: negative resource weights become 1."""
        resources: dict[str, int] = {}
        listed = args.get("binpack.resources")
        if listed is not None and not isinstance(listed, str):
            warnings.warn(f"plugin {NAME}: argument binpack.resources: expected a comma list", stacklevel=2)
        for name in (listed if isinstance(listed, str) else "").split(","):
            name = name.strip()
            if name:
                resources[name] = _non_negative(args.get_int(f"binpack.resources.{name}", 1))
        resources[CPU] = _non_negative(args.get_int("binpack.cpu", 1))
        resources[MEMORY] = _non_negative(args.get_int("binpack.memory", 1))
        return cls(args.get_int("binpack.weight", 1), resources)


def _non_negative(weight: int) -> int:
    return weight if weight >= 0 else 1


class BinpackPlugin:
    """Prefer the node the task fills most."""

    name = NAME

    def __init__(self, args: Arguments) -> None:
        self.args = args
        self.weights = BinpackWeights.from_arguments(args)
        self.arrays: NodeArrays | None = None

    def on_session_open(self, ssn: Session) -> None:
        """Register the node score unless `binpack.weight` is 0."""
        self.arrays = ssn.arrays
        if self.weights.weight != 0:
            ssn.add_batch_node_order_fn(NAME, self.score)

    def on_session_close(self, ssn: Session) -> None:
        """Drop the session's arrays."""
        self.arrays = None

    def score(self, task: TaskInfo, rows: IndexArray) -> npt.NDArray[np.float64]:
        """Return the binpack score of each candidate row."""
        assert self.arrays is not None
        return binpack_scores(task, rows, self.arrays, self.weights)


def binpack_scores(
    task: TaskInfo, rows: IndexArray, arrays: NodeArrays, weights: BinpackWeights
) -> npt.NDArray[np.float64]:
    """Volcano's BinPackingScore for every row of `rows`."""
    score = np.zeros(len(rows))
    weight_sum = 0
    for name in task.resreq.names():
        weight = weights.resources.get(name)
        if weight is None:
            continue
        weight_sum += weight
        column = arrays.columns.get(name)
        if weight == 0 or column is None:
            continue
        capacity = arrays.allocatable[rows, column]
        used_finally = capacity - arrays.idle[rows, column] + task.resreq.get(name)
        fits = (capacity != 0) & (used_finally <= capacity)
        score += np.where(fits, used_finally * float(weight) / np.where(capacity != 0, capacity, 1.0), 0.0)
    if weight_sum > 0:
        score /= weight_sum
    result: npt.NDArray[np.float64] = score * (MAX_NODE_SCORE * weights.weight)
    return result


def new(args: Arguments) -> BinpackPlugin:
    """Build the plugin."""
    return BinpackPlugin(args)
