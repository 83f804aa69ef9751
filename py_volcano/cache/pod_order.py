"""PodOrder: the store's usable pods in snapshot order (creation, then `ns/name`), kept between snapshots.

A snapshot lists pods in that order. Sorting every pod for every snapshot costs as much as a tenth of a
cycle in a cluster of 150,000 pods, while between two snapshots only the pods created or deleted move
(a pod's creation and name never change). The store tells `PodOrder` of each pod that enters or leaves
the order; `ordered` applies those few changes to the order kept from the last snapshot, or sorts afresh
when there are many (the first LIST).

The pods of the settled jobs a snapshot carries are left out of it (`api.Settled`): nearly every pod in
a busy cluster. Filtering them out of the whole order costs a pass over every pod, so the order shown to
the last snapshot is kept too, and follows how the jobs left out changed (`Since`) besides the pods'
own changes.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from itertools import compress
from operator import not_

__all__ = ["PodOrder", "Since"]

#: (order, key, job): the pod's sort key, `ns/name`, and the job it is a task of ("" for none of ours).
Entry = tuple[tuple[float, str], str, str]
#: Beyond this many changes since the last snapshot, sorting everything is cheaper than inserting each.
_FEW = 256


@dataclass(frozen=True, slots=True)
class Since:
    """How the jobs to leave out differ from `previous` (the mapping the last `ordered` call left out):
    the jobs left out now that were not, and the entries of the pods of those no longer left out as
    they were when they last were in the order."""

    previous: object
    entered: Collection[str]
    restored: Sequence[Entry]


class PodOrder:
    """Sorted `(order, key, job)` entries, with the entries added and removed since they were last sorted;
    their keys and jobs are kept beside them, in the same order, for `ordered` to filter in C; and the
    entries the last `ordered` returned, less the jobs it left out (`_shown`, for `_excluding`)."""

    __slots__ = ("_added", "_excluding", "_jobs", "_keys", "_removed", "_shown", "_sorted")

    def __init__(self) -> None:
        self._sorted: list[Entry] = []
        self._keys: list[str] = []
        self._jobs: list[str] = []
        self._added: list[Entry] = []
        self._removed: list[Entry] = []
        self._shown: list[Entry] = []
        self._excluding: object = None

    def add(self, order: tuple[float, str], key: str, job: str = "") -> None:
        """A usable pod enters the order, as a task of `job` ("": of no job of ours)."""
        self._added.append((order, key, job))

    def remove(self, order: tuple[float, str], key: str, job: str = "") -> None:
        """A usable pod leaves the order (deleted, no longer usable, or moved), as it entered it."""
        self._removed.append((order, key, job))

    def reset(self, entries: Iterable[Entry]) -> None:
        """Replace the whole order (every pod parsed again)."""
        self._sort(sorted(entries))
        self._added, self._removed = [], []
        self._shown, self._excluding = [], None

    def ordered(self, excluding: Collection[str] = (), since: Since | None = None) -> list[str]:
        """Return the pods' keys in snapshot order, less the tasks of the jobs `excluding` names. With
        `since` telling how `excluding` differs from the last call's, the entries that call returned
        follow those changes and the pods' own instead of the whole order being filtered."""
        added, removed = self._added, self._removed
        follow = since if since is not None and excluding and since.previous is self._excluding else None
        if len(added) + len(removed) > _FEW:
            self._sort(sorted(_without([*self._sorted, *added], removed)))
        else:
            entries, keys, jobs = self._sorted, self._keys, self._jobs
            for entry in added:
                at = bisect.bisect_left(entries, entry)
                entries.insert(at, entry)
                keys.insert(at, entry[1])
                jobs.insert(at, entry[2])
            for entry in removed:
                at = bisect.bisect_left(entries, entry)
                if at < len(entries) and entries[at] == entry:
                    del entries[at], keys[at], jobs[at]
        self._added, self._removed = [], []
        if not excluding:
            self._shown, self._excluding = [], None
            return self._keys.copy()
        if follow is not None:
            shown = _follow(self._shown, excluding, follow, added, removed)
        else:
            shown = list(compress(self._sorted, map(not_, map(excluding.__contains__, self._jobs))))
        self._shown, self._excluding = shown, excluding
        return [key for _, key, _ in shown]

    def _sort(self, entries: list[Entry]) -> None:
        self._sorted = entries
        self._keys = [key for _, key, _ in entries]
        self._jobs = [job for _, _, job in entries]


def _follow(
    shown: list[Entry], excluding: Collection[str], since: Since, added: list[Entry], removed: list[Entry]
) -> list[Entry]:
    """The entries shown last, less the jobs left out since, with the pods of those no longer left out
    and the pods added, less the pods removed (one occurrence each, as the whole order takes them)."""
    if since.entered:
        entered = since.entered
        shown = [entry for entry in shown if entry[2] not in entered]
    for entry in since.restored:
        bisect.insort(shown, entry)
    for entry in added:
        if entry[2] not in excluding:
            bisect.insort(shown, entry)
    for entry in removed:
        at = bisect.bisect_left(shown, entry)
        if at < len(shown) and shown[at] == entry:
            del shown[at]
    return shown


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
