"""A binary heap ordered by a `less(l, r)` function, as Volcano's util.PriorityQueue."""

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


class PriorityQueue(Generic[T]):
    """Pop returns the item that is `less` than every other; equal items come out in push order."""

    __slots__ = ("_heap", "_less", "_seq")

    def __init__(self, less: Callable[[T, T], bool], items: Iterable[T] = ()) -> None:
        self._less = less
        self._seq = 0
        self._heap: list[_Entry[T]] = []
        for item in items:
            self._heap.append(_Entry(item, less, self._seq))
            self._seq += 1
        heapq.heapify(self._heap)

    def push(self, item: T) -> None:
        """Add an item."""
        heapq.heappush(self._heap, _Entry(item, self._less, self._seq))
        self._seq += 1

    def pop(self) -> T:
        """Remove and return the first item; IndexError when empty."""
        return heapq.heappop(self._heap).item

    def empty(self) -> bool:
        """True when no item is left."""
        return not self._heap

    def __len__(self) -> int:
        return len(self._heap)


def ordered(less: Callable[[T, T], bool], items: Iterable[T]) -> list[T]:
    """Return `items` sorted so that each comes before those it is `less` than; stable on ties."""

    def compare(l: T, r: T) -> int:
        return -1 if less(l, r) else 1 if less(r, l) else 0

    return sorted(items, key=cmp_to_key(compare))
