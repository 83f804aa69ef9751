"""asyncio helpers of the IO edge (runner, watchers, informer, leader): waits that end early on a stop.

Nothing here knows Kubernetes; it sits below the cache and the runner.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import ParamSpec, TypeVar

__all__ = ["in_thread", "wait_any", "wait_or_stop"]

P = ParamSpec("P")
T = TypeVar("T")


async def in_thread(fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """Run `fn` in a worker thread and return what it returns; when the caller is cancelled, the
    cancellation waits for `fn` to end (a thread cannot be stopped, and what it reads may change once
    the caller unwinds)."""
    work = asyncio.ensure_future(asyncio.to_thread(fn, *args, **kwargs))
    try:
        return await asyncio.shield(work)
    except asyncio.CancelledError:
        await asyncio.wait({work})
        raise


async def wait_or_stop(stop: asyncio.Event, seconds: float) -> bool:
    """Sleep `seconds` or until `stop` is set; return whether it was set."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=seconds)
    return stop.is_set()


async def wait_any(*events: asyncio.Event, timeout: float) -> None:
    """Wait until one of `events` is set, at most `timeout` seconds; leave no waiter behind."""
    waiters = {asyncio.ensure_future(event.wait()) for event in events}
    _, pending = await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    for waiter in pending:
        waiter.cancel()
