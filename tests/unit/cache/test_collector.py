"""Pausing the cyclic collector: overlapping pauses resume it once, when the last ends, and only if it ran."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from py_volcano.cache import collector_paused


@pytest.fixture(autouse=True)
def _collector_restored() -> Iterator[None]:
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


def test_overlapping_pauses_resume_the_collector_when_the_last_one_ends() -> None:
    gc.enable()
    listing, cycle = collector_paused(), collector_paused()
    listing.__enter__()
    cycle.__enter__()
    assert not gc.isenabled()
    listing.__exit__(None, None, None)  # ends first, while the cycle still runs
    assert not gc.isenabled()
    cycle.__exit__(None, None, None)
    assert gc.isenabled()


def test_a_pause_leaves_a_collector_that_was_off_off_and_resumes_after_a_failure() -> None:
    gc.disable()
    with collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()
    gc.enable()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("a failed LIST")
    assert gc.isenabled()
