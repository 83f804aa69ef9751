"""NodesToFind: how many feasible nodes a task's search stops at, and where the next search starts.

Volcano (as kube-scheduler) does not look at every node of a large cluster for every task: its
PredicateNodes checks nodes from where the last search stopped, round the node list, and stops once it
found as many feasible nodes as `CalculateNumOfFeasibleNodesToFind` allows; only those are scored. The
number is every node up to `--minimum-feasible-nodes` (100) or with `--percentage-nodes-to-find` 100,
else that percentage of the nodes (when 0: 50% less 1% per 125 nodes, at least
`--minimum-percentage-nodes-to-find`, 5%), and never fewer than the minimum: 500 of 5,000 nodes.
Volcano checks 16 nodes at a time; here the search is the sequential one, so it is exact: the
feasible nodes are taken in order from the start, and the next search starts after the last one taken
(after every node when fewer were found).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["NodesToFind"]

IndexArray = npt.NDArray[np.intp]
MaskArray = npt.NDArray[np.bool_]

_BASELINE_PERCENTAGE = 50


@dataclass(slots=True, frozen=True)
class NodesToFind:
    """Volcano's `--minimum-feasible-nodes`, `--minimum-percentage-nodes-to-find` and
    `--percentage-nodes-to-find` (its defaults)."""

    minimum: int = 100
    minimum_percentage: int = 5
    percentage: int = 0

    def count(self, nodes: int) -> int:
        """How many feasible nodes a search among `nodes` stops at (Volcano's CalculateNumOfFeasibleNodesToFind)."""
        if nodes <= self.minimum or self.percentage >= 100:
            return nodes
        percentage = self.percentage
        if percentage <= 0:
            percentage = max(_BASELINE_PERCENTAGE - nodes // 125, self.minimum_percentage)
        return max(nodes * percentage // 100, self.minimum)

    def search(self, feasible: MaskArray, start: int) -> tuple[IndexArray, int]:
        """Return the feasible rows the search from row `start` takes (in row order), and where the next
        search starts."""
        nodes = len(feasible)
        wanted = self.count(nodes)
        found = np.flatnonzero(feasible)
        if wanted >= nodes or len(found) == 0:
            return found, start
        if len(found) <= wanted:
            return found, start
        start %= nodes
        split = int(np.searchsorted(found, start))
        ahead = len(found) - split
        if ahead >= wanted:
            taken = found[split : split + wanted]
            return taken, int(taken[-1]) + 1
        rest = found[: wanted - ahead]  # round the end of the list
        return np.concatenate((rest, found[split:])), int(rest[-1]) + 1
