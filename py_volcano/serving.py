"""The secure /metrics endpoint: HTTPS, each request's bearer token and user checked by the API server.

As kube-scheduler's `--secure-port` and controller-runtime's secure metrics: the serving certificate comes
from `--tls-cert-file`/`--tls-private-key-file` (re-read when the files change, so a rotated Secret is
picked up) or, when none is given, is self-signed at start and kept in memory. A request without a
bearer token, or whose token the TokenReview refuses, is answered 401; one whose user the
SubjectAccessReview (non-resource URL `/metrics`, verb `get`) does not allow, 403; a review that got no
usable answer, 503 when the API server could not be reached or was unavailable, else 500. The probes
stay on the plain `--listen-address` (metrics.serve).
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import os
import socket
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import structlog
from aiohttp import web
from aiohttp.typedefs import Handler
from prometheus_client import CONTENT_TYPE_PLAIN_0_0_4

from py_volcano.errors import ApiError, ConfigError
from py_volcano.metrics import Metrics, split_address

__all__ = ["CERT_CHECK_PERIOD", "Reviewer", "TlsFiles", "metrics_handler", "self_signed", "serve_secure", "tls_context"]

log = structlog.get_logger(__name__)

#: Seconds between two looks at the certificate files for a rotation.
CERT_CHECK_PERIOD = 60.0
#: Validity of a self-signed certificate (kube-scheduler's: one year; it lasts as long as the process).
_SELF_SIGNED_DAYS = 365


class _User(Protocol):
    @property
    def name(self) -> str: ...


class _Decision(Protocol):
    @property
    def allowed(self) -> bool: ...


U = TypeVar("U", bound=_User)


class Reviewer(Protocol[U]):
    """Delegated authentication and authorization (the cache's AccessReviewer)."""

    async def authenticate(self, token: str) -> U | None:
        """The token's user, None when the token is not valid; ApiError without a usable answer."""
        ...

    async def authorize(self, user: U, *, path: str, verb: str) -> _Decision:
        """Whether `user` may `verb` the URL `path`; ApiError without a usable answer."""
        ...


@dataclass(slots=True, frozen=True)
class TlsFiles:
    """A PEM certificate (chain) and its private key."""

    cert: Path
    key: Path

    def stamp(self) -> tuple[int, ...] | None:
        """The files' identities and modification times (a Secret mount swaps a symlink to new files),
        None while either is missing."""
        try:
            cert, key = self.cert.stat(), self.key.stat()
        except OSError:
            return None
        return (cert.st_ino, cert.st_mtime_ns, key.st_ino, key.st_mtime_ns)


def self_signed(hosts: list[str]) -> bytes:
    """Return the PEM of a new private key and a certificate for `hosts` (names or IPs) signed by it."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = []
    for host in dict.fromkeys(hosts):
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    now = datetime.datetime.now(datetime.UTC)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"py-volcano@{int(now.timestamp())}")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=_SELF_SIGNED_DAYS))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM) + key_pem


def _load_pem(context: ssl.SSLContext, pem: bytes) -> None:
    """Load a certificate and key held in memory: ssl reads only files, so through an anonymous memory
    file where Linux has one (nothing is written to disk; the root filesystem may be read-only), else a
    private temporary file removed at once."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("py-volcano-tls")
        try:
            os.write(fd, pem)
            context.load_cert_chain(f"/proc/self/fd/{fd}")
        finally:
            os.close(fd)
        return
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "tls.pem"
        path.write_bytes(pem)
        path.chmod(0o600)
        context.load_cert_chain(path)


def tls_context(files: TlsFiles | None, *, host: str | None) -> ssl.SSLContext:
    """Return the server's TLS context (TLS 1.2 at least): from `files`, or self-signed for localhost,
    this machine's name and `host`. ConfigError when the files cannot be loaded."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if files is None:
        hosts = ["localhost", "127.0.0.1", "::1", socket.gethostname()]
        if host and host not in ("0.0.0.0", "::"):
            hosts.append(host)
        _load_pem(context, self_signed(hosts))
        return context
    try:
        context.load_cert_chain(files.cert, files.key)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(
            f"--tls-cert-file {files.cert} / --tls-private-key-file {files.key}: cannot load: {exc}"
        ) from exc
    return context


async def _reload_on_change(context: ssl.SSLContext, files: TlsFiles, period: float) -> None:
    """Load the files into `context` whenever they change (new connections get the new certificate);
    a pair that does not load is logged and the previous one kept."""
    loaded = files.stamp()
    while True:
        await asyncio.sleep(period)
        stamp = files.stamp()
        if stamp is None or stamp == loaded:
            continue
        try:
            context.load_cert_chain(files.cert, files.key)
        except (OSError, ssl.SSLError) as exc:
            log.error("tls_reload_failed", cert=str(files.cert), key=str(files.key), reason=str(exc))
        else:
            log.info("tls_reloaded", cert=str(files.cert))
        loaded = stamp


def _bearer_token(request: web.Request) -> str | None:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def _unavailable(exc: ApiError) -> bool:
    """Whether a failed review means the API server was out of reach or overloaded (503), rather than
    refusing the review itself (500: e.g. the scheduler lacks system:auth-delegator)."""
    return exc.status is None or exc.status == 429 or exc.status >= 500


def metrics_handler(metrics: Metrics, reviewer: Reviewer[Any]) -> Handler:
    """Return the /metrics handler that answers only requests the API server authenticates and allows."""

    async def handle(request: web.Request) -> web.Response:
        token = _bearer_token(request)
        if token is None:
            return web.Response(status=401, text="Unauthorized\n", headers={"WWW-Authenticate": "Bearer"})
        try:
            user = await reviewer.authenticate(token)
            if user is None:
                return web.Response(status=401, text="Unauthorized\n", headers={"WWW-Authenticate": "Bearer"})
            decision = await reviewer.authorize(user, path=request.path, verb="get")
        except ApiError as exc:
            status = 503 if _unavailable(exc) else 500
            log.error("metrics_review_failed", path=request.path, reason=str(exc), answered=status)
            return web.Response(status=status, text="cannot check the request with the API server\n")
        if not decision.allowed:
            log.info("metrics_forbidden", user=user.name, path=request.path)
            return web.Response(status=403, text=f'Forbidden: user "{user.name}" cannot get path "{request.path}"\n')
        body = await asyncio.to_thread(metrics.render, request.query.getall("name[]", ()))
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_PLAIN_0_0_4})

    return handle


async def serve_secure(
    metrics: Metrics,
    listen_address: str,
    *,
    reviewer: Reviewer[Any],
    files: TlsFiles | None,
    cert_check_period: float = CERT_CHECK_PERIOD,
) -> None:
    """Serve /metrics over HTTPS on `listen_address` behind delegated authentication and authorization
    until cancelled. ConfigError when the address is malformed or taken, or the certificate unusable."""
    host, port = split_address(listen_address, flag="--secure-listen-address")
    context = await asyncio.to_thread(tls_context, files, host=host)
    app = web.Application()
    app.router.add_get("/metrics", metrics_handler(metrics, reviewer))
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    try:
        try:
            await web.TCPSite(runner, host, port, ssl_context=context).start()
        except OSError as exc:
            raise ConfigError(
                f"--secure-listen-address {listen_address!r}: cannot listen: {exc.strerror or exc}"
            ) from exc
        log.info("secure_metrics_serving", address=listen_address, self_signed=files is None)
        if files is None:
            await asyncio.Event().wait()
        else:
            await _reload_on_change(context, files, cert_check_period)
    finally:
        await runner.cleanup()
