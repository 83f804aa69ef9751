"""The scheduler's one async API client: aiohttp over a single connection pool, bounded concurrency.

Binds, evictions, status writes, Lease renewals and LISTs all go through `ApiClient.request`; the pod and
node watches through `ApiClient.stream`, on a pool of their own, so a long-lived stream never takes a
connection a bind is waiting for. TLS and credentials come from the official `kubernetes` package's loaders
(kubeconfig or in-cluster), so every auth flavour it reads (client certificates, bearer tokens, exec plugins,
rotating service-account tokens) works here too; kopf's watch streams use the same `Credentials` (see
`watchers.py`).

Why aiohttp rather than the official client in a thread pool: a bind is a tiny POST whose cost is the
round trip; the official client spends most of it in urllib3/thread hand-offs and model (de)serialisation,
so 32 threads plateau where one event loop with 32 pooled connections does not (`bench/bind_client.py`).
"""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import time
import weakref
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from typing import Any, Self, TypeVar

import aiohttp
import structlog

from py_volcano.cache.http_posts import ConnectFailed, PostPool, ResponseError
from py_volcano.cache.json_codec import dumps, loads
from py_volcano.cache.watch_json import loads_event
from py_volcano.errors import ApiError, ConfigError

__all__ = ["ApiClient", "Credentials", "api_failure", "load_credentials", "never_sent", "status_message"]

log = structlog.get_logger(__name__)

E = TypeVar("E", bound=ApiError)

#: How often a credentials refresh hook (rotating service-account token, exec plugin) is re-run, seconds.
_REFRESH_EVERY = 60.0
#: How long closing a client waits for its connections' sockets to close (a TLS shutdown's exchange).
_CLOSE_GRACE = 1.0


@dataclass(slots=True)
class Credentials:
    """Where the API server is and how to authenticate to it, as the `kubernetes` loaders found it."""

    server: str
    ca_path: str | None = None
    verify: bool = True
    cert_path: str | None = None
    key_path: str | None = None
    authorization: str | None = None
    tls_server_name: str | None = None
    default_namespace: str = "default"
    source: str = "kubeconfig"
    _configuration: Any = None

    def refresh(self) -> None:
        """Re-run the loader's refresh hook (a blocking call: token file read or exec plugin)."""
        configuration = self._configuration
        hook = getattr(configuration, "refresh_api_key_hook", None)
        if configuration is None or hook is None:
            return
        hook(configuration)
        self.authorization = _authorization(configuration)

    @property
    def refreshable(self) -> bool:
        """Return whether the credentials carry a refresh hook."""
        return getattr(self._configuration, "refresh_api_key_hook", None) is not None

    def ssl_context(self) -> ssl.SSLContext | bool:
        """Return the TLS context for https servers, False for plain http."""
        if not self.server.startswith("https"):
            return False
        context = ssl.create_default_context(cafile=self.ca_path if self.verify else None)
        if not self.verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if self.cert_path:
            context.load_cert_chain(self.cert_path, self.key_path)
        return context


def _authorization(configuration: Any) -> str | None:
    # The loaders store a bearer token under "BearerToken" (kubernetes >= 29) or "authorization" (older).
    for setting in configuration.auth_settings().values():
        is_header = setting.get("in") == "header" and str(setting.get("key", "")).lower() == "authorization"
        if is_header and setting.get("value"):
            return str(setting["value"])
    header = configuration.get_api_key_with_prefix("authorization")
    if header:
        return str(header)
    if configuration.username or configuration.password:
        return str(configuration.get_basic_auth_token())
    return None


def _namespace_of(kubeconfig: str | None) -> str:
    from kubernetes.config import kube_config as loader

    kube_config: Any = loader  # untyped package

    try:
        _, context = kube_config.list_kube_config_contexts(config_file=kubeconfig)
    except Exception:  # the in-cluster case has no kubeconfig; any reading failure means "no namespace"
        return "default"
    return str((context or {}).get("context", {}).get("namespace") or "default")


def load_credentials(kubeconfig: str | None) -> Credentials:
    """Load credentials: the given kubeconfig, else in-cluster config, else $KUBECONFIG / ~/.kube/config.

    Blocking (reads files, may run an exec plugin). ConfigError when no usable configuration is found.
    """
    from kubernetes import client
    from kubernetes import config as loaders

    config: Any = loaders  # untyped package
    configuration = client.Configuration()
    source = kubeconfig or "kubeconfig"
    try:
        if kubeconfig is None:
            try:
                config.load_incluster_config(client_configuration=configuration)
                source = "in-cluster"
            except config.ConfigException:
                config.load_kube_config(client_configuration=configuration)
        else:
            config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
    except (config.ConfigException, OSError, ValueError, TypeError) as exc:
        raise ConfigError(f"kubeconfig {source}: {exc}") from exc
    return Credentials(
        server=str(configuration.host).rstrip("/"),
        ca_path=configuration.ssl_ca_cert,
        verify=bool(configuration.verify_ssl),
        cert_path=configuration.cert_file,
        key_path=configuration.key_file,
        authorization=_authorization(configuration),
        tls_server_name=getattr(configuration, "tls_server_name", None),
        default_namespace="default" if source == "in-cluster" else _namespace_of(kubeconfig),
        source=source,
        _configuration=configuration,
    )


def status_message(body: object) -> str:
    """Return the API server's reason for a failure: a Status object's message, else the raw body."""
    if isinstance(body, Mapping):
        return str(body.get("message") or body.get("reason") or json.dumps(body)[:300])
    return str(body)[:300]


def never_sent(error: BaseException) -> bool:
    """Return whether a failed call provably never reached the API server (no connection was made).

    Such a bind or eviction certainly did not happen; any other call without an answer may have.
    """
    cause: BaseException | None = error
    while cause is not None:
        if isinstance(cause, (aiohttp.ClientConnectorError, ConnectFailed)):
            return True
        cause = cause.__cause__
    return False


def api_failure(kind: type[E], what: str, *, status: int | None = None, body: object = None) -> E:
    """Return the `kind` error (BindError, EvictError, StatusWriteError, ApiError) for a failed call.

    `what` names the operation and object ("bind ns/pod to node-1"); `status` is the HTTP status, None
    when the request never got an answer (then `body` is the connection failure). The single place
    where API server answers and transport failures become py-volcano errors.
    """
    shown = f"HTTP {status}" if status is not None else "no answer"
    return kind(f"{what}: {shown}: {status_message(body)}", status=status)


class ApiClient:
    """An async Kubernetes API client: aiohttp sessions for requests and watches, lean kept connections
    for binds (`post`), at most `concurrency` requests in flight."""

    def __init__(self, credentials: Credentials, *, concurrency: int = 32, timeout: float = 30.0) -> None:
        """Use `connect`; this constructor must run inside the event loop that will use the client."""
        self.credentials = credentials
        self.concurrency = concurrency
        self._sockets: weakref.WeakSet[socket.socket] = weakref.WeakSet()
        connector = aiohttp.TCPConnector(
            limit=concurrency, ssl=credentials.ssl_context(), socket_factory=self._open_socket
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=timeout, connect=min(timeout, 10.0)),
        )
        self._streams = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, ssl=credentials.ssl_context(), socket_factory=self._open_socket),
            timeout=aiohttp.ClientTimeout(total=None, connect=min(timeout, 10.0)),
        )
        self._posts = PostPool(
            credentials.server,
            credentials.ssl_context(),
            server_name=credentials.tls_server_name,
            open_socket=self._open_socket,
        )
        self._timeout = timeout
        self._semaphore = asyncio.Semaphore(concurrency)
        self._refresh_lock = asyncio.Lock()
        self._refreshed_at = time.monotonic()

    @classmethod
    async def connect(cls, *, kubeconfig: str | None, concurrency: int = 32, timeout: float = 30.0) -> Self:
        """Load credentials (ConfigError when there are none) and open the connection pool.

        `timeout` bounds one whole request, seconds.
        """
        credentials = await asyncio.to_thread(load_credentials, kubeconfig)
        return cls(credentials, concurrency=concurrency, timeout=timeout)

    @property
    def server(self) -> str:
        """Return the API server URL."""
        return self.credentials.server

    async def _headers(self, content_type: str) -> dict[str, str]:
        if self.credentials.refreshable and time.monotonic() - self._refreshed_at > _REFRESH_EVERY:
            async with self._refresh_lock:
                if time.monotonic() - self._refreshed_at > _REFRESH_EVERY:
                    await asyncio.to_thread(self.credentials.refresh)
                    self._refreshed_at = time.monotonic()
        headers = {"Accept": "application/json", "Content-Type": content_type}
        if self.credentials.authorization:
            headers["Authorization"] = self.credentials.authorization
        return headers

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: object = None,
        params: Mapping[str, str] | None = None,
        content_type: str = "application/json",
    ) -> tuple[int, Any]:
        """Send one request; return (HTTP status, parsed JSON body or text).

        Never raises for an HTTP status: the caller decides what a 404 or 409 means. Raises ApiError
        (status None) when no answer came: connection refused or reset, TLS failure, timeout.
        """
        data = None if body is None else dumps(body)
        headers = await self._headers(content_type)
        url = self.credentials.server + path
        try:
            async with (
                self._semaphore,
                self._session.request(
                    method,
                    url,
                    data=data,
                    params=dict(params) if params else None,
                    headers=headers,
                    server_hostname=self.credentials.tls_server_name,
                ) as response,
            ):
                raw = await response.read()
                status = response.status
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise ApiError(f"{method} {path}: no answer: {type(exc).__name__}: {exc}", status=None) from exc
        return status, _parse(raw)

    async def post(self, path: str, body: object) -> tuple[int, Any]:
        """POST a small JSON body (a binding) over the lean kept connections (`cache.http_posts`); return
        (HTTP status, parsed JSON body or text), as `request` does, and raise as it does."""
        data = dumps(body)
        headers = "".join(f"{name}: {value}\r\n" for name, value in (await self._headers("application/json")).items())
        try:
            async with self._semaphore:
                status, raw = await self._posts.post(path, data, headers, self._timeout)
        except (TimeoutError, OSError, ResponseError) as exc:
            raise ApiError(f"POST {path}: no answer: {type(exc).__name__}: {exc}", status=None) from exc
        return status, _parse(raw)

    async def stream(
        self, path: str, *, params: Mapping[str, str], timeout: float
    ) -> AsyncGenerator[tuple[int, Any], None]:
        """Send a streaming GET (a watch); yield (HTTP status, parsed JSON) for each line until the server
        ends the stream, or once (status, body) when it answers with anything but 200. Lines are watch
        events, decoded without their object's managedFields (`watch_json`).

        `timeout` bounds the wait for the next bytes, so a half-open connection ends as a failure. Raises
        ApiError (status None) when the stream cannot be opened or breaks.
        """
        headers = await self._headers("application/json")
        try:
            async with self._streams.get(
                self.credentials.server + path,
                params=dict(params),
                headers=headers,
                server_hostname=self.credentials.tls_server_name,
                timeout=aiohttp.ClientTimeout(total=None, sock_read=timeout, connect=10.0),
            ) as response:
                if response.status != 200:
                    yield response.status, _parse(await response.read())
                    return
                tail = b""
                async for chunk in response.content.iter_any():
                    lines = (tail + chunk).split(b"\n")
                    tail = lines.pop()
                    for line in lines:
                        if line.strip():
                            yield 200, loads_event(line)
        except (TimeoutError, aiohttp.ClientError, OSError, ValueError) as exc:
            raise ApiError(f"GET {path} (watch): stream broken: {type(exc).__name__}: {exc}", status=None) from exc

    def _open_socket(self, addr_info: tuple[int, int, int, str, tuple[Any, ...]]) -> socket.socket:
        """Open a connection's socket (aiohttp's `socket_factory`), noted so `close` can wait for it."""
        family, kind, proto, _, _ = addr_info
        sock = socket.socket(family=family, type=kind, proto=proto)
        self._sockets.add(sock)
        return sock

    async def close(self) -> None:
        """Close the connection pools; requests and streams in flight fail. Returns once every socket the
        client opened is closed (at most `_CLOSE_GRACE` seconds)."""
        self._posts.close()
        await self._session.close()
        await self._streams.close()
        # A transport closes its socket turns of the loop later; a TLS connection closed earlier (a stream
        # left mid-response) only after its shutdown exchange. A loop ended before (asyncio.run) leaves
        # "unclosed transport" ResourceWarnings for the collector to raise in whatever runs then.
        deadline = time.monotonic() + _CLOSE_GRACE
        while any(sock.fileno() != -1 for sock in self._sockets) and time.monotonic() < deadline:
            await asyncio.sleep(0.005)

    async def __aenter__(self) -> ApiClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


def _parse(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return loads(raw)
    except ValueError:
        return raw.decode(errors="replace")
