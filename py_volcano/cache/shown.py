"""Shown: the store's objects as an overlay of ours shows them, the same copy from snapshot to snapshot."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["Shown"]

S = TypeVar("S")
O = TypeVar("O")


class Shown(Generic[S, O]):
    """Per key, the copy of a store object (`source`) that an overlay of ours changes (a bind or eviction
    in flight, a decided phase not yet echoed), handed out again, the very copy, while the source and the
    overlay are the very objects it was made from: a job built from it is then handed on by the next
    snapshot (`BuiltJobs`) instead of built again every cycle. A snapshot `show`s what it needs and
    `close`s; what it did not show is forgotten unless it `keep`s it."""

    __slots__ = ("_last", "_now")

    def __init__(self) -> None:
        self._last: dict[Hashable, tuple[S, O, S]] = {}
        self._now: dict[Hashable, tuple[S, O, S]] = {}

    def show(self, key: Hashable, source: S, overlay: O, make: Callable[[S, O], S]) -> S:
        """Return `source` as `overlay` shows it: the copy the last snapshot showed, or `make(source, overlay)`."""
        last = self._last.get(key)
        shown = last[2] if last is not None and last[0] is source and last[1] is overlay else make(source, overlay)
        self._now[key] = (source, overlay, shown)
        return shown

    def keep(self, kept: Callable[[Hashable], bool]) -> None:
        """Hand on the copies the last snapshot showed whose key is `kept`, unshown by this one."""
        self._now.update((key, entry) for key, entry in self._last.items() if kept(key))

    def close(self) -> None:
        """End the snapshot: what it showed is what the next one compares with."""
        self._last, self._now = self._now, {}
