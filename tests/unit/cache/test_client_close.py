"""Closing an ApiClient closes every socket it opened, TLS ones included, before it returns.

A TLS connection closed while its response still streams (a watch left early) ends with a shutdown
exchange with the server. A loop ended before that exchange leaves the socket's transport for the
garbage collector, whose "unclosed transport" ResourceWarning then fails whatever test runs at that
moment (with `filterwarnings = error`). Here the server's loop is held while the client leaves the
stream and closes, so the exchange cannot end before the server answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import threading
import time
import warnings
from collections.abc import Iterator

from aiohttp import web

from py_volcano.cache.client import ApiClient, Credentials
from py_volcano.serving import tls_context
from tests.ports import free_port


async def watch(request: web.Request) -> web.StreamResponse:
    """A watch that never ends: an event every few milliseconds."""
    response = web.StreamResponse()
    await response.prepare(request)
    with contextlib.suppress(ConnectionError):
        while True:
            await response.write(b'{"type":"ADDED","object":{"metadata":{"name":"p"}}}\n')
            await asyncio.sleep(0.005)
    return response


@contextlib.contextmanager
def tls_server() -> Iterator[tuple[asyncio.AbstractEventLoop, int]]:
    """Serve `watch` over TLS on a loopback port from a loop of its own thread; yield that loop and port."""
    loop = asyncio.new_event_loop()
    port = free_port()
    app = web.Application()
    app.router.add_get("/watch", watch)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    context = tls_context(None, host="127.0.0.1")

    async def start() -> None:
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port, ssl_context=context).start()

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(start(), loop).result(timeout=10)
    try:
        yield loop, port
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


def hold(loop: asyncio.AbstractEventLoop, seconds: float) -> None:
    """Block `loop` for `seconds` from now (returns once it is blocked)."""
    held = threading.Event()

    def block() -> None:
        held.set()
        time.sleep(seconds)

    loop.call_soon_threadsafe(block)
    assert held.wait(timeout=10)


def test_close_returns_once_a_stream_left_mid_response_has_closed_its_socket() -> None:
    with tls_server() as (server_loop, port):

        async def scenario() -> None:
            client = ApiClient(Credentials(server=f"https://127.0.0.1:{port}", verify=False), timeout=5)
            async with contextlib.aclosing(client.stream("/watch", params={}, timeout=5)) as stream:
                async for status, _ in stream:
                    assert status == 200
                    break
                hold(server_loop, 0.3)  # the server answers the client's close_notify only after this
            await client.close()

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ResourceWarning)
            asyncio.run(scenario())
            gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []
