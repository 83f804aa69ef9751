"""A binary heap ordered by a `less(l, r)` function, as Volcano's util.PriorityQueue.

The session's job, task and queue orders end in a tie-break by creation and id, so two distinct items
never tie: a queue of such an order is `strict`, and a comparison asks `less` once, as Go's heap does,
instead of twice to find a tie (half of allocate's job comparisons in a large cycle).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from functools import cmp_to_key
from typing import Generic, TypeVar

__all__ = ["PriorityQueue", "ordered"]

T = TypeVar("T")


class _Entry(Generic[T]):
    __slots__ = ("item", "less", "seq")

    def __init__(self, item: T, less: Callable[[T, T], bool], seq: int) -> None:
        self.item = item
        self.less = less
        self.seq = seq

    def __lt__(self, other: _Entry[T]) -> bool:
        if self.less(self.item, other.item):
            return True
        if self.less(other.item, self.item):
            return False
        return self.seq < other.seq


class _StrictEntry(_Entry[T]):
    __slots__ = ()

    def __lt__(self, other: _Entry[T]) -> bool:
        return self.less(self.item, other.item)


class PriorityQueue(Generic[T]):
    """Pop returns the item that is `less` than every other; equal items come out in push order.
    `strict`: `less` orders any two distinct items one way (no ties), so each comparison asks it once."""

    __slots__ = ("_entry", "_heap", "_less", "_seq")

    def __init__(self, less: Callable[[T, T], bool], items: Iterable[T] = (), *, strict: bool = False) -> None:
        self._less = less
        self._entry: type[_Entry[T]] = _StrictEntry if strict else _Entry
        self._seq = 0
        self._heap: list[_Entry[T]] = []
        for item in items:
            self._heap.append(self._entry(item, less, self._seq))
            self._seq += 1
        heapq.heapify(self._heap)

    def push(self, item: T) -> None:
        """Add an item."""
        heapq.heappush(self._heap, self._entry(item, self._less, self._seq))
        self._seq += 1

    def pop(self) -> T:
        """Remove and return the first item; IndexError when empty."""
        return heapq.heappop(self._heap).item

    def empty(self) -> bool:
        """True when no item is left."""
        return not self._heap

    def __len__(self) -> int:
        return len(self._heap)


def ordered(less: Callable[[T, T], bool], items: Iterable[T], *, strict: bool = False) -> list[T]:
    """Return `items` sorted so that each comes before those it is `less` than; stable on ties.
    `strict`, as for `PriorityQueue`: no two distinct items tie, so each comparison asks `less` once."""

    def compare(l: T, r: T) -> int:
        return -1 if less(l, r) else 1 if less(r, l) else 0

    def compare_strict(l: T, r: T) -> int:
        return -1 if less(l, r) else 1

    return sorted(items, key=cmp_to_key(compare_strict if strict else compare))
