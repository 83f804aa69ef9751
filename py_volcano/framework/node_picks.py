"""NodePicks: the nodes a run of alike tasks goes to, chosen for several tasks at once.

In a large cluster a task's search takes the next `NodesToFind.count` feasible nodes from where the last
search stopped, round the node list (`framework.node_search`), and the task goes to the best scored of
them: of those with idle room, else of all (pipelined). Tasks alike for every filter, request and score
(the same predicate mask key, init request and score key: a gang's pods) search windows that follow one
another. A task changes only the node it goes to, which lies in its own window, so a later window that
holds none of the nodes picked before it (every one until the windows come round to the first) holds the
nodes, fits and scores it would hold had the tasks before it been placed first. `NodePicks.plan` takes
those windows at once (one search, the windows side by side, the best of each) and `NodePicks.take`
hands them out in order while the session is as the run left it: nothing written to the node arrays
but the nodes it handed out, and the next search starting where its last window ended.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import numpy as np
import numpy.typing as npt

from py_volcano.api import NodeArrays

__all__ = ["LIMIT", "MASK_LIMIT", "SEEN_LIMIT", "NodePicks"]

IndexArray = npt.NDArray[np.intp]
FloatArray = npt.NDArray[np.float64]
MaskArray = npt.NDArray[np.bool_]

#: At most this many windows are taken at once.
LIMIT = 16
#: How many keys a session remembers having seen once, and how many that search alone (each set is
#: emptied when full).
SEEN_LIMIT = 4096
#: How many predicate masks a session keeps (a bool per node each).
MASK_LIMIT = 64


class NodePicks:
    """One session's run of picks, and the keys it plans for: from the second task of a key on (a key
    seen once may be the only one), never for a key whose search takes every feasible node."""

    __slots__ = ("_alone", "_masks", "_run", "_seen")

    def __init__(self) -> None:
        self._run: _Run | None = None
        self._seen: set[Hashable] = set()
        self._alone: set[Hashable] = set()
        self._masks: dict[Hashable, MaskArray] = {}

    def mask(self, mask_key: Hashable, compute: Callable[[], MaskArray]) -> MaskArray:
        """The predicate mask of `mask_key`, computed once: a mask key's mask stays whatever is placed
        (`Session.mask_key`). At most `MASK_LIMIT` masks, dropped together when full. Read only."""
        mask = self._masks.get(mask_key)
        if mask is None:
            if len(self._masks) >= MASK_LIMIT:
                self._masks.clear()
            mask = self._masks[mask_key] = compute()
            mask.flags.writeable = False
        return mask

    def take(self, key: Hashable, start: int, arrays: NodeArrays) -> tuple[int, bool, int] | None:
        """The next pick (row, fits idle room, next search start) for a task of `key` whose search would
        start at `start`; None when the run has none for it."""
        return self._run.take(key, start, arrays) if self._run is not None else None

    def worth_planning(self, key: Hashable) -> bool:
        """Whether to plan a run for `key` (noting that it was seen)."""
        if key in self._alone:
            return False
        if key in self._seen:
            return True
        if len(self._seen) >= SEEN_LIMIT:
            self._seen.clear()
        self._seen.add(key)
        return False

    def plan(
        self,
        key: Hashable,
        feasible: MaskArray,
        idle: MaskArray,
        scores: FloatArray,
        start: int,
        wanted: int,
        version: int,
    ) -> None:
        """Plan the picks of the windows of `wanted` feasible nodes from row `start` round the node list
        (at most `LIMIT`), each the best scored node with idle room, else the best of the window, the
        first in row order on ties, up to the first window that holds an earlier window's pick. The key
        searches alone from now on when its search would not stop at `wanted` nodes."""
        self._run = None
        nodes = len(feasible)
        found = np.flatnonzero(feasible)
        if wanted >= nodes or len(found) <= wanted:
            if len(self._alone) >= SEEN_LIMIT:
                self._alone.clear()
            self._alone.add(key)
            return
        split = int(np.searchsorted(found, start % nodes))
        # Each pick may leave its node without room, and a search stops at `wanted` nodes only while more
        # are feasible: the picks before the last leave more than `wanted`.
        # Windows come round to the first ones after len(found) / wanted; one more may still hold no pick.
        count = min(len(found) // wanted + 1, len(found) - wanted, LIMIT)
        windows, ends = _windows(found, split, count, wanted)
        fits = idle[windows]
        window_scores = scores[windows]
        best_idle = np.where(fits, window_scores, -np.inf).argmax(axis=1)
        has_idle: MaskArray = np.any(fits, axis=1)
        columns = best_idle if has_idle.all() else np.where(has_idle, best_idle, window_scores.argmax(axis=1))
        rows = windows[np.arange(count), columns]
        if count * wanted > len(found):
            count = _independent(windows, rows, len(found))
        picked, idle_room, after = rows[:count].tolist(), has_idle[:count].tolist(), ends[:count].tolist()
        self._run = _Run(key, picked, idle_room, after, start, version)


def _windows(found: IndexArray, split: int, count: int, wanted: int) -> tuple[IndexArray, IndexArray]:
    """The `count` windows of `wanted` feasible rows from `found[split]` on, round the end of the list
    (and past the first window again when they hold more than `found`), each in row order; and the row
    after each window's last one taken, where the search after it starts."""
    size = count * wanted
    if split + size <= len(found):
        windows = found[split : split + size].reshape(count, wanted)
        return windows, windows[:, -1] + 1
    windows = np.concatenate((found[split:], found, found[: max(size - 2 * len(found) + split, 0)]))
    windows = windows[:size].reshape(count, wanted)
    ends = windows[:, -1] + 1
    for window in np.flatnonzero(windows[:, 0] > windows[:, -1]):
        windows[window].sort()  # a window round the end of the list is scored in row order
    return windows, ends


def _independent(windows: IndexArray, rows: IndexArray, feasible: int) -> int:
    """How many windows, from the first, hold no pick of a window before them: only those that reach past
    the `feasible` nodes of the first round can (their rows are sorted)."""
    wanted = windows.shape[1]
    for at in range(max(feasible // wanted, 1), len(rows)):
        window = windows[at]
        found = np.minimum(np.searchsorted(window, rows[:at]), wanted - 1)
        if (window[found] == rows[:at]).any():
            return at
    return len(rows)


class _Run:
    """The picks of consecutive windows for tasks of one key: node row, whether it fits idle room, and
    where the next search starts after it."""

    __slots__ = ("_ends", "_idle", "_next", "_rows", "_start", "_taken", "_version", "key")

    def __init__(
        self, key: Hashable, rows: list[int], idle: list[bool], ends: list[int], start: int, version: int
    ) -> None:
        self.key = key
        self._rows = rows
        self._idle = idle
        self._ends = ends
        self._start = start
        self._version = version
        self._next = 0
        self._taken: set[int] = set()

    def take(self, key: Hashable, start: int, arrays: NodeArrays) -> tuple[int, bool, int] | None:
        """The next pick, while the session is as the run left it: searching from where the last pick's
        window ended, nothing written to the node arrays but the nodes picked."""
        if key != self.key or self._next >= len(self._rows):
            return None
        expected = self._ends[self._next - 1] if self._next else self._start
        if start != expected or not arrays.only_written(self._version, self._taken):
            return None
        at = self._next
        self._next += 1
        row = self._rows[at]
        self._taken.add(row)
        return row, self._idle[at], self._ends[at]
