"""The secure /metrics endpoint over real loopback TLS: 401, 403, 500/503 and 200 as kube-scheduler's secure port;
its certificate self-signed or from files (re-read when rotated); the `run` flags that configure it."""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp
import pytest
from cryptography import x509

from py_volcano.cache.reviews import Decision, User
from py_volcano.cli import build_parser, main
from py_volcano.errors import ApiError, ConfigError
from py_volcano.metrics import Metrics, serve
from py_volcano.serving import TlsFiles, self_signed, serve_secure, tls_context
from py_volcano.settings import Settings
from tests.ports import free_port

READER = User(name="system:serviceaccount:mon:prom")
STRANGER = User(name="system:serviceaccount:mon:other")


class FakeReviewer:
    """`reader` may get /metrics, `stranger` may not; `fail` makes every review raise it."""

    def __init__(self) -> None:
        self.fail: ApiError | None = None
        self.asked: list[tuple[str, str, str]] = []

    async def authenticate(self, token: str) -> User | None:
        if self.fail is not None:
            raise self.fail
        return {"reader": READER, "stranger": STRANGER}.get(token)

    async def authorize(self, user: User, *, path: str, verb: str) -> Decision:
        self.asked.append((user.name, path, verb))
        return Decision(allowed=user is READER)


async def serving(
    test: Callable[[aiohttp.ClientSession, str], Awaitable[None]],
    *,
    reviewer: FakeReviewer,
    files: TlsFiles | None = None,
    period: float = 60.0,
) -> None:
    """Run the secure server on a free loopback port while `test(session, base_url)` runs."""
    port = free_port()
    server = asyncio.create_task(
        serve_secure(Metrics(), f"127.0.0.1:{port}", reviewer=reviewer, files=files, cert_check_period=period)
    )
    base = f"https://127.0.0.1:{port}"
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False)) as session:
        for _ in range(500):
            if server.done():
                server.result()
            try:
                async with session.get(f"{base}/metrics"):
                    break
            except aiohttp.ClientConnectionError:
                await asyncio.sleep(0.01)
        try:
            await test(session, base)
        finally:
            server.cancel()
            with pytest.raises(asyncio.CancelledError):
                await server


async def status_of(session: aiohttp.ClientSession, url: str, token: str | None = None) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with session.get(url, headers=headers) as answer:
        return answer.status, await answer.text()


def test_only_an_allowed_token_gets_the_metrics() -> None:
    reviewer = FakeReviewer()

    async def check(session: aiohttp.ClientSession, base: str) -> None:
        url = f"{base}/metrics"
        assert (await status_of(session, url))[0] == 401
        assert (await status_of(session, url, "forged"))[0] == 401
        async with session.get(url, headers={"Authorization": "Basic cmVhZGVy"}) as answer:
            assert answer.status == 401, "only bearer tokens"
        status, text = await status_of(session, url, "stranger")
        assert (status, text) == (403, f'Forbidden: user "{STRANGER.name}" cannot get path "/metrics"\n')
        status, text = await status_of(session, url, "reader")
        assert status == 200 and "volcano_schedule_attempts_total" in text
        assert (await status_of(session, f"{base}/healthz", "reader"))[0] == 404, "probes stay on the plain port"

    asyncio.run(serving(check, reviewer=reviewer))
    assert set(reviewer.asked) == {(READER.name, "/metrics", "get"), (STRANGER.name, "/metrics", "get")}


@pytest.mark.parametrize(
    ("failure", "status"),
    [
        pytest.param(ApiError("no answer", status=None), 503, id="unreachable"),
        pytest.param(ApiError("HTTP 503", status=503), 503, id="unavailable"),
        pytest.param(ApiError("HTTP 429", status=429), 503, id="throttled"),
        pytest.param(ApiError("HTTP 403: cannot create tokenreviews", status=403), 500, id="refused"),
    ],
)
def test_a_review_that_fails_is_a_server_error_and_the_server_goes_on(failure: ApiError, status: int) -> None:
    reviewer = FakeReviewer()

    async def check(session: aiohttp.ClientSession, base: str) -> None:
        reviewer.fail = failure
        assert (await status_of(session, f"{base}/metrics", "reader"))[0] == status
        reviewer.fail = None
        assert (await status_of(session, f"{base}/metrics", "reader"))[0] == 200

    asyncio.run(serving(check, reviewer=reviewer))


def test_the_plain_endpoint_drops_metrics_when_they_are_served_securely() -> None:
    port = free_port()

    async def main_() -> None:
        server = asyncio.create_task(serve(Metrics(), f"127.0.0.1:{port}", ready=lambda: True, with_metrics=False))
        async with aiohttp.ClientSession() as session:
            for _ in range(500):
                try:
                    assert (await status_of(session, f"http://127.0.0.1:{port}/healthz"))[0] == 200
                    break
                except aiohttp.ClientConnectionError:
                    await asyncio.sleep(0.01)
            assert (await status_of(session, f"http://127.0.0.1:{port}/readyz"))[0] == 200
            assert (await status_of(session, f"http://127.0.0.1:{port}/metrics"))[0] == 404
        server.cancel()
        with pytest.raises(asyncio.CancelledError):
            await server

    asyncio.run(main_())


def served_certificate(port: int) -> x509.Certificate:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port)) as raw, context.wrap_socket(raw) as tls:
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der)


def write_pair(folder: Path, hosts: list[str]) -> TlsFiles:
    pem = self_signed(hosts)
    cut = pem.index(b"-----BEGIN PRIVATE KEY-----")
    files = TlsFiles(folder / "tls.crt", folder / "tls.key")
    files.cert.write_bytes(pem[:cut])
    files.key.write_bytes(pem[cut:])
    return files


def names_of(cert: x509.Certificate) -> list[str]:
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return [str(name.value) for name in names]


def test_without_files_the_certificate_is_self_signed_for_this_host() -> None:
    pem = self_signed(["localhost", "127.0.0.1", "scheduler.example"])
    cert = x509.load_pem_x509_certificate(pem)
    assert cert.issuer == cert.subject
    assert names_of(cert) == ["localhost", "127.0.0.1", "scheduler.example"]
    context = tls_context(None, host="10.0.0.7")
    assert isinstance(context, ssl.SSLContext)


def test_given_files_are_served_and_reloaded_when_rotated(tmp_path: Path) -> None:
    files = write_pair(tmp_path, ["first.example"])

    async def check(session: aiohttp.ClientSession, base: str) -> None:
        port = int(base.rpartition(":")[2])
        assert names_of(await asyncio.to_thread(served_certificate, port)) == ["first.example"]
        write_pair(tmp_path, ["second.example"])
        for _ in range(200):
            if names_of(await asyncio.to_thread(served_certificate, port)) == ["second.example"]:
                return
            await asyncio.sleep(0.02)
        pytest.fail("the rotated certificate was never served")

    asyncio.run(serving(check, reviewer=FakeReviewer(), files=files, period=0.02))


def test_unusable_files_are_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "tls.crt").write_text("not a certificate")
    (tmp_path / "tls.key").write_text("not a key")
    with pytest.raises(ConfigError, match="--tls-cert-file"):
        tls_context(TlsFiles(tmp_path / "tls.crt", tmp_path / "tls.key"), host=None)
    with pytest.raises(ConfigError, match="--tls-cert-file"):
        tls_context(TlsFiles(tmp_path / "missing.crt", tmp_path / "tls.key"), host=None)


def test_run_serves_plain_metrics_on_loopback_by_default() -> None:
    settings = Settings.from_args(build_parser().parse_args(["run"])).metrics
    assert (settings.listen_address, settings.secure_listen_address) == ("127.0.0.1:8080", None)
    assert (settings.tls_cert_file, settings.tls_key_file) == (None, None)


def test_run_flags_of_the_secure_endpoint() -> None:
    args = build_parser().parse_args(
        [
            "run",
            "--listen-address=0.0.0.0:8080",
            "--secure-listen-address=0.0.0.0:8443",
            "--tls-cert-file=/tls/tls.crt",
            "--tls-private-key-file=/tls/tls.key",
        ]
    )
    settings = Settings.from_args(args).metrics
    assert settings.secure_listen_address == "0.0.0.0:8443"
    assert (settings.tls_cert_file, settings.tls_key_file) == (Path("/tls/tls.crt"), Path("/tls/tls.key"))


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        pytest.param(["--secure-listen-address=:8443", "--tls-cert-file=c"], "go together", id="cert-alone"),
        pytest.param(["--secure-listen-address=:8443", "--tls-private-key-file=k"], "go together", id="key-alone"),
        pytest.param(["--tls-cert-file=c", "--tls-private-key-file=k"], "needs --secure-listen-address", id="no-port"),
    ],
)
def test_inconsistent_tls_flags_exit_2(flags: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", *flags]) == 2
    assert message in capsys.readouterr().err


def test_a_malformed_secure_address_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["run", "--secure-listen-address=8443"])
    assert exited.value.code == 2
    assert "--secure-listen-address" in capsys.readouterr().err
