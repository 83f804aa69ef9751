"""Events fold into series (count, first and last time) as Kubernetes' events.k8s.io/v1 `series`."""

from __future__ import annotations

from py_volcano.cache.event_series import EventSeries


def test_repeats_of_a_waiting_event_fold_into_one_series() -> None:
    """Three FailedScheduling of one pod before the writer sends any: one Event, count 3, last time the third's."""
    series: EventSeries[str] = EventSeries()
    for at in (10.0, 11.0, 12.5):
        series.add(("pod-a", "FailedScheduling"), f"note at {at}", at)
    assert len(series) == 1
    sent = series.pop()
    assert sent is not None
    assert (sent.event, sent.count, sent.first, sent.last, sent.name) == ("note at 10.0", 3, 10.0, 12.5, "")
    assert series.pop() is None


def test_a_repeat_after_the_event_was_written_updates_it_within_the_window() -> None:
    """The same series comes back, named, with its count raised: the writer patches it, never creates another."""
    series: EventSeries[str] = EventSeries(window=360.0)
    series.add("key", "first", 10.0)
    written = series.pop()
    assert written is not None
    written.name = "pod-a.17f"  # the writer names it as it builds the create request
    series.add("key", "again", 100.0)
    update = series.pop()
    assert update is written
    assert (update.name, update.count, update.last, update.event) == ("pod-a.17f", 2, 100.0, "first")


def test_a_repeat_long_after_the_series_ended_starts_a_new_one() -> None:
    """Past the window (client-go's 6 minutes) a new Event is created."""
    series: EventSeries[str] = EventSeries(window=360.0)
    series.add("key", "first", 10.0)
    old = series.pop()
    assert old is not None
    old.name = "x.1"
    series.add("key", "later", 400.0)
    new = series.pop()
    assert new is not None
    assert new is not old
    assert (new.name, new.count, new.event) == ("", 1, "later")


def test_a_failed_write_forgets_the_series() -> None:
    """A create or patch that failed is not patched again: the next occurrence starts over."""
    series: EventSeries[str] = EventSeries()
    series.add("key", "first", 10.0)
    sent = series.pop()
    assert sent is not None
    series.failed(sent)
    series.add("key", "again", 11.0)
    again = series.pop()
    assert again is not None and again is not sent


def test_distinct_series_beyond_the_bound_are_counted_not_queued() -> None:
    """The bound holds distinct series; repeats of a waiting one never count against it."""
    series: EventSeries[int] = EventSeries(max_pending=2)
    for i in range(3):
        series.add(i, i, 1.0)
    for _ in range(10):
        series.add(0, 0, 2.0)
    assert (len(series), series.not_recorded) == (2, 1)
