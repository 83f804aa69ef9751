"""PostPool (`ApiClient.post`) against real HTTP servers on loopback: aiohttp's server for well-formed
answers (Content-Length, chunked, Connection: close, TLS), a bare socket server for broken ones."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from aiohttp import web

from py_volcano.cache.client import ApiClient, Credentials, never_sent
from py_volcano.cache.http_posts import ConnectFailed, PostPool, ResponseError
from py_volcano.errors import ApiError
from py_volcano.serving import tls_context
from tests.ports import free_port

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@contextlib.asynccontextmanager
async def server(
    handler: Handler, *, tls: bool = False, keepalive: float = 75.0
) -> AsyncIterator[tuple[str, list[int]]]:
    """Serve `handler` for every POST on a loopback port; yield the server URL and, per request, the
    client port it came from (one port: one connection)."""
    ports: list[int] = []
    sockets: list[socket.socket] = []

    async def noted(request: web.Request) -> web.StreamResponse:
        assert request.transport is not None
        ports.append(request.transport.get_extra_info("peername")[1])
        sockets.append(request.transport.get_extra_info("socket"))
        return await handler(request)

    app = web.Application()
    app.router.add_post("/{tail:.*}", noted)
    runner = web.AppRunner(app, shutdown_timeout=0.1, keepalive_timeout=keepalive)
    await runner.setup()
    port = free_port()
    context = tls_context(None, host="127.0.0.1") if tls else None
    await web.TCPSite(runner, "127.0.0.1", port, ssl_context=context).start()
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{port}", ports
    finally:
        await runner.cleanup()
        await closed(sockets)


async def closed(sockets: list[socket.socket]) -> None:
    """Wait until the server's side of every connection is closed (a transport closes its socket turns
    of the loop after `close`; a loop ended before leaves it to the collector, with a ResourceWarning)."""
    for _ in range(200):
        if all(sock.fileno() == -1 for sock in sockets):
            return
        await asyncio.sleep(0.005)


async def echo(request: web.Request) -> web.Response:
    body = await request.json()
    return web.json_response(
        {"path": request.path, "got": body, "auth": request.headers.get("Authorization")}, status=201
    )


def test_posts_share_one_kept_connection_and_carry_the_headers() -> None:
    async def scenario() -> tuple[list[tuple[int, object]], list[int]]:
        async with server(echo) as (url, ports):
            client = ApiClient(Credentials(server=url, authorization="Bearer t0ken"), timeout=5)
            try:
                answers = [await client.post(f"/api/v1/namespaces/ns/pods/p{i}/binding", {"i": i}) for i in range(3)]
            finally:
                await client.close()
            return answers, ports

    answers, ports = asyncio.run(scenario())
    assert answers == [
        (201, {"path": f"/api/v1/namespaces/ns/pods/p{i}/binding", "got": {"i": i}, "auth": "Bearer t0ken"})
        for i in range(3)
    ]
    assert len(set(ports)) == 1


def test_a_chunked_answer_is_read_whole() -> None:
    async def chunked(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(status=409)
        response.enable_chunked_encoding()
        response.content_type = "application/json"
        await response.prepare(request)
        for part in (b'{"message": "pod p is ', b"already ", b'assigned"}'):
            await response.write(part)
            await asyncio.sleep(0.01)
        await response.write_eof()
        return response

    async def scenario() -> tuple[int, object]:
        async with server(chunked) as (url, _):
            client = ApiClient(Credentials(server=url), timeout=5)
            try:
                first = await client.post("/b", {})
                assert first == await client.post("/b", {})  # the connection was left at the answer's end
                return first
            finally:
                await client.close()

    assert asyncio.run(scenario()) == (409, {"message": "pod p is already assigned"})


def test_a_connection_the_server_closes_is_not_reused() -> None:
    async def closing(request: web.Request) -> web.Response:
        response = web.json_response({}, status=201)
        response.force_close()
        return response

    async def idle_closed(request: web.Request) -> web.Response:
        return web.json_response({}, status=201)

    async def scenario() -> tuple[list[int], list[int]]:
        async with (
            server(closing) as (url, closed_ports),
            server(idle_closed, keepalive=0.05) as (idle_url, idle_ports),
        ):
            client = ApiClient(Credentials(server=url), timeout=5)
            idle = ApiClient(Credentials(server=idle_url), timeout=5)
            try:
                for _ in range(3):
                    assert (await client.post("/b", {}))[0] == 201
                for _ in range(2):
                    assert (await idle.post("/b", {}))[0] == 201
                    await asyncio.sleep(0.3)  # the server closes the idle connection meanwhile
            finally:
                await client.close()
                await idle.close()
            return closed_ports, idle_ports

    closed_ports, idle_ports = asyncio.run(scenario())
    assert len(set(closed_ports)) == 3 and len(set(idle_ports)) == 2


def test_tls_and_a_path_prefix_in_the_server_url() -> None:
    async def scenario() -> tuple[int, object]:
        async with server(echo, tls=True) as (url, _):
            client = ApiClient(Credentials(server=f"{url}/k8s/clusters/c-1/", verify=False), timeout=5)
            try:
                return await client.post("/api/v1/namespaces/ns/pods/p/binding", {"a": 1})
            finally:
                await client.close()

    status, body = asyncio.run(scenario())
    assert status == 201 and isinstance(body, dict)
    assert body["path"] == "/k8s/clusters/c-1/api/v1/namespaces/ns/pods/p/binding" and body["got"] == {"a": 1}


def test_no_listener_is_a_failure_never_sent() -> None:
    async def scenario() -> ApiError:
        client = ApiClient(Credentials(server=f"http://127.0.0.1:{free_port()}"), timeout=5)
        try:
            with pytest.raises(ApiError) as caught:
                await client.post("/b", {})
            return caught.value
        finally:
            await client.close()

    error = asyncio.run(scenario())
    assert error.status is None and "no answer" in str(error)
    assert isinstance(error.__cause__, ConnectFailed) and never_sent(error)


def test_an_answer_too_late_times_out_and_its_connection_is_dropped() -> None:
    slow = asyncio.Event()

    async def late(request: web.Request) -> web.Response:
        if not slow.is_set():
            slow.set()
            await asyncio.sleep(1.0)
        return web.json_response({}, status=201)

    async def scenario() -> tuple[ApiError, int, list[int]]:
        async with server(late) as (url, ports):
            client = ApiClient(Credentials(server=url), timeout=0.2)
            try:
                with pytest.raises(ApiError) as caught:
                    await client.post("/b", {})
                status, _ = await client.post("/b", {})
            finally:
                await client.close()
            return caught.value, status, ports

    error, status, ports = asyncio.run(scenario())
    assert error.status is None and not never_sent(error)  # sent: the server may have written it
    assert status == 201 and len(set(ports)) == 2


@pytest.mark.parametrize(
    "answer",
    [
        b"SPDY/3 200 OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    ],
)
def test_an_answer_that_is_not_http_fails_the_post(answer: bytes) -> None:
    async def scenario() -> BaseException:
        handled: list[asyncio.Task[None]] = []

        async def reply(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            handled.append(task)
            await reader.readuntil(b"\r\n\r\n")
            writer.write(answer)
            await writer.drain()
            await reader.read()  # until the client drops the connection
            writer.close()
            await writer.wait_closed()

        listener = await asyncio.start_server(reply, "127.0.0.1", 0)
        port = listener.sockets[0].getsockname()[1]
        pool = PostPool(f"http://127.0.0.1:{port}", False, server_name=None, open_socket=_socket)
        try:
            with pytest.raises((ResponseError, ConnectionError)) as caught:
                await pool.post("/b", b"{}", "", 2.0)
            return caught.value
        finally:
            pool.close()
            await asyncio.wait_for(asyncio.gather(*handled), 5)
            listener.close()
            await listener.wait_closed()

    assert isinstance(asyncio.run(scenario()), ResponseError)


def test_a_path_with_characters_it_would_have_to_escape_is_refused() -> None:
    pool = PostPool("http://127.0.0.1:1", False, server_name=None, open_socket=_socket)
    with pytest.raises(ValueError, match="not one the pool sends"):
        asyncio.run(pool.post("/api/v1/namespaces/ns/pods/a b\r\nX: y/binding", b"{}", "", 1.0))


def _socket(address: tuple[int, int, int, str, tuple[object, ...]]) -> socket.socket:
    family, kind, proto, _, _ = address
    return socket.socket(family=family, type=kind, proto=proto)
