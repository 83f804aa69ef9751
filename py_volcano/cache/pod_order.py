"""PodOrder: the store's usable pods in snapshot order (creation, then `ns/name`), kept between snapshots.

A snapshot lists pods in that order. Sorting every pod for every snapshot costs as much as a tenth of a
cycle in a cluster of 150,000 pods, while between two snapshots only the pods created or deleted move
(a pod's creation and name never change). The store tells `PodOrder` of each pod that enters or leaves
the order; `ordered` applies those few changes to the order kept from the last snapshot, or sorts afresh
when there are many (the first LIST).
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Collection, Iterable

__all__ = ["PodOrder"]

#: (order, key, job): the pod's sort key, `ns/name`, and the job it is a task of ("" for none of ours).
Entry = tuple[tuple[float, str], str, str]
#: Beyond this many changes since the last snapshot, sorting everything is cheaper than inserting each.
_FEW = 256


class PodOrder:
    """Sorted `(order, key, job)` entries, with the entries added and removed since they were last sorted."""

    __slots__ = ("_added", "_removed", "_sorted")

    def __init__(self) -> None:
        self._sorted: list[Entry] = []
        self._added: list[Entry] = []
        self._removed: list[Entry] = []

    def add(self, order: tuple[float, str], key: str, job: str = "") -> None:
        """A usable pod enters the order, as a task of `job` ("": of no job of ours)."""
        self._added.append((order, key, job))

    def remove(self, order: tuple[float, str], key: str, job: str = "") -> None:
        """A usable pod leaves the order (deleted, no longer usable, or moved), as it entered it."""
        self._removed.append((order, key, job))

    def reset(self, entries: Iterable[Entry]) -> None:
        """Replace the whole order (every pod parsed again)."""
        self._sorted, self._added, self._removed = sorted(entries), [], []

    def ordered(self, excluding: Collection[str] = ()) -> list[str]:
        """Return the pods' keys in snapshot order, less the tasks of the jobs `excluding` names."""
        added, removed = self._added, self._removed
        if len(added) + len(removed) > _FEW:
            self._sorted = sorted(_without([*self._sorted, *added], removed))
        else:
            entries = self._sorted
            for entry in added:
                bisect.insort(entries, entry)
            for entry in removed:
                at = bisect.bisect_left(entries, entry)
                if at < len(entries) and entries[at] == entry:
                    del entries[at]
        self._added, self._removed = [], []
        if excluding:
            return [key for _, key, job in self._sorted if job not in excluding]
        return [key for _, key, _ in self._sorted]


def _without(entries: list[Entry], removed: list[Entry]) -> list[Entry]:
    """`entries` less one occurrence of each of `removed`."""
    if not removed:
        return entries
    gone = Counter(removed)
    kept = []
    for entry in entries:
        if gone[entry] > 0:
            gone[entry] -= 1
        else:
            kept.append(entry)
    return kept
