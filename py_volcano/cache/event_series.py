"""Events folded into series, as Kubernetes' events.k8s.io/v1 `series`: a repeat counts, it does not queue.

client-go's event recorder keys an event by what it is about (the object it regards, its reason,
action and type) and, for a repeat of an event it recorded lately, raises the existing Event's
`series.count` and `series.lastObservedTime` instead of creating another; the note stays the first
one's, as an Event's note cannot change. `EventSeries` does the same for the status writer:

* an event whose series is still waiting to be sent only bumps its count and last time;
* a repeat of a series sent less than `window` seconds before its last occurrence queues an update of
  that Event's series (a merge patch), folded the same way while it waits;
* anything else starts a series, created when sent.

So a pod told "FailedScheduling" by every cycle costs one Event and a few patches, not a queue slot per
cycle. At most `max_pending` series wait at once; beyond that an event is counted as not recorded
(the writer logs how many), which takes that many distinct objects and reasons at once.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["EventSeries", "Series"]

E = TypeVar("E")


@dataclass(slots=True, eq=False)
class Series(Generic[E]):
    """One series: its first event, how many times it occurred, when first and last; `name` once created."""

    key: Hashable
    event: E
    count: int
    first: float
    last: float
    name: str = ""


class EventSeries(Generic[E]):
    """The series waiting to be written, in the order they started waiting, and those written lately."""

    def __init__(self, *, max_pending: int = 10_000, window: float = 360.0, remembered: int = 10_000) -> None:
        """`window` (seconds, client-go's 6 minutes) is how long after its last occurrence a series goes on;
        `remembered` bounds the series kept after they were written."""
        self.max_pending = max_pending
        self.window = window
        self.remembered = remembered
        self._pending: OrderedDict[Hashable, Series[E]] = OrderedDict()
        self._written: OrderedDict[Hashable, Series[E]] = OrderedDict()
        self.not_recorded = 0

    def __len__(self) -> int:
        return len(self._pending)

    def add(self, key: Hashable, event: E, at: float) -> None:
        """Record one occurrence of `event` (about what `key` says) at `at` (epoch seconds)."""
        pending = self._pending.get(key)
        if pending is not None:
            pending.count += 1
            pending.last = max(pending.last, at)
            return
        if len(self._pending) >= self.max_pending:
            self.not_recorded += 1
            return
        written = self._written.pop(key, None)
        if written is not None and at - written.last <= self.window:
            written.count += 1
            written.last = max(written.last, at)
            self._pending[key] = written
            return
        self._pending[key] = Series(key=key, event=event, count=1, first=at, last=at)

    def pop(self) -> Series[E] | None:
        """Take the series that waited longest, to be written: created when it has no `name` yet (the
        writer names it as it builds the request), else its count and last time patched. From now on a
        repeat updates it."""
        if not self._pending:
            return None
        key, series = self._pending.popitem(last=False)
        self._written[key] = series
        self._written.move_to_end(key)
        while len(self._written) > self.remembered:
            self._written.popitem(last=False)
        return series

    def failed(self, series: Series[E]) -> None:
        """Forget a series whose write failed: its next occurrence starts a new one."""
        if self._written.get(series.key) is series:
            del self._written[series.key]
