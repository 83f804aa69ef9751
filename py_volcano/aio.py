"""asyncio helpers of the IO edge (runner, watchers, informer, leader): waits that end early on a stop.

Nothing here knows Kubernetes; it sits below the cache and the runner.
"""

from __future__ import annotations

import asyncio
import contextlib

__all__ = ["wait_any", "wait_or_stop"]


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
