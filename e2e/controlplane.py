"""A local Kubernetes control plane made of real binaries built from source.

The binaries (etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
kwok) are built and cached by ``hack/build-control-plane.sh`` into
``${PY_VOLCANO_CACHE:-~/.cache/py-volcano}/bin``.  :class:`ControlPlane` runs
them on loopback with freshly generated certificates:

* etcd on a free 127.0.0.1 port;
* kube-apiserver on https://127.0.0.1:<port> with RBAC authorization, the
  default admission plugins and service-account token signing;
* kube-controller-manager running the controllers in ``controllers``;
* kwok, which turns Nodes annotated ``kwok.x-k8s.io/node: fake`` into Ready
  fake nodes and plays pod lifecycles on them (Running, Job pods Succeeded,
  deleted pods removed);
* optionally kube-scheduler (:meth:`ControlPlane.start_kube_scheduler`).

Usage::

    with ControlPlane() as cp:
        api = kubernetes.config.new_client_from_config(config_file=str(cp.kubeconfig))

or from a shell (the plane keeps running after ``up`` returns)::

    python -m e2e.controlplane up      # prints export KUBECONFIG=...
    eval "$(python -m e2e.controlplane env)"
    python -m e2e.controlplane down

Every component runs in its own process group with its log in the work dir.
They are stopped by :meth:`ControlPlane.stop`, at interpreter exit, and, should
the Python process die without cleaning up, by a small reaper process that
notices the parent is gone (except for ``up``, which detaches on purpose).
"""

from __future__ import annotations

import argparse
import atexit
import base64
import contextlib
import http.client
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import textwrap
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

REPO_ROOT = Path(__file__).resolve().parent.parent
BUILD_SCRIPT = REPO_ROOT / "hack" / "build-control-plane.sh"
DEFAULT_WORK_ROOT = REPO_ROOT / ".e2e"
CLI_WORK_DIR = DEFAULT_WORK_ROOT / "control-plane"

#: Binaries :meth:`ControlPlane.start` makes sure of (helm is built by the script too).
#: kubectl is built at the API server's version, so there is no client/server skew.
CONTROL_PLANE_BINARIES = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
    "kubectl",
)

#: kube-controller-manager controllers run by default.  nodelifecycle removes the
#: node.kubernetes.io/not-ready taint once kwok marks a node Ready;
#: clusterrole-aggregation fills aggregated ClusterRoles (admin/edit/view...);
#: the workload controllers (job, deployment, replicaset, statefulset) create real pods
#: for the PodGroup controller's tests and the demo, and garbagecollector removes what
#: their owners leave behind (pods, PodGroups); resourcequota keeps ResourceQuota status
#: (the ResourceQuota admission plugin refuses pods against a quota without one).
DEFAULT_CONTROLLERS = (
    "namespace",
    "serviceaccount",
    "serviceaccount-token",
    "garbagecollector",
    "disruption",
    "nodelifecycle",
    "clusterrole-aggregation",
    "job",
    "deployment",
    "replicaset",
    "statefulset",
    "resourcequota",
)

#: kwok Stage manifests (relative to <cache>/share/kwok/stage) played by default:
#: fake nodes become Ready and keep a Lease; pods bound to them become Running;
#: pods owned by a ``Job`` (any API group) become Succeeded; deleted pods go away.
DEFAULT_KWOK_STAGES = (
    "node/fast/node-initialize.yaml",
    "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "pod/fast/pod-ready.yaml",
    "pod/fast/pod-complete.yaml",
    "pod/fast/pod-delete.yaml",
)

KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
KWOK_NODE_ANNOTATION_VALUE = "fake"

SERVICE_CLUSTER_IP_RANGE = "10.96.0.0/16"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"


class ControlPlaneError(RuntimeError):
    """The control plane could not be built, started or reached."""


class PortTaken(ControlPlaneError):
    """A component exited because its port was taken between `free_port` and its bind (another process
    of the machine, such as a parallel test worker, took it): starting again on new ports helps."""


#: Starts of the whole plane on fresh ports before a taken port is an error.
PORT_ATTEMPTS = 3


def cache_dir() -> Path:
    return Path(os.environ.get("PY_VOLCANO_CACHE") or Path.home() / ".cache" / "py-volcano")


def bin_dir() -> Path:
    return cache_dir() / "bin"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _log(msg: str) -> None:
    print(f"[controlplane] {msg}", file=sys.stderr, flush=True)


def _tail(path: Path, lines: int = 40) -> str:
    try:
        data = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(data[-lines:])


def _rss_bytes(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie is not alive for our purposes.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _kill_group(pgid: int, timeout: float = 10.0, kill: bool = False) -> None:
    """SIGTERM (or SIGKILL) a process group; SIGKILL it if its leader is still there after ``timeout``."""
    sig = signal.SIGKILL if kill else signal.SIGTERM
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _pid_alive(pgid):
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


# --------------------------------------------------------------------------- reaper

_REAPER_SOURCE = textwrap.dedent(
    """
    import os, signal, sys, time
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    groups = set()
    for line in sys.stdin:
        line = line.strip()
        if line[:1] == "+":
            groups.add(int(line[1:]))
        elif line[:1] == "-":
            groups.discard(int(line[1:]))
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for g in list(groups):
            try:
                os.killpg(g, sig)
            except ProcessLookupError:
                groups.discard(g)
        if groups:
            time.sleep(3)
    """
)


class _Reaper:
    """Kills registered process groups when this Python process goes away.

    A child process reads group ids from a pipe; EOF on the pipe (our exit,
    however it happens, even SIGKILL) makes it kill the groups still listed.
    """

    def __init__(self) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _REAPER_SOURCE],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            text=True,
        )
        self._lock = threading.Lock()

    def _send(self, line: str) -> None:
        with self._lock:
            stdin = self._proc.stdin
            if stdin is None or stdin.closed:
                return
            with contextlib.suppress(OSError, ValueError):
                stdin.write(line + "\n")
                stdin.flush()

    def add(self, pgid: int) -> None:
        self._send(f"+{pgid}")

    def remove(self, pgid: int) -> None:
        self._send(f"-{pgid}")

    def close(self) -> None:
        with self._lock:
            if self._proc.stdin is not None and not self._proc.stdin.closed:
                with contextlib.suppress(OSError, ValueError):
                    self._proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=10)


_reaper: _Reaper | None = None
_reaper_lock = threading.Lock()


def _get_reaper() -> _Reaper:
    global _reaper
    with _reaper_lock:
        if _reaper is None:
            _reaper = _Reaper()
        return _reaper


# --------------------------------------------------------------------------- certificates


def _openssl(*args: str, cwd: Path) -> None:
    res = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise ControlPlaneError(f"openssl {' '.join(args)} failed: {res.stderr.strip()}")


@dataclass(frozen=True)
class _CertSpec:
    name: str
    cn: str
    org: str | None = None
    server: bool = False
    client: bool = False
    sans: tuple[str, ...] = ()


def _make_pki(pki: Path) -> None:
    """CA, serving and client certificates (ECDSA P-256), SA signing key."""
    pki.mkdir(parents=True, exist_ok=True)

    def genkey(name: str) -> None:
        _openssl(
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-out",
            f"{name}.key",
            cwd=pki,
        )
        os.chmod(pki / f"{name}.key", 0o600)

    def sign(spec: _CertSpec, self_signed: bool = False, ca: str = "ca") -> None:
        genkey(spec.name)
        subj = (f"/O={spec.org}" if spec.org else "") + f"/CN={spec.cn}"
        ext = ["[ext]"]
        if self_signed:
            ext += [
                "basicConstraints=critical,CA:TRUE",
                "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
                "subjectKeyIdentifier=hash",
            ]
        else:
            usages = [u for u, on in (("serverAuth", spec.server), ("clientAuth", spec.client)) if on]
            ext += [
                "basicConstraints=critical,CA:FALSE",
                "keyUsage=critical,digitalSignature,keyEncipherment",
                f"extendedKeyUsage={','.join(usages)}",
                "authorityKeyIdentifier=keyid",
            ]
            if spec.sans:
                ext.append("subjectAltName=" + ",".join(spec.sans))
        (pki / f"{spec.name}.ext").write_text("\n".join(ext) + "\n")
        _openssl(
            "req", "-new", "-key", f"{spec.name}.key", "-subj", subj, "-out", f"{spec.name}.csr", cwd=pki
        )
        serial = "0x" + secrets.token_hex(16)
        common = ["-days", "3650", "-sha256", "-set_serial", serial]
        common += ["-extfile", f"{spec.name}.ext", "-extensions", "ext", "-out", f"{spec.name}.crt"]
        if self_signed:
            _openssl(
                "x509", "-req", "-in", f"{spec.name}.csr", "-signkey", f"{spec.name}.key", *common, cwd=pki
            )
        else:
            _openssl(
                "x509",
                "-req",
                "-in",
                f"{spec.name}.csr",
                "-CA",
                f"{ca}.crt",
                "-CAkey",
                f"{ca}.key",
                *common,
                cwd=pki,
            )
        (pki / f"{spec.name}.csr").unlink()
        (pki / f"{spec.name}.ext").unlink()

    sign(_CertSpec("ca", "py-volcano-ca"), self_signed=True)
    apiserver_sans = (
        "IP:127.0.0.1",
        "IP:10.96.0.1",
        "DNS:localhost",
        "DNS:kubernetes",
        "DNS:kubernetes.default",
        "DNS:kubernetes.default.svc",
        "DNS:kubernetes.default.svc.cluster.local",
    )
    sign(_CertSpec("apiserver", "kube-apiserver", server=True, sans=apiserver_sans))
    # Serving certificate for the other components' /healthz and /metrics.
    sign(_CertSpec("loopback", "localhost", server=True, sans=("IP:127.0.0.1", "DNS:localhost")))
    sign(_CertSpec("admin", "kubernetes-admin", org="system:masters", client=True))
    # --use-service-account-credentials=false runs every controller with this
    # identity, which the bootstrap system:kube-controller-manager role does not
    # fully cover; system:masters keeps the controllers unblocked.
    sign(_CertSpec("controller-manager", "system:kube-controller-manager", org="system:masters", client=True))
    sign(_CertSpec("scheduler", "system:kube-scheduler", client=True))
    sign(_CertSpec("kwok", "kwok-controller", org="system:masters", client=True))
    # Aggregation layer (front proxy), as kubeadm sets it up: a separate CA whose
    # client certificate the API server presents to aggregated API servers, and
    # that the other components trust for request-header authentication.
    sign(_CertSpec("front-proxy-ca", "front-proxy-ca"), self_signed=True)
    sign(_CertSpec("front-proxy-client", "front-proxy-client", client=True), ca="front-proxy-ca")
    genkey("sa")
    _openssl("pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def _write_kubeconfig(path: Path, server: str, pki: Path, user: str, cert: str) -> None:
    path.write_text(
        textwrap.dedent(
            f"""\
            apiVersion: v1
            kind: Config
            clusters:
            - name: py-volcano
              cluster:
                server: {server}
                certificate-authority-data: {_b64(pki / "ca.crt")}
            users:
            - name: {user}
              user:
                client-certificate-data: {_b64(pki / f"{cert}.crt")}
                client-key-data: {_b64(pki / f"{cert}.key")}
            contexts:
            - name: py-volcano
              context:
                cluster: py-volcano
                user: {user}
                namespace: default
            current-context: py-volcano
            """
        )
    )
    os.chmod(path, 0o600)


# --------------------------------------------------------------------------- components


@dataclass
class _Component:
    name: str
    args: list[str]
    log: Path
    health: str | None = None  # URL polled for readiness
    proc: subprocess.Popen[bytes] | None = None
    pid: int | None = None  # set for attached (CLI) planes without a Popen
    started_at: float = 0.0

    def alive(self) -> bool:
        if self.proc is not None:
            return self.proc.poll() is None
        return self.pid is not None and _pid_alive(self.pid)

    @property
    def current_pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else self.pid


class ControlPlane:
    """etcd + kube-apiserver + kube-controller-manager + kwok (+ kube-scheduler) on loopback.

    Attributes available after :meth:`start`: ``kubeconfig`` (admin, system:masters),
    ``server`` (https URL), ``ca_file``, ``work_dir``, ``timings``.
    """

    external = False

    def __init__(
        self,
        work_dir: str | os.PathLike[str] | None = None,
        *,
        controllers: Sequence[str] = DEFAULT_CONTROLLERS,
        kwok_stages: Sequence[str] = DEFAULT_KWOK_STAGES,
        apiserver_args: Sequence[str] = (),
        controller_manager_args: Sequence[str] = (),
        kwok_args: Sequence[str] = (),
        etcd_args: Sequence[str] = (),
        etcd_unsafe_no_fsync: bool = True,
        start_timeout: float = 120.0,
        build: bool = True,
        detach: bool = False,
        keep_work_dir: bool = True,
    ) -> None:
        if work_dir is None:
            DEFAULT_WORK_ROOT.mkdir(parents=True, exist_ok=True)
            _prune_old_work_dirs(DEFAULT_WORK_ROOT)
            stamp = time.strftime("%Y%m%d-%H%M%S")
            work_dir = DEFAULT_WORK_ROOT / f"cp-{stamp}-{os.getpid()}-{secrets.token_hex(2)}"
        self.work_dir = Path(work_dir).resolve()
        self.controllers = tuple(controllers)
        self.kwok_stages = tuple(kwok_stages)
        self.apiserver_args = tuple(apiserver_args)
        self.controller_manager_args = tuple(controller_manager_args)
        self.kwok_args = tuple(kwok_args)
        self.etcd_args = tuple(etcd_args)
        self.etcd_unsafe_no_fsync = etcd_unsafe_no_fsync
        self.start_timeout = start_timeout
        self.build = build
        self.detach = detach
        self.keep_work_dir = keep_work_dir

        self.pki = self.work_dir / "pki"
        self.kubeconfig = self.work_dir / "admin.kubeconfig"
        self.ca_file = self.pki / "ca.crt"
        self.server = ""
        self.ports: dict[str, int] = {}
        self.timings: dict[str, float] = {}
        self._components: dict[str, _Component] = {}
        self._stopped: dict[str, _Component] = {}  # by stop_component, for start_component
        self._lock = threading.RLock()
        self._started = False
        _live_planes.add(self)

    # ------------------------------------------------------------------ public API

    def binary(self, name: str) -> str:
        """Path of a control-plane binary (cache first, then PATH, e.g. kubectl)."""
        cached = bin_dir() / name
        if cached.exists():
            return str(cached)
        found = shutil.which(name)
        if found:
            return found
        raise ControlPlaneError(f"binary {name!r} not found in {bin_dir()} nor on PATH")

    def start(self) -> ControlPlane:
        """Build if needed, then start etcd, kube-apiserver, kube-controller-manager and kwok."""
        with self._lock:
            if self._started:
                return self
            t0 = time.monotonic()
            for attempt in range(1, PORT_ATTEMPTS + 1):
                try:
                    self._start()
                    break
                except PortTaken as exc:
                    self.stop()
                    if attempt == PORT_ATTEMPTS:
                        raise
                    _log(f"{exc} (attempt {attempt} of {PORT_ATTEMPTS}): starting again on new ports")
                except BaseException:
                    self.stop()
                    raise
            self._started = True
            self.timings["total"] = round(time.monotonic() - t0, 3)
            parts = ", ".join(f"{k} {v:.1f}s" for k, v in self.timings.items() if k != "total")
            total = self.timings["total"]
            _log(f"control plane up at {self.server} in {total:.1f}s ({parts}); work dir {self.work_dir}")
            return self

    def stop(self) -> None:
        """Stop every component (scheduler, kwok, controller manager, API server, etcd)."""
        with self._lock:
            for name in ("kube-scheduler", "kwok", "kube-controller-manager", "kube-apiserver", "etcd"):
                comp = self._components.pop(name, None)
                if comp is not None:
                    self._terminate(comp)
            for name in list(self._components):
                self._terminate(self._components.pop(name))
            self._started = False
            state = self.work_dir / "state.json"
            with contextlib.suppress(OSError):
                state.unlink()
            # etcd's data is the only bulky part; logs and certs are kept for post-mortems.
            shutil.rmtree(self.work_dir / "etcd-data", ignore_errors=True)
            if not self.keep_work_dir:
                shutil.rmtree(self.work_dir, ignore_errors=True)

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start_kube_scheduler(
        self,
        config: str | os.PathLike[str] | None = None,
        extra_args: Sequence[str] = (),
        timeout: float | None = None,
    ) -> None:
        """Start kube-scheduler (identity system:kube-scheduler, no leader election).

        ``config`` is a KubeSchedulerConfiguration file; its clientConnection.kubeconfig
        is filled in with the scheduler's kubeconfig when left empty.
        """
        with self._lock:
            if "kube-scheduler" in self._components and self._components["kube-scheduler"].alive():
                raise ControlPlaneError("kube-scheduler is already running")
            kubeconfig = self.work_dir / "scheduler.kubeconfig"
            port = free_port()
            self.ports["kube-scheduler"] = port
            args = [
                self.binary("kube-scheduler"),
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                f"--tls-cert-file={self.pki / 'loopback.crt'}",
                f"--tls-private-key-file={self.pki / 'loopback.key'}",
            ]
            if config is not None:
                text = Path(config).read_text()
                if "kubeconfig:" not in text:
                    text = _inject_scheduler_kubeconfig(text, kubeconfig)
                cfg = self.work_dir / "scheduler-config.yaml"
                cfg.write_text(text)
                args.append(f"--config={cfg}")
            else:
                args += [f"--kubeconfig={kubeconfig}", "--leader-elect=false"]
            args += list(extra_args)
            t0 = time.monotonic()
            comp = self._spawn("kube-scheduler", args, health=f"https://127.0.0.1:{port}/healthz")
            self._wait_ready(comp, timeout or self.start_timeout)
            self.timings["kube-scheduler"] = round(time.monotonic() - t0, 3)
            self._write_state()

    def stop_kube_scheduler(self) -> None:
        with self._lock:
            comp = self._components.pop("kube-scheduler", None)
            if comp is not None:
                self._terminate(comp)
                self._write_state()

    def restart_apiserver(
        self,
        *,
        kill: bool = False,
        grace_period: float = 3.0,
        downtime: float = 0.0,
        timeout: float | None = None,
    ) -> float:
        """Stop kube-apiserver, wait ``downtime`` seconds, start it again on the same
        port with the same etcd, and wait for /readyz.

        The stop is a SIGTERM followed by SIGKILL after ``grace_period`` seconds (a
        SIGTERMed API server drains for up to 60s while clients hold watches open,
        as a kubelet would cut short), or an immediate SIGKILL with ``kill=True``.
        Returns the seconds from the stop request until /readyz answered again.
        """
        with self._lock:
            comp = self._components.get("kube-apiserver")
            if comp is None:
                raise ControlPlaneError("kube-apiserver is not running")
            t0 = time.monotonic()
            self._terminate(comp, kill=kill, grace=grace_period)
            if downtime > 0:
                time.sleep(downtime)
            new = self._spawn("kube-apiserver", comp.args, health=comp.health, append_log=True)
            self._wait_ready(new, timeout or self.start_timeout)
            self._write_state()
            elapsed = time.monotonic() - t0
            _log(f"kube-apiserver restarted in {elapsed:.1f}s")
            return elapsed

    def restart(
        self, name: str, *, kill: bool = False, grace_period: float = 10.0, timeout: float | None = None
    ) -> float:
        """Restart any running component with the same arguments (see restart_apiserver)."""
        if name == "kube-apiserver":
            return self.restart_apiserver(kill=kill, grace_period=grace_period, timeout=timeout)
        with self._lock:
            comp = self._components.get(name)
            if comp is None:
                raise ControlPlaneError(f"{name} is not running")
            t0 = time.monotonic()
            self._terminate(comp, kill=kill, grace=grace_period)
            new = self._spawn(name, comp.args, health=comp.health, append_log=True)
            self._wait_ready(new, timeout or self.start_timeout)
            self._write_state()
            return time.monotonic() - t0

    def stop_component(self, name: str, *, kill: bool = False, grace_period: float = 10.0) -> float:
        """Stop one running component (SIGTERM, or SIGKILL with ``kill=True``) and keep its arguments
        for :meth:`start_component`; its data dir and port stay as they are. Returns the wall-clock
        time (``time.time()``) at which it was gone."""
        with self._lock:
            comp = self._components.pop(name, None)
            if comp is None:
                raise ControlPlaneError(f"{name} is not running")
            self._terminate(comp, kill=kill, grace=grace_period)
            self._stopped[name] = comp
            self._write_state()
            _log(f"{name} {'killed' if kill else 'stopped'}")
            return time.time()

    def start_component(self, name: str, *, timeout: float | None = None) -> float:
        """Start a component stopped by :meth:`stop_component` again, with the same arguments (same
        data dir, same port), and wait until it is healthy. Returns the wall-clock time
        (``time.time()``) at which it answered its health check."""
        with self._lock:
            comp = self._stopped.pop(name, None)
            if comp is None:
                raise ControlPlaneError(f"{name} was not stopped by stop_component")
            new = self._spawn(name, comp.args, health=comp.health, append_log=True)
            self._wait_ready(new, timeout or self.start_timeout)
            self._write_state()
            _log(f"{name} started again")
            return time.time()

    def running(self, name: str) -> bool:
        comp = self._components.get(name)
        return comp is not None and comp.alive()

    def pids(self) -> dict[str, int]:
        return {n: p for n, c in self._components.items() if (p := c.current_pid) is not None and c.alive()}

    def rss(self) -> dict[str, int]:
        """Resident memory in bytes of each running component."""
        return {name: _rss_bytes(pid) for name, pid in self.pids().items()}

    def log_path(self, name: str) -> Path:
        return self.work_dir / "logs" / f"{name}.log"

    def env(self) -> dict[str, str]:
        return {"KUBECONFIG": str(self.kubeconfig), "E2E_KUBECONFIG": str(self.kubeconfig)}

    def kubectl(
        self, *args: str, check: bool = True, input: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run kubectl against this control plane."""
        return subprocess.run(
            [self.binary("kubectl"), f"--kubeconfig={self.kubeconfig}", *args],
            input=input,
            capture_output=True,
            text=True,
            check=check,
        )

    # ------------------------------------------------------------------ internals

    def _start(self) -> None:
        if self.build:
            t0 = time.monotonic()
            ensure_binaries()
            self.timings["build-check"] = time.monotonic() - t0
        for name in CONTROL_PLANE_BINARIES:
            self.binary(name)  # fail early and clearly

        (self.work_dir / "logs").mkdir(parents=True, exist_ok=True)
        t0 = time.monotonic()
        if not (self.pki / "sa.pub").exists():
            _make_pki(self.pki)
        self.timings["certs"] = time.monotonic() - t0

        for name in ("etcd", "etcd-peer", "kube-apiserver", "kube-controller-manager", "kwok"):
            self.ports[name] = free_port()
        self.server = f"https://127.0.0.1:{self.ports['kube-apiserver']}"
        for user, cert in (
            ("admin", "admin"),
            ("system:kube-controller-manager", "controller-manager"),
            ("system:kube-scheduler", "scheduler"),
            ("kwok-controller", "kwok"),
        ):
            path = self.kubeconfig if cert == "admin" else self.work_dir / f"{cert}.kubeconfig"
            _write_kubeconfig(path, self.server, self.pki, user, cert)

        self._start_step("etcd", self._etcd_args(), f"http://127.0.0.1:{self.ports['etcd']}/health")
        self._start_step("kube-apiserver", self._apiserver_args(), f"{self.server}/readyz")
        self._start_step(
            "kube-controller-manager",
            self._controller_manager_args(),
            f"https://127.0.0.1:{self.ports['kube-controller-manager']}/healthz",
        )
        self._start_step("kwok", self._kwok_args(), f"http://127.0.0.1:{self.ports['kwok']}/healthz")
        self._write_state()

    def _start_step(self, name: str, args: list[str], health: str) -> None:
        t0 = time.monotonic()
        comp = self._spawn(name, args, health=health)
        self._wait_ready(comp, self.start_timeout)
        self.timings[name] = time.monotonic() - t0
        for k, v in self.timings.items():
            self.timings[k] = round(v, 3)

    def _etcd_args(self) -> list[str]:
        client = f"http://127.0.0.1:{self.ports['etcd']}"
        peer = f"http://127.0.0.1:{self.ports['etcd-peer']}"
        args = [
            self.binary("etcd"),
            "--name=py-volcano",
            f"--data-dir={self.work_dir / 'etcd-data'}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=py-volcano={peer}",
            "--initial-cluster-state=new",
            "--log-level=warn",
            "--quota-backend-bytes=8589934592",
        ]
        if self.etcd_unsafe_no_fsync:
            args.append("--unsafe-no-fsync")
        return args + list(self.etcd_args)

    def _apiserver_args(self) -> list[str]:
        pki = self.pki
        return [
            self.binary("kube-apiserver"),
            f"--etcd-servers=http://127.0.0.1:{self.ports['etcd']}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self.ports['kube-apiserver']}",
            f"--cert-dir={self.work_dir / 'apiserver-certs'}",
            f"--tls-cert-file={pki / 'apiserver.crt'}",
            f"--tls-private-key-file={pki / 'apiserver.key'}",
            f"--client-ca-file={pki / 'ca.crt'}",
            f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
            f"--service-account-key-file={pki / 'sa.pub'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            "--authorization-mode=RBAC",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            "--allow-privileged=true",
            f"--requestheader-client-ca-file={pki / 'front-proxy-ca.crt'}",
            "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-username-headers=X-Remote-User",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={pki / 'front-proxy-client.crt'}",
            f"--proxy-client-key-file={pki / 'front-proxy-client.key'}",
            # The endpoints of the "kubernetes" Service would be 127.0.0.1, which
            # EndpointSlice validation rejects; nothing in-cluster needs them.
            "--endpoint-reconciler-type=none",
            *self.apiserver_args,
        ]

    def _controller_manager_args(self) -> list[str]:
        kubeconfig = self.work_dir / "controller-manager.kubeconfig"
        return [
            self.binary("kube-controller-manager"),
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--secure-port={self.ports['kube-controller-manager']}",
            f"--tls-cert-file={self.pki / 'loopback.crt'}",
            f"--tls-private-key-file={self.pki / 'loopback.key'}",
            f"--controllers={','.join(self.controllers)}",
            f"--service-account-private-key-file={self.pki / 'sa.key'}",
            f"--root-ca-file={self.pki / 'ca.crt'}",
            "--use-service-account-credentials=false",
            "--leader-elect=false",
            "--cluster-name=py-volcano",
            *self.controller_manager_args,
        ]

    def _kwok_args(self) -> list[str]:
        config = self.work_dir / "kwok.yaml"
        stage_root = cache_dir() / "share" / "kwok" / "stage"
        docs = []
        for stage in self.kwok_stages:
            path = Path(stage) if os.path.isabs(stage) else stage_root / stage
            if not path.exists():
                raise ControlPlaneError(f"kwok stage {path} not found (run {BUILD_SCRIPT} kwok)")
            docs.append(path.read_text().strip())
        config.write_text("\n---\n".join(docs) + "\n")
        return [
            self.binary("kwok"),
            f"--config={config}",
            f"--kubeconfig={self.work_dir / 'kwok.kubeconfig'}",
            "--manage-all-nodes=false",
            f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}={KWOK_NODE_ANNOTATION_VALUE}",
            "--manage-nodes-with-label-selector=",
            "--node-lease-duration-seconds=40",
            f"--server-address=127.0.0.1:{self.ports['kwok']}",
            *self.kwok_args,
        ]

    def _spawn(
        self, name: str, args: Sequence[str], *, health: str | None, append_log: bool = False
    ) -> _Component:
        log = self.log_path(name)
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab" if append_log else "wb") as out:
            out.write(f"# {time.strftime('%H:%M:%S')} {' '.join(args)}\n".encode())
            out.flush()
            proc = subprocess.Popen(
                list(args),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=self.work_dir,
            )
        if not self.detach:
            _get_reaper().add(proc.pid)
        comp = _Component(
            name=name, args=list(args), log=log, health=health, proc=proc, started_at=time.monotonic()
        )
        self._components[name] = comp
        return comp

    def _terminate(self, comp: _Component, kill: bool = False, grace: float = 10.0) -> None:
        pid = comp.current_pid
        if pid is None:
            return
        if comp.proc is not None:
            if comp.proc.poll() is None:
                _kill_group(pid, timeout=grace, kill=kill)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    comp.proc.wait(timeout=10)
            else:
                # The leader is gone; make sure nothing else lingers in its group.
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)
        elif _pid_alive(pid) and str(self.work_dir) in _cmdline(pid):
            _kill_group(pid, timeout=grace, kill=kill)
        if not self.detach and _reaper is not None:
            _reaper.remove(pid)

    def _ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.ca_file))
        ctx.load_cert_chain(str(self.pki / "admin.crt"), str(self.pki / "admin.key"))
        return ctx

    def _probe(self, url: str) -> tuple[bool, str]:
        scheme, rest = url.split("://", 1)
        hostport, _, path = rest.partition("/")
        host, _, port = hostport.partition(":")
        conn: http.client.HTTPConnection
        if scheme == "https":
            conn = http.client.HTTPSConnection(host, int(port), context=self._ssl_context(), timeout=3)
        else:
            conn = http.client.HTTPConnection(host, int(port), timeout=3)
        try:
            conn.request("GET", "/" + path)
            resp = conn.getresponse()
            body = resp.read().decode(errors="replace")
            return resp.status == 200, f"{resp.status} {body[:300]}"
        except (OSError, http.client.HTTPException) as e:
            return False, str(e)
        finally:
            conn.close()

    def _wait_ready(self, comp: _Component, timeout: float) -> None:
        if comp.health is None:
            return
        deadline = time.monotonic() + timeout
        last = ""
        while True:
            if not comp.alive():
                code = comp.proc.returncode if comp.proc is not None else "?"
                tail = _tail(comp.log)
                if "address already in use" in tail:
                    raise PortTaken(f"{comp.name} exited (code {code}): its port was taken (log {comp.log})")
                message = f"{comp.name} exited (code {code}) before becoming ready; log {comp.log}:\n{tail}"
                raise ControlPlaneError(message)
            ok, last = self._probe(comp.health)
            if ok:
                return
            if time.monotonic() > deadline:
                raise ControlPlaneError(
                    f"{comp.name} not ready after {timeout:.0f}s ({comp.health}: {last}); "
                    f"log {comp.log}:\n{_tail(comp.log)}"
                )
            time.sleep(0.1)

    def _write_state(self) -> None:
        state = {
            "server": self.server,
            "kubeconfig": str(self.kubeconfig),
            "work_dir": str(self.work_dir),
            "ports": self.ports,
            "components": {
                n: {"pid": c.current_pid, "health": c.health, "log": str(c.log)}
                for n, c in self._components.items()
            },
        }
        tmp = self.work_dir / "state.json.tmp"
        tmp.write_text(json.dumps(state, indent=2))
        tmp.replace(self.work_dir / "state.json")

    @classmethod
    def attach(cls, work_dir: str | os.PathLike[str]) -> ControlPlane:
        """A handle on a plane started (detached) by another process, from its state.json."""
        wd = Path(work_dir).resolve()
        try:
            state = json.loads((wd / "state.json").read_text())
        except (OSError, ValueError) as e:
            raise ControlPlaneError(f"no running control plane in {wd}: {e}") from e
        cp = cls(wd, build=False, detach=True)
        cp.server = state["server"]
        cp.ports = {k: int(v) for k, v in state["ports"].items()}
        for name, info in state["components"].items():
            cp._components[name] = _Component(
                name=name, args=[], log=Path(info["log"]), health=info.get("health"), pid=info["pid"]
            )
        cp._started = True
        return cp


def _inject_scheduler_kubeconfig(text: str, kubeconfig: Path) -> str:
    """Add clientConnection.kubeconfig to a KubeSchedulerConfiguration document."""
    import yaml  # PyYAML is a project dependency

    doc = yaml.safe_load(text) or {}
    doc.setdefault("clientConnection", {})["kubeconfig"] = str(kubeconfig)
    doc.setdefault("leaderElection", {}).setdefault("leaderElect", False)
    return str(yaml.safe_dump(doc, sort_keys=False))


def _prune_old_work_dirs(root: Path, keep: int = 5) -> None:
    """Remove old cp-* work dirs whose processes are gone, keeping the newest ``keep``."""
    dirs = sorted((p for p in root.glob("cp-*") if p.is_dir()), key=lambda p: p.stat().st_mtime, reverse=True)
    for d in dirs[keep:]:
        state = d / "state.json"
        if state.exists():
            try:
                comps = json.loads(state.read_text()).get("components", {})
            except (OSError, ValueError):
                comps = {}
            if any(_pid_alive(int(c["pid"])) and str(d) in _cmdline(int(c["pid"])) for c in comps.values()):
                continue
        shutil.rmtree(d, ignore_errors=True)


_live_planes: weakref.WeakSet[ControlPlane] = weakref.WeakSet()


@atexit.register
def _stop_all() -> None:
    for cp in list(_live_planes):
        if not cp.detach:
            with contextlib.suppress(Exception):
                cp.stop()
    if _reaper is not None:
        _reaper.close()


def ensure_binaries(names: Sequence[str] = CONTROL_PLANE_BINARIES) -> None:
    """Run hack/build-control-plane.sh for ``names`` (seconds when already built)."""
    if os.environ.get("PY_VOLCANO_SKIP_BUILD") == "1":
        return
    if not BUILD_SCRIPT.exists():
        raise ControlPlaneError(f"{BUILD_SCRIPT} is missing")
    missing = [n for n in names if not (bin_dir() / n).exists()]
    if missing:
        _log(f"building {', '.join(missing)} with {BUILD_SCRIPT} (a cold build takes several minutes)")
    res = subprocess.run(
        ["bash", str(BUILD_SCRIPT), *names],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )
    if res.returncode != 0:
        raise ControlPlaneError(f"{BUILD_SCRIPT} failed (exit {res.returncode}):\n{res.stdout[-4000:]}")
    if missing:
        sys.stderr.write(res.stdout)


# --------------------------------------------------------------------------- CLI


def _main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m e2e.controlplane", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("up", "down", "env", "status"))
    parser.add_argument("--work-dir", default=str(CLI_WORK_DIR), help="default: %(default)s")
    parser.add_argument("--scheduler", action="store_true", help="up: also start kube-scheduler")
    ns = parser.parse_args(argv)
    wd = Path(ns.work_dir)

    if ns.command == "up":
        if (wd / "state.json").exists():
            try:
                old = ControlPlane.attach(wd)
            except ControlPlaneError:
                old = None
            if old is not None and old.running("kube-apiserver"):
                print(f"# already running at {old.server}", file=sys.stderr)
                print(f"export KUBECONFIG={old.kubeconfig}")
                return 0
            if old is not None:
                old.stop()
        shutil.rmtree(wd, ignore_errors=True)
        cp = ControlPlane(wd, detach=True)
        cp.start()
        if ns.scheduler:
            cp.start_kube_scheduler()
        print(f"export KUBECONFIG={cp.kubeconfig}")
        return 0
    if ns.command == "env":
        cp = ControlPlane.attach(wd)
        for k, v in cp.env().items():
            print(f"export {k}={v}")
        return 0
    if ns.command == "status":
        cp = ControlPlane.attach(wd)
        print(f"server: {cp.server}\nkubeconfig: {cp.kubeconfig}")
        rss = cp.rss()
        for name, pid in cp.pids().items():
            print(f"{name}: pid {pid}, rss {rss.get(name, 0) / 2**20:.0f} MiB")
        return 0
    # down
    try:
        cp = ControlPlane.attach(wd)
    except ControlPlaneError as e:
        print(f"# {e}", file=sys.stderr)
        return 0
    cp.stop()
    print(f"# stopped control plane in {wd}", file=sys.stderr)
    return 0


@contextlib.contextmanager
def control_plane(**kwargs: object) -> Iterator[ControlPlane]:
    """``with control_plane() as cp:`` — same as ``with ControlPlane(**kwargs) as cp:``."""
    cp = ControlPlane(**kwargs)  # type: ignore[arg-type]
    with cp:
        yield cp


if __name__ == "__main__":
    try:
        sys.exit(_main())
    except ControlPlaneError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
