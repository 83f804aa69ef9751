"""PostPool: small JSON POSTs (pods/binding) over kept HTTP/1.1 connections, with a fraction of the work
aiohttp's client does for a request.

A bind is one small POST answered with a small Status, sent hundreds of times a second in a burst.
Against the real API server aiohttp's request machinery cost about 240 us of the scheduler's CPU a
bind, this pool about 130 us (docs/performance.md, "Binds over lean HTTP/1.1 connections; small
fast-path turns on the event loop"). A connection carries one request at a time and is kept for the
next while the server keeps it open (no `Connection: close`); a connection that breaks, answers what
cannot be parsed or times out is closed and never reused. Answers are read by Content-Length or chunked
transfer encoding, as an HTTP/1.1 server may send either.
"""

from __future__ import annotations

import asyncio
import re
import socket
import ssl
from collections.abc import Callable
from urllib.parse import urlsplit

__all__ = ["ConnectFailed", "PostPool", "ResponseError"]

#: A path the pool sends as is: what Kubernetes object names and namespaces are made of.
_SAFE_PATH = re.compile(r"/[A-Za-z0-9/._~:-]*")
#: The most header bytes an answer may have before it is refused.
_MAX_HEAD = 64 * 1024


class ResponseError(ValueError):
    """The server's answer is not HTTP/1.1 the pool can read."""


class ConnectFailed(OSError):
    """No connection could be made (refused, unresolvable, TLS handshake failed, timed out): the request
    was certainly not sent."""


class _Connection(asyncio.Protocol):
    """One kept connection: the answer to the request in flight, parsed as its bytes come."""

    __slots__ = ("_answer", "_buffer", "closed", "transport")

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self._buffer = bytearray()
        self._answer: asyncio.Future[tuple[int, bytes, bool]] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        if self._answer is not None and not self._answer.done():
            try:
                parsed = _parse(self._buffer)
            except ResponseError as exc:
                self._answer.set_exception(exc)
                return
            if parsed is not None:
                self._answer.set_result(parsed)

    def eof_received(self) -> bool:
        return False  # close the transport: connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._answer is not None and not self._answer.done():
            self._answer.set_exception(ConnectionResetError(f"connection closed: {exc or 'by the server'}"))

    async def exchange(self, request: bytes) -> tuple[int, bytes, bool]:
        """Send `request`; return (status, body, whether the server keeps the connection open)."""
        assert self.transport is not None
        self._buffer.clear()
        self._answer = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        return await self._answer

    def close(self) -> None:
        """Close the connection (its answer in flight, if any, fails)."""
        self.closed = True
        if self.transport is not None:
            self.transport.close()


def _parse(buffer: bytearray) -> tuple[int, bytes, bool] | None:
    """The whole answer in `buffer` as (status, body, keep-alive), None while bytes are missing."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        if len(buffer) > _MAX_HEAD:
            raise ResponseError("answer headers too long")
        return None
    lines = bytes(buffer[:end]).decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    if not version.startswith("HTTP/1.") or not rest[:3].isdigit():
        raise ResponseError(f"not an HTTP/1.1 status line: {lines[0][:80]!r}")
    status = int(rest[:3])
    length, chunked, keep = None, False, version == "HTTP/1.1"
    for line in lines[1:]:
        name, _, value = line.partition(":")
        name = name.strip().lower()
        if name == "content-length":
            length = int(value)
        elif name == "transfer-encoding":
            chunked = "chunked" in value.lower()
        elif name == "connection":
            keep = value.strip().lower() != "close"
    if chunked:
        return _chunked(buffer, end + 4, status, keep)
    if length is None:
        if status in (204, 304) or 100 <= status < 200:
            return status, b"", keep
        raise ResponseError("answer with neither Content-Length nor chunked encoding")
    if len(buffer) < end + 4 + length:
        return None
    return status, bytes(buffer[end + 4 : end + 4 + length]), keep


def _chunked(buffer: bytearray, at: int, status: int, keep: bool) -> tuple[int, bytes, bool] | None:
    body = bytearray()
    while True:
        line_end = buffer.find(b"\r\n", at)
        if line_end < 0:
            return None
        try:
            size = int(bytes(buffer[at:line_end]).split(b";")[0], 16)
        except ValueError:
            raise ResponseError("bad chunk size") from None
        if size == 0:
            # No trailers are expected from the API server: the answer ends with an empty line.
            if buffer.find(b"\r\n", line_end + 2) < 0:
                return None
            return status, bytes(body), keep
        if len(buffer) < line_end + 2 + size + 2:
            return None
        body += buffer[line_end + 2 : line_end + 2 + size]
        at = line_end + 2 + size + 2


class PostPool:
    """Kept connections to one server for small POSTs; the caller bounds how many are in flight."""

    __slots__ = ("_base", "_closed", "_connections", "_host", "_idle", "_open_socket", "_port", "_server_name", "_ssl")

    def __init__(
        self,
        server: str,
        ssl_context: ssl.SSLContext | bool,
        *,
        server_name: str | None,
        open_socket: Callable[[tuple[int, int, int, str, tuple[object, ...]]], socket.socket],
    ) -> None:
        url = urlsplit(server)
        if url.hostname is None:
            raise ValueError(f"server {server!r} names no host")
        self._host = url.hostname
        self._port = url.port or (443 if url.scheme == "https" else 80)
        self._base = url.path.rstrip("/")
        self._ssl = ssl_context if url.scheme == "https" else None
        self._server_name = server_name or self._host
        self._open_socket = open_socket
        self._idle: list[_Connection] = []
        self._connections: set[_Connection] = set()
        self._closed = False

    async def post(self, path: str, body: bytes, headers: str, timeout: float) -> tuple[int, bytes]:
        """POST `body` to `path` with `headers` (each line ending CRLF, Content-Length added here); return
        (status, body). OSError, TimeoutError, ssl.SSLError or ResponseError when no answer came."""
        if not _SAFE_PATH.fullmatch(path):
            raise ValueError(f"path {path!r} is not one the pool sends")
        request = (
            f"POST {self._base}{path} HTTP/1.1\r\nHost: {self._host}:{self._port}\r\n{headers}"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode("latin-1") + body
        connection = None
        try:
            async with asyncio.timeout(timeout):
                connection = await self._connection()
                status, answer, keep = await connection.exchange(request)
        except (OSError, TimeoutError) as exc:
            if connection is None:
                raise ConnectFailed(f"no connection to {self._host}:{self._port}: {type(exc).__name__}: {exc}") from exc
            self._drop(connection)
            raise
        except BaseException:
            if connection is not None:
                self._drop(connection)
            raise
        if keep and not connection.closed and not self._closed:
            self._idle.append(connection)
        else:
            self._drop(connection)
        return status, answer

    async def _connection(self) -> _Connection:
        while self._idle:
            connection = self._idle.pop()
            if not connection.closed:
                return connection
            self._connections.discard(connection)
        if self._closed:
            raise ConnectionError("the pool is closed")
        loop = asyncio.get_running_loop()
        addresses = await loop.getaddrinfo(self._host, self._port, type=socket.SOCK_STREAM)
        failure: OSError = OSError(f"{self._host}:{self._port} resolves to no address")
        for address in addresses:
            sock = self._open_socket(address)
            try:
                sock.setblocking(False)
                await loop.sock_connect(sock, address[4])
            except OSError as exc:
                sock.close()
                failure = exc
                continue
            except BaseException:
                sock.close()
                raise
            _, connection = await loop.create_connection(
                _Connection,
                sock=sock,
                ssl=self._ssl,
                server_hostname=self._server_name if self._ssl else None,
            )
            self._connections.add(connection)
            return connection
        raise failure

    def _drop(self, connection: _Connection) -> None:
        connection.close()
        self._connections.discard(connection)

    def close(self) -> None:
        """Close every connection; POSTs in flight fail, later ones are refused."""
        self._closed = True
        for connection in self._connections:
            connection.close()
        self._connections.clear()
        self._idle.clear()
