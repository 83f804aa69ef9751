"""Backoff: the jobs a cycle could not place wait out of the cycles until something they could use changes.

kube-scheduler's scheduling queue, by job: a job the cycle took up and could not place (nothing bound,
nothing pipelined, a reason recorded) enters the unschedulable set with a backoff of `initial` seconds,
doubled at each further failure up to `maximum` (kube-scheduler's podInitialBackoffSeconds and
podMaxBackoffSeconds). While it waits, the runner hands its id to the cycle, whose actions leave it out
of every job walk; it still counts in every queue's request and share, so the other jobs are placed
exactly as if it had been tried and had failed (docs/semantics.md, "Backoff of unschedulable jobs").

A change to its own pods or PodGroup brings it back at the next cycle, backoff or not: a gang whose
members are still arriving is tried as each arrives, as Volcano tries it every cycle. Otherwise it is
tried again once its backoff has passed **and** the store reported a change it could use
(`Changes`): a Queue, PriorityClass or PodDisruptionBudget, or the
configuration, changed; resources may have been freed (a pod deleted, finished or releasing, a node
added or changed, a bind rolled back); with preempt or reclaim configured, a pod was placed (a new
possible victim). A job that waited `flush_after` seconds since its last failure is tried anyway, as
kube-scheduler flushes its unschedulable pods, in case a change it could use was not one of these.

Pure memory, driven by the runner: `wake` before a cycle, `skipped` for its input, `record` after it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from py_volcano.api import JobID
from py_volcano.cache.store import Changes

__all__ = ["Backoff"]


@dataclass(slots=True)
class _Waiting:
    """One unschedulable job: failed `attempts` times, last at `failed_at`, not tried before `retry_at`."""

    attempts: int
    failed_at: float
    retry_at: float
    woken: bool = False


class Backoff:
    """The unschedulable jobs, each with its backoff and whether a change woke it."""

    def __init__(
        self, *, initial: float, maximum: float, flush_after: float, clock: Callable[[], float]
    ) -> None:
        """`initial` and `maximum` bound the backoff (seconds), `flush_after` the wait without any change."""
        self.initial = initial
        self.maximum = maximum
        self.flush_after = flush_after
        self.clock = clock
        self.waiting: dict[JobID, _Waiting] = {}
        self._skipped: frozenset[JobID] = frozenset()

    def __len__(self) -> int:
        return len(self.waiting)

    def delay(self, attempts: int) -> float:
        """Return the backoff after `attempts` failures: initial x 2^(attempts - 1), at most `maximum`."""
        return min(self.initial * 2.0 ** min(attempts - 1, 62), self.maximum)

    def wake(self, changes: Changes, *, preempting: bool) -> None:
        """Mark the jobs `changes` could help; `preempting` when preempt or reclaim is configured. A job
        whose own pods or PodGroup changed comes back at once, whatever else changed beside."""
        if changes.everything or changes.freed or (preempting and changes.placed):
            for waiting in self.waiting.values():
                waiting.woken = True
        if not changes.jobs:
            return
        now = self.clock()
        for job in changes.jobs:
            helped = self.waiting.get(job)
            if helped is not None:
                helped.woken = True
                helped.retry_at = min(helped.retry_at, now)

    def wake_all(self) -> None:
        """Mark every waiting job (the configuration changed)."""
        for waiting in self.waiting.values():
            waiting.woken = True

    def _eligible(self, waiting: _Waiting, now: float) -> bool:
        return now >= waiting.retry_at and (waiting.woken or now - waiting.failed_at >= self.flush_after)

    def skipped(self) -> frozenset[JobID]:
        """Return the jobs the next cycle leaves out, and remember them as that cycle's."""
        now = self.clock()
        self._skipped = frozenset(job for job, waiting in self.waiting.items() if not self._eligible(waiting, now))
        return self._skipped

    def due(self) -> bool:
        """Return whether a job the last cycle left out may be tried now (a cycle should run)."""
        now = self.clock()
        return any(self._eligible(self.waiting[job], now) for job in self._skipped if job in self.waiting)

    def record(self, unschedulable: Iterable[JobID], present: Collection[JobID]) -> None:
        """Take a cycle's outcome: its `unschedulable` jobs wait (longer each time); a job it tried that
        is not among them leaves the set, and so does a job no longer `present` in the snapshot."""
        now = self.clock()
        failed = set(unschedulable)
        done = [job for job in self.waiting if job not in present or (job not in self._skipped and job not in failed)]
        for job in done:
            del self.waiting[job]
        for job in failed:
            previous = self.waiting.get(job)
            attempts = previous.attempts + 1 if previous is not None else 1
            self.waiting[job] = _Waiting(attempts=attempts, failed_at=now, retry_at=now + self.delay(attempts))
