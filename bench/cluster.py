"""What the end-to-end benchmarks share: a real control plane with kwok fake nodes, concurrent object
creation and deletion, a pod watcher in its own process, and a `py-volcano run` subprocess.

Times are `time.monotonic()` (CLOCK_MONOTONIC, the same clock in every process of the machine), so the
watcher process, the creating coroutines and the scheduler's sampling line up.

The fake nodes' heartbeats are the one thing tuned away from a default cluster: kwok renews every node's
Lease at a fraction of `--node-lease-duration-seconds` (40 s in `ControlPlane`), which on 5,000 nodes
is hundreds of Lease writes per second on a 2-core machine. `BenchCluster(lease_seconds=...)` lengthens
the Lease (and the controller manager's node-monitor grace period with it, so nodes stay Ready); pass
`--lease-seconds 40` to a benchmark to measure with the default heartbeat load.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from prometheus_client.parser import text_string_to_metric_families

from e2e.controlplane import KWOK_NODE_ANNOTATION, KWOK_NODE_ANNOTATION_VALUE, ControlPlane, free_port
from py_volcano.cache.client import ApiClient, load_credentials
from py_volcano.errors import ApiError

__all__ = [
    "BenchCluster",
    "PodWatch",
    "PyVolcano",
    "Sampler",
    "WatchResult",
    "code_version",
    "cpu_seconds",
    "http_status",
    "load_average",
    "machine",
    "memory_mib",
    "percentile",
    "pod_manifest",
]

REPO = Path(__file__).resolve().parent.parent
WORK_ROOT = REPO / ".e2e"
NODE_LABEL = "bench.py-volcano/node"

#: Concurrent requests when creating objects (nodes, pods) and binding in the ceiling client.
CREATE_CONCURRENCY = 64
#: Seconds without a pod LIST after which kwok has taken every new node over.
QUIET_SECONDS = 3


def machine() -> dict[str, Any]:
    """Return what the figures were measured on: cores, CPU model, memory, load average."""
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    mem_kib = 0
    with contextlib.suppress(OSError, ValueError, IndexError):
        mem_kib = int(Path("/proc/meminfo").read_text().split("\n", 1)[0].split()[1])
    return {
        "nproc": os.cpu_count(),
        "cpu_model": model,
        "mem_gib": round(mem_kib / 2**20, 1),
        "python": sys.version.split()[0],
    }


def code_version() -> dict[str, Any]:
    """Return the commit measured and the files of py_volcano/ that differ from it (shared working tree)."""

    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout
        except (OSError, subprocess.CalledProcessError):
            return ""

    dirty = [line[3:] for line in git("status", "--porcelain", "--", "py_volcano").splitlines()]
    return {"commit": git("rev-parse", "--short", "HEAD").strip(), "scheduler_changes": dirty}


def memory_mib(pid: int) -> dict[str, float]:
    """Return VmHWM (peak resident) and VmRSS of process `pid`, MiB (from /proc/<pid>/status)."""
    out: dict[str, float] = {}
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmHWM", "VmRSS"):
                out[key] = round(int(value.split()[0]) / 1024, 1)
    return out


def cpu_seconds(pid: int) -> float:
    """Return user + system CPU seconds process `pid` used so far (0 when it is gone)."""
    with contextlib.suppress(OSError, IndexError, ValueError):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return 0.0


def load_average() -> list[float]:
    """Return the 1, 5 and 15 minute load averages."""
    return [round(x, 2) for x in os.getloadavg()]


def percentile(values: list[float], q: float) -> float | None:
    """Return the q-quantile (0..1) of `values` by linear interpolation, None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def node_manifest(name: str, *, cpu: str = "32", memory: str = "256Gi", pods: str = "110") -> dict[str, Any]:
    """Return a kwok fake Node (kwok marks it Ready and plays the kubelet for pods bound to it)."""
    resources = {"cpu": cpu, "memory": memory, "pods": pods}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {KWOK_NODE_ANNOTATION: KWOK_NODE_ANNOTATION_VALUE},
            "labels": {"kubernetes.io/hostname": name, "type": "kwok", NODE_LABEL: "true"},
        },
        "status": {"allocatable": resources, "capacity": resources},
    }


def pod_manifest(
    name: str,
    *,
    scheduler: str,
    group: str = "",
    node: str = "",
    labels: Mapping[str, str] | None = None,
    cpu: str = "100m",
    memory: str = "128Mi",
) -> dict[str, Any]:
    """Return a one-container Pod for `scheduler` (in PodGroup `group`, or bound to `node`, when given)."""
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = dict(labels)
    if group:
        meta["annotations"] = {"scheduling.k8s.io/group-name": group}
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [{"name": "main", "image": "pause", "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
    }
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


async def gather_limited(calls: Iterable[Callable[[], Awaitable[Any]]], limit: int) -> list[Any]:
    """Await every call, at most `limit` at once, in order; return their results."""
    semaphore = asyncio.Semaphore(limit)

    async def one(call: Callable[[], Awaitable[Any]]) -> Any:
        async with semaphore:
            return await call()

    return await asyncio.gather(*(one(call) for call in calls))


class BenchCluster:
    """A control plane for benchmarks, with an async client and helpers to fill and empty it."""

    def __init__(self, *, lease_seconds: int = 1200, work_dir: Path | None = None) -> None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        self.work_dir = work_dir or WORK_ROOT / f"bench-{stamp}-{os.getpid()}"
        self.lease_seconds = lease_seconds
        kwok_args: tuple[str, ...] = ()
        # The node lifecycle controller lifts each new node's not-ready taint with one write; at the
        # controller manager's default 20 writes/s, 5,000 nodes take minutes to become schedulable.
        cm_args: tuple[str, ...] = ("--kube-api-qps=1000", "--kube-api-burst=1000")
        if lease_seconds != 40:
            kwok_args = (f"--node-lease-duration-seconds={lease_seconds}",)
            cm_args += (f"--node-monitor-grace-period={lease_seconds * 2}s",)
        self.plane = ControlPlane(
            self.work_dir, kwok_args=kwok_args, controller_manager_args=cm_args, keep_work_dir=True
        )
        self.client: ApiClient | None = None
        self.nodes: list[str] = []

    @property
    def kubeconfig(self) -> Path:
        """Return the admin kubeconfig."""
        return self.plane.kubeconfig

    @property
    def api(self) -> ApiClient:
        """Return the async client (after `start`)."""
        assert self.client is not None, "BenchCluster.start() first"
        return self.client

    async def start(self) -> float:
        """Start the plane, connect, install the Volcano CRDs; return the seconds it took."""
        began = time.monotonic()
        await asyncio.to_thread(self.plane.start)
        self.client = await ApiClient.connect(
            kubeconfig=str(self.kubeconfig), concurrency=CREATE_CONCURRENCY, timeout=120.0
        )
        await self.install_crds()
        return time.monotonic() - began

    async def stop(self) -> None:
        """Close the client and stop the plane."""
        if self.client is not None:
            await self.client.close()
            self.client = None
        await asyncio.to_thread(self.plane.stop)

    async def ok(self, method: str, path: str, body: object = None, **kwargs: Any) -> Any:
        """Send a request that must succeed (2xx); RuntimeError otherwise."""
        status, answer = await self.api.request(method, path, body=body, **kwargs)
        if not 200 <= status < 300:
            raise RuntimeError(f"{method} {path}: HTTP {status}: {str(answer)[:300]}")
        return answer

    async def install_crds(self) -> None:
        """Create the Volcano CRDs and wait until they are served."""
        for path in sorted((REPO / "crds").glob("*.yaml")):
            crd = yaml.safe_load(path.read_text())
            status, answer = await self.api.request(
                "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body=crd
            )
            if status not in (201, 409):
                raise RuntimeError(f"CRD {path.name}: HTTP {status}: {answer}")
        for plural in ("queues", "podgroups"):
            await self._until(
                f"CRD {plural} served",
                functools.partial(self._served, f"/apis/scheduling.volcano.sh/v1beta1/{plural}"),
                timeout=60,
            )

    async def _served(self, path: str) -> bool:
        status, _ = await self.api.request("GET", path, params={"limit": "1"})
        return status == 200

    @staticmethod
    async def _until(what: str, check: Callable[[], Any], *, timeout: float, interval: float = 0.5) -> None:
        deadline = time.monotonic() + timeout
        while not await check():
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
            await asyncio.sleep(interval)

    # Nodes -----------------------------------------------------------------------------------------

    async def scale_nodes(self, count: int) -> dict[str, float]:
        """Create fake nodes until there are `count`, concurrently; wait until all are Ready and untainted.

        Returns the seconds spent creating and the seconds until every node was schedulable.
        """
        began = time.monotonic()
        names = [f"kwok-{i:05d}" for i in range(len(self.nodes), count)]

        async def create(name: str) -> None:
            status, answer = await self.api.request("POST", "/api/v1/nodes", body=node_manifest(name))
            if status not in (201, 409):
                raise RuntimeError(f"create node {name}: HTTP {status}: {str(answer)[:300]}")

        await gather_limited([functools.partial(create, name) for name in names], CREATE_CONCURRENCY)
        self.nodes.extend(names)
        created = time.monotonic()
        await self._until(f"{count} nodes Ready", lambda: self._nodes_ready(count), timeout=600, interval=2.0)
        ready = time.monotonic()
        await self._until_kwok_settled(timeout=600)
        return {
            "create_s": round(created - began, 2),
            "ready_s": round(ready - began, 2),
            "settled_s": round(time.monotonic() - began, 2),
        }

    async def _until_kwok_settled(self, *, timeout: float) -> None:
        """Wait until kwok stops LISTing pods: it lists each node's pods as it takes the node over, for
        a while after the node is Ready (5,000 nodes: ~5,000 LISTs over tens of seconds). A phase started
        meanwhile shares the API server with them, as the first phase after scaling did."""
        deadline = time.monotonic() + timeout
        lists, quiet = -1.0, 0
        while quiet < QUIET_SECONDS:
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out after {timeout:.0f}s waiting for kwok to take every node")
            await asyncio.sleep(1.0)
            now = (await self.api_counters()).get("LIST pods", 0.0)
            quiet = quiet + 1 if now == lists else 0
            lists = now

    async def _nodes_ready(self, count: int) -> bool:
        ready = 0
        token = ""
        while True:
            params = {"labelSelector": NODE_LABEL, "limit": "1000"} | ({"continue": token} if token else {})
            body = await self.ok("GET", "/api/v1/nodes", params=params)
            for node in body.get("items") or []:
                conditions = (node.get("status") or {}).get("conditions") or []
                taints = (node.get("spec") or {}).get("taints") or []
                if not taints and any(c["type"] == "Ready" and c["status"] == "True" for c in conditions):
                    ready += 1
            token = (body.get("metadata") or {}).get("continue") or ""
            if not token:
                return ready >= count

    # Namespaces and pods ---------------------------------------------------------------------------

    async def namespace(self, name: str) -> str:
        """Create a namespace and wait for its default ServiceAccount (pods need it to be admitted)."""
        await self.ok(
            "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        )
        path = f"/api/v1/namespaces/{name}/serviceaccounts/default"
        await self._until(f"ServiceAccount {name}/default", lambda: self._served(path), timeout=60, interval=0.2)
        return name

    async def create_all(
        self, path: str, bodies: list[dict[str, Any]], *, concurrency: int = CREATE_CONCURRENCY
    ) -> dict[str, float]:
        """POST every body to `path` at once (`concurrency` in flight); return first/last times and rate."""
        began = time.monotonic()

        async def create(body: dict[str, Any]) -> None:
            for attempt in range(5):
                status, answer = await self.api.request("POST", path, body=body)
                if status in (201, 409):
                    return
                if status in (429, 500, 503, 504) and attempt < 4:
                    await asyncio.sleep(0.5 * (attempt + 1))
                    continue
                raise RuntimeError(f"POST {path} {body['metadata']['name']}: HTTP {status}: {str(answer)[:300]}")

        await gather_limited([functools.partial(create, body) for body in bodies], concurrency)
        ended = time.monotonic()
        return {
            "started": began,
            "ended": ended,
            "seconds": round(ended - began, 3),
            "per_s": round(len(bodies) / (ended - began), 1) if ended > began else 0.0,
        }

    async def until_running(self, namespace: str, *, timeout: float = 1800) -> float:
        """Wait until every pod of `namespace` is Running (kwok marks a bound pod Running some time after
        its creation); return the seconds waited. Asked every 5 s for one pod of another phase: a page
        of one, which the API server serves from its cache (0.2 s at 150,000 pods), where a list of all
        the others (resourceVersion 0 ignores the limit) kept it busier than kwok."""
        began = time.monotonic()
        params = {"fieldSelector": "status.phase!=Running", "limit": "1"}
        path = f"/api/v1/namespaces/{namespace}/pods"
        await self._until(
            f"every pod of {namespace} Running",
            lambda: self._none(path, params),
            timeout=timeout,
            interval=5.0,
        )
        return time.monotonic() - began

    async def _none(self, path: str, params: dict[str, str]) -> bool:
        body = await self.ok("GET", path, params=params)
        return not body.get("items")

    async def count_pods(self, namespace: str) -> int:
        """Return the number of pods in `namespace` (a paged LIST of names only would be nicer; pods are small)."""
        body = await self.ok(
            "GET", f"/api/v1/namespaces/{namespace}/pods", params={"limit": "1", "resourceVersion": "0"}
        )
        remaining = (body.get("metadata") or {}).get("remainingItemCount")
        if remaining is not None:
            return int(remaining) + len(body.get("items") or [])
        body = await self.ok("GET", f"/api/v1/namespaces/{namespace}/pods")
        return len(body.get("items") or [])

    async def delete_pods(self, namespace: str, *, timeout: float = 900) -> float:
        """Delete every pod of `namespace` (by collection, gracePeriodSeconds 0) and wait until none is left.

        A collection of tens of thousands of pods outlasts the API server's 60 s request timeout (504);
        the DELETE is sent again every 30 s until the namespace is empty.
        """
        began = time.monotonic()
        path = f"/api/v1/namespaces/{namespace}/pods"
        while True:
            sent = time.monotonic()
            try:
                status, answer = await self.api.request("DELETE", path, body={"gracePeriodSeconds": 0})
            except ApiError:  # the API server gave up on the request and closed the connection
                status, answer = 504, None
            if status not in (200, 202, 404, 429, 500, 503, 504):
                raise RuntimeError(f"DELETE {path}: HTTP {status}: {str(answer)[:300]}")
            while time.monotonic() - sent < 30:
                body = await self.ok("GET", path, params={"limit": "1"})
                if not body.get("items"):
                    return time.monotonic() - began
                if time.monotonic() - began > timeout:
                    raise TimeoutError(f"pods of {namespace} still there after {timeout:.0f}s")
                await asyncio.sleep(1.0)

    async def delete_namespace(self, namespace: str) -> None:
        """Delete the pods of `namespace` (waiting), its PodGroups, then the namespace (not waiting)."""
        await self.delete_pods(namespace)
        await self.api.request(
            "DELETE", f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{namespace}/podgroups", body={}
        )
        await self.api.request("DELETE", f"/api/v1/namespaces/{namespace}", body={})

    async def api_counters(self) -> dict[str, float]:
        """Return the API server's request counts by `VERB resource[/subresource]`, and under
        `terminated pod watches` the pod watches it closed because their reader fell behind."""
        status, text = await self.api.request("GET", "/metrics")
        out: dict[str, float] = {}
        if status != 200 or not isinstance(text, str):
            return out
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == "apiserver_request_total":
                    labels = sample.labels
                    sub = labels.get("subresource") or ""
                    key = f"{labels.get('verb')} {labels.get('resource')}{'/' + sub if sub else ''}"
                    out[key] = out.get(key, 0.0) + sample.value
                elif sample.name == "apiserver_terminated_watchers_total" and sample.labels.get("resource") == "pods":
                    out["terminated pod watches"] = out.get("terminated pod watches", 0.0) + sample.value
        return out

    def component_rss_mib(self) -> dict[str, float]:
        """Return the resident memory of each control-plane component, MiB."""
        return {name: round(rss / 2**20, 1) for name, rss in self.plane.rss().items()}


# The pod watcher -----------------------------------------------------------------------------------


@dataclass(slots=True)
class WatchResult:
    """When the watcher first saw each pod (`seen`) and first saw it with a node (`bound`), monotonic."""

    seen: dict[str, float] = field(default_factory=dict)
    bound: dict[str, float] = field(default_factory=dict)
    events: int = 0
    error: str = ""
    reconnects: int = 0

    def latencies(self) -> list[float]:
        """Return seen-to-bound seconds of every bound pod."""
        return [t - self.seen[name] for name, t in self.bound.items() if name in self.seen]


def _watch_main(kubeconfig: str, namespace: str, selector: str, expect: int, conn: Any, timeout: float) -> None:
    try:
        result = asyncio.run(_watch(kubeconfig, namespace, selector, expect, conn, timeout))
    except BaseException as exc:  # report anything to the parent rather than dying silently
        result = WatchResult(error=f"{type(exc).__name__}: {exc}")
    conn.send((result.seen, result.bound, result.events, result.error, result.reconnects))
    conn.close()


async def _watch(kubeconfig: str, namespace: str, selector: str, expect: int, conn: Any, timeout: float) -> WatchResult:
    credentials = load_credentials(kubeconfig)
    headers = {"Accept": "application/json"}
    if credentials.authorization:
        headers["Authorization"] = credentials.authorization
    result = WatchResult()
    deadline = time.monotonic() + timeout
    path = f"{credentials.server}/api/v1/namespaces/{namespace}/pods"
    connector = aiohttp.TCPConnector(ssl=credentials.ssl_context())
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        selecting = {"labelSelector": selector} if selector else {}
        async with session.get(path, params=selecting) as response:
            listing = await response.json()
        now = time.monotonic()
        already: set[str] = set()  # bound before the watch began: not this phase's binds
        for pod in listing.get("items") or []:
            name = pod["metadata"]["name"]
            result.seen[name] = now
            if (pod.get("spec") or {}).get("nodeName"):
                already.add(name)
        state = _WatchState(version=listing["metadata"]["resourceVersion"], already=already, expect=expect)
        conn.send("ready")
        reader = asyncio.create_task(_follow(session, path, selecting, state, result, timeout))
        while not reader.done() and time.monotonic() < deadline and not conn.poll():
            await asyncio.wait({reader}, timeout=0.2)  # the parent may say stop
        if not reader.done():
            reader.cancel()
            result.error = result.error or "stopped before every bind was seen"
        with contextlib.suppress(asyncio.CancelledError):
            await reader
    return result


@dataclass(slots=True)
class _WatchState:
    version: str
    already: set[str]
    expect: int
    bound_here: int = 0
    reconnects: int = 0


async def _follow(
    session: aiohttp.ClientSession,
    path: str,
    selecting: dict[str, str],
    state: _WatchState,
    result: WatchResult,
    timeout: float,
) -> None:
    """Read watch events until `expect` binds were seen, resuming after the API server ends the stream.

    The API server closes a watch whose reader falls behind (the bench process shares 2 cores with the
    whole control plane); like an informer, the watch resumes from the last resourceVersion seen.
    """
    read_timeout = aiohttp.ClientTimeout(total=None, sock_read=timeout + 60)
    while state.bound_here < state.expect:
        params = {"watch": "1", "resourceVersion": state.version, "timeoutSeconds": str(int(timeout) + 60)}
        params |= selecting | {"allowWatchBookmarks": "true"}
        async with session.get(path, params=params, timeout=read_timeout) as response:
            if response.status != 200:
                result.error = f"watch: HTTP {response.status}: {(await response.text())[:200]}"
                return
            async for line in response.content:
                if _on_event(json.loads(line), time.monotonic(), state, result):
                    return
        state.reconnects += 1
        result.reconnects = state.reconnects


def _on_event(event: dict[str, Any], now: float, state: _WatchState, result: WatchResult) -> bool:
    """Record one watch event; return True when the watch is over (every bind seen, or an error)."""
    result.events += 1
    obj = event.get("object") or {}
    if event.get("type") == "ERROR":
        result.error = str(obj.get("message"))
        return True
    meta = obj.get("metadata") or {}
    state.version = meta.get("resourceVersion") or state.version
    name = meta.get("name")
    if event.get("type") == "BOOKMARK" or name is None or name in state.already:
        return False
    result.seen.setdefault(name, now)
    if name not in result.bound and (obj.get("spec") or {}).get("nodeName"):
        result.bound[name] = now
        state.bound_here += 1
    return state.bound_here >= state.expect


class PodWatch:
    """A watch on the pods of one namespace in a separate process, so that what the benchmark itself does
    (creating thousands of pods) never delays when a bind is seen.

    `expect` is how many binds to wait for (pods already bound when the watch starts do not count);
    `selector` a label selector limiting the pods watched.
    """

    def __init__(
        self, kubeconfig: Path, namespace: str, *, expect: int, selector: str = "", timeout: float = 900.0
    ) -> None:
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self._proc = context.Process(
            target=_watch_main,
            args=(str(kubeconfig), namespace, selector, expect, child, timeout),
            daemon=True,
        )
        self.timeout = timeout

    async def __aenter__(self) -> PodWatch:
        self._proc.start()
        message = await asyncio.to_thread(self._recv, 60.0)
        if message != "ready":
            raise RuntimeError(f"pod watch did not start: {message}")
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._proc.is_alive():
            with contextlib.suppress(OSError):
                self._conn.send("stop")
        await asyncio.to_thread(self._proc.join, 10)
        if self._proc.is_alive():
            self._proc.kill()

    def _recv(self, timeout: float) -> Any:
        if not self._conn.poll(timeout):
            raise TimeoutError("pod watch process did not answer")
        return self._conn.recv()

    async def result(self) -> WatchResult:
        """Wait until the expected binds were seen (or the timeout); return what was seen."""
        message = await asyncio.to_thread(self._recv, self.timeout + 120)
        if isinstance(message, str):
            message = await asyncio.to_thread(self._recv, self.timeout + 120)
        seen, bound, events, error, reconnects = message
        return WatchResult(seen=seen, bound=bound, events=events, error=error, reconnects=reconnects)

    def stop(self) -> None:
        """Ask the watcher to stop now and send what it saw."""
        with contextlib.suppress(OSError):
            self._conn.send("stop")


# The scheduler process and its metrics ----------------------------------------------------------------


#: The series `scrape` reads, asked for by name (`name[]`): a whole page renders a line per job, a cost the
#: benchmark's scrape every 0.5 s would add to py-volcano's CPU and no Prometheus scraping every 15 s does.
#: vc-scheduler ignores the parameter and answers the whole page.
_SCRAPED = urllib.parse.urlencode(
    [
        ("name[]", name)
        for name in (
            "volcano_pod_binds_total",
            "volcano_scheduling_cycles_total",
            "volcano_e2e_scheduling_latency_milliseconds_sum",
            "volcano_e2e_scheduling_latency_milliseconds_count",
            "volcano_task_scheduling_latency_milliseconds_bucket",
        )
    ]
)


def scrape(port: int) -> dict[str, Any]:
    """Scrape py-volcano's /metrics: binds, cycles, cycle time, and the buckets of the pod-latency histogram
    to the Bound stage (creation to the bind's answer, as the scheduler sees it)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics?{_SCRAPED}", timeout=10) as response:
        text = response.read().decode()
    out: dict[str, Any] = {"binds": 0.0, "bind_errors": 0.0, "cycles": 0.0, "latency_buckets": []}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "volcano_pod_binds_total":
                out["binds" if sample.labels.get("result") == "success" else "bind_errors"] = sample.value
            elif sample.name == "volcano_scheduling_cycles_total":
                out["cycles"] = sample.value
            elif sample.name == "volcano_e2e_scheduling_latency_milliseconds_sum":
                out["cycle_ms_sum"] = sample.value
            elif sample.name == "volcano_e2e_scheduling_latency_milliseconds_count":
                out["cycle_count"] = sample.value
            elif (
                sample.name == "volcano_task_scheduling_latency_milliseconds_bucket"
                and sample.labels.get("stage") == "Bound"
            ):  # one stage's series: the stages' buckets together are no histogram
                out["latency_buckets"].append((float(sample.labels["le"]) / 1000, sample.value))
    return out


def histogram_quantile(buckets: list[tuple[float, float]], q: float) -> float | None:
    """Prometheus' histogram_quantile over cumulative (upper bound, count) buckets."""
    buckets = sorted(buckets)
    if not buckets or buckets[-1][1] == 0:
        return None
    rank = q * buckets[-1][1]
    prev_bound, prev_count = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if bound == float("inf"):
                return prev_bound
            return prev_bound + (bound - prev_bound) * (rank - prev_count) / max(count - prev_count, 1e-9)
        prev_bound, prev_count = bound, count
    return prev_bound


def bucket_delta(after: list[tuple[float, float]], before: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Return the histogram buckets of what happened between two scrapes."""
    earlier = dict(before)
    return [(bound, count - earlier.get(bound, 0.0)) for bound, count in after]


class Subprocess:
    """A process the bench started in a session of its own, its output appended to `log_path`."""

    stop_timeout = 60.0
    """Seconds `stop` waits after SIGTERM before it kills the process group."""

    def __init__(self, args: list[str], log_path: Path) -> None:
        self.log_path = log_path
        self.started = time.monotonic()
        with open(log_path, "ab") as out:
            self.proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    @property
    def pid(self) -> int:
        """Return the process id."""
        return self.proc.pid

    def tail(self, lines: int = 20) -> str:
        """Return the end of the log."""
        with contextlib.suppress(OSError):
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        return ""

    async def stop(self) -> int | None:
        """SIGTERM, then SIGKILL the process group after `stop_timeout`; return the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.to_thread(self.proc.wait, self.stop_timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                await asyncio.to_thread(self.proc.wait, 30)
        return self.proc.returncode


class PyVolcano(Subprocess):
    """One `py-volcano run --no-leader-elect --no-podgroup-controller --log-level warning` subprocess on the
    bench cluster: the scheduler alone, as kube-scheduler is measured alone (the controller would add a
    PodGroup and a pod patch for every bare pod of the single-pod phase)."""

    def __init__(self, kubeconfig: Path, log_dir: Path, *, name: str, extra: tuple[str, ...] = ()) -> None:
        log_dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        beside = Path(sys.executable).parent / "py-volcano"
        self.args = [
            str(beside) if beside.exists() else "py-volcano",
            "run",
            f"--kubeconfig={kubeconfig}",
            "--no-leader-elect",
            "--no-podgroup-controller",
            f"--listen-address=127.0.0.1:{self.port}",
            "--log-level=warning",
            *extra,
        ]
        super().__init__(self.args, log_dir / f"{name}.log")

    def memory_mib(self) -> dict[str, float]:
        """Return VmHWM (peak resident) and VmRSS of the process, MiB."""
        return memory_mib(self.pid)

    def cpu_seconds(self) -> float:
        """Return user + system CPU seconds the process used so far."""
        return cpu_seconds(self.pid)

    async def wait_ready(self, timeout: float = 600.0) -> float:
        """Wait until /readyz answers 200 (every kind listed); return seconds since the process started."""
        deadline = time.monotonic() + timeout
        url = f"http://127.0.0.1:{self.port}/readyz"
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"py-volcano exited {self.proc.returncode}: {self.tail()}")
            try:
                status = await asyncio.to_thread(http_status, url)
            except OSError:
                status = 0
            if status == 200:
                return time.monotonic() - self.started
            if time.monotonic() > deadline:
                raise TimeoutError(f"py-volcano not ready after {timeout:.0f}s: {self.tail()}")
            await asyncio.sleep(0.1)

    async def metrics(self) -> dict[str, Any]:
        """Scrape /metrics."""
        return await asyncio.to_thread(scrape, self.port)


def http_status(url: str, *, timeout: float = 5.0) -> int:
    """The HTTP status `url` answers with (urllib's error for a refused connection or no answer)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


class Sampler:
    """Scrape py-volcano's bind counter every `interval` seconds while a phase runs: the scheduler's own
    bind rate is the binds counted between the first and the last scrape that saw the counter move."""

    def __init__(self, scheduler: PyVolcano, interval: float = 0.5) -> None:
        self.scheduler = scheduler
        self.interval = interval
        self.samples: list[tuple[float, float]] = []
        self.first: dict[str, Any] = {}
        self.last: dict[str, Any] = {}
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Sampler:
        self.first = await self.scheduler.metrics()
        self.samples.append((time.monotonic(), self.first["binds"]))
        self._task = asyncio.create_task(self._run())
        return self

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            with contextlib.suppress(OSError):
                metrics = await self.scheduler.metrics()
                self.samples.append((time.monotonic(), metrics["binds"]))

    async def __aexit__(self, *exc_info: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self.last = await self.scheduler.metrics()
        self.samples.append((time.monotonic(), self.last["binds"]))

    def bind_rate(self) -> float | None:
        """Binds per second between the last scrape before the counter moved and the first at its end."""
        base = self.samples[0][1]
        final = self.samples[-1][1]
        if final <= base:
            return None
        start = max(t for t, v in self.samples if v <= base)
        end = min(t for t, v in self.samples if v >= final)
        return (final - base) / (end - start) if end > start else None

    def summary(self) -> Mapping[str, Any]:
        """Return the scheduler's own figures for the phase: binds, bind rate, cycles, mean cycle, latency quantiles."""
        buckets = bucket_delta(self.last["latency_buckets"], self.first["latency_buckets"])
        cycles = self.last["cycles"] - self.first["cycles"]
        cycle_ms = self.last.get("cycle_ms_sum", 0.0) - self.first.get("cycle_ms_sum", 0.0)
        rate = self.bind_rate()
        p50, p99 = histogram_quantile(buckets, 0.5), histogram_quantile(buckets, 0.99)
        return {
            "binds": int(self.last["binds"] - self.first["binds"]),
            "bind_errors": int(self.last["bind_errors"] - self.first["bind_errors"]),
            "bind_rate_per_s": round(rate, 1) if rate else None,
            "cycles": int(cycles),
            "mean_cycle_s": round(cycle_ms / cycles / 1000, 3) if cycles else None,
            "hist_p50_latency_s": round(p50, 3) if p50 is not None else None,
            "hist_p99_latency_s": round(p99, 3) if p99 is not None else None,
        }
