"""The asyncio helpers of the IO edge: waits that end early and leave no waiter behind, work in a thread."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from py_volcano.aio import in_thread, wait_any, wait_or_stop


def test_wait_or_stop_says_whether_stop_was_set() -> None:
    """A set stop ends the wait at once with True; an unset one sleeps the time out and gives False."""

    async def scenario() -> tuple[bool, bool]:
        stop = asyncio.Event()
        timed_out = await wait_or_stop(stop, 0.01)
        stop.set()
        stopped = await wait_or_stop(stop, 5)
        return timed_out, stopped

    assert asyncio.run(scenario()) == (False, True)


def test_wait_any_ends_on_the_first_event_and_cancels_the_other_waiters() -> None:
    """One event of two set: the wait ends long before its timeout and no waiting task is left."""

    async def scenario() -> tuple[float, int]:
        first, second = asyncio.Event(), asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.call_later(0.01, second.set)
        started = loop.time()
        await wait_any(first, second, timeout=5)
        waited = loop.time() - started
        await asyncio.sleep(0)  # let the cancelled waiter finish
        return waited, len(asyncio.all_tasks() - {asyncio.current_task()})

    waited, left = asyncio.run(scenario())
    assert waited < 1 and left == 0


def test_in_thread_returns_what_the_function_returns() -> None:
    assert asyncio.run(in_thread(sum, (1, 2, 3), start=4)) == 10


def test_a_cancelled_caller_of_in_thread_waits_for_its_thread() -> None:
    """The cancellation comes back only once the thread is done (the store's hold ends after it)."""

    ended = threading.Event()

    def slow() -> None:
        time.sleep(0.2)
        ended.set()

    async def caller() -> None:
        task = asyncio.ensure_future(in_thread(slow))
        await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert ended.is_set()  # the cancellation came back only once the thread was done

    asyncio.run(caller())
