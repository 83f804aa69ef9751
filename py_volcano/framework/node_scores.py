"""NodeScores: every node's summed batch score, kept per task shape within a session and brought up to
date by scoring again only the nodes written since (`NodeArrays.written_since`).

A plugin registering a batch node score may give a `row_key`: for a task, a key such that the task's
score at a node depends on that key and on that node's state alone (None: on more, as a score normalised
over the candidates). When every batch score of the session gives a key for a task and no per-node score
is registered, tasks of one key share one score per node: the tasks of a gang, placed one after the
other, each rescore the one node the one before changed instead of every candidate. A shape is kept
from its second task on (the first is scored over its candidates alone, as without keys), at most
`LIMIT` shapes at once, dropped together when full (the shapes seen once are forgotten likewise past
`SEEN_LIMIT`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import numpy as np
import numpy.typing as npt

from py_volcano.api import NodeArrays

__all__ = ["LIMIT", "SEEN_LIMIT", "NodeScores"]

IndexArray = npt.NDArray[np.intp]
FloatArray = npt.NDArray[np.float64]
ScoreRows = Callable[[IndexArray], FloatArray]

#: How many task shapes a session keeps scores for (each a float per node).
LIMIT = 64
#: How many shapes seen once a session remembers (a key each).
SEEN_LIMIT = 4096


class NodeScores:
    """Per task shape, the summed score of every node and the `NodeArrays.version` it is current to."""

    __slots__ = ("_all", "_arrays", "_kept", "_seen")

    def __init__(self, arrays: NodeArrays) -> None:
        self._arrays = arrays
        self._all: IndexArray = np.arange(len(arrays.nodes), dtype=np.intp)
        self._kept: dict[Hashable, tuple[int, FloatArray]] = {}
        self._seen: set[Hashable] = set()

    def at(self, key: Hashable, candidates: IndexArray, score: ScoreRows) -> FloatArray:
        """Return the scores of the `candidates` rows for a task of `key`; `score(rows)` sums the batch
        scores of the given rows, as the session does over candidates."""
        if key not in self._kept and key not in self._seen:
            if len(self._seen) >= SEEN_LIMIT:
                self._seen.clear()
            self._seen.add(key)
            return score(candidates)
        result: FloatArray = self.every(key, score)[candidates]
        return result

    def every(self, key: Hashable, score: ScoreRows) -> FloatArray:
        """Return the scores of every row for a task of `key`, kept from now on (read, do not write)."""
        kept = self._kept.get(key)
        if kept is not None:
            seen, scores = kept
            rows = self._arrays.written_since(seen)
            if rows is not None:
                if len(rows):
                    scores[rows] = score(rows)
                    self._kept[key] = (self._arrays.version, scores)
                return scores
        if len(self._kept) >= LIMIT:
            self._kept.clear()
        version = self._arrays.version
        scores = score(self._all)
        self._kept[key] = (version, scores)
        return scores
