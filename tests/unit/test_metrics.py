"""Metrics: Volcano's names, types, labels and units as docs/operations.md lists them, exact values,
and the endpoint serving them."""

from __future__ import annotations

import asyncio
import json
import re
import socket
from pathlib import Path

import aiohttp
import pytest

from py_volcano.api import ClusterInfo, CycleResult, JobID, QueueFigures, QueueStatus, Resource, TaskInfo
from py_volcano.errors import ConfigError
from py_volcano.framework import run_cycle
from py_volcano.metrics import Metrics, serve
from py_volcano.registry import default_registry, load_conf
from tests import builders as b
from tests.ports import free_port

from .deploy import operations_doc

GPU = "nvidia.com/gpu"
GIB = 2**30
NOW = 1_000.0
PHASES = ("pending", "inqueue", "running", "unknown", "completed")
DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "py-volcano-dashboard.json"

Key = tuple[str, frozenset[tuple[str, str]]]
Samples = dict[Key, float]

_SAMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})? (\S+)$")
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), text)


def parse(text: str) -> tuple[Samples, dict[str, str]]:
    """Samples under their exact exposed names, and the `# TYPE` of each family, from a text page."""
    samples: Samples = {}
    types: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            types[name] = kind
        elif line and not line.startswith("#"):
            match = _SAMPLE.match(line)
            assert match is not None, line
            name, labels, value = match.groups()
            pairs = ((label, _unescape(text)) for label, text in _LABEL.findall(labels or ""))
            samples[(name, frozenset(pairs))] = float(value)
    return samples, types


def samples(metrics: Metrics, prefix: str = "volcano_") -> Samples:
    return {key: value for key, value in parse(metrics.render().decode())[0].items() if key[0].startswith(prefix)}


def key(name: str, **labels: str) -> Key:
    return name, frozenset(labels.items())


def known_cluster() -> ClusterInfo:
    """One node (4 CPU, 8 GiB, 4 GPUs); g1 in namespace a short one task of its two, g2 in b running."""
    return b.cluster(
        b.node(name="n1", cpu="4", memory="8Gi", scalars={GPU: "4"}),
        b.queue(name="a"),
        b.pod_group(name="g1", namespace="a", queue="a", min_member=2),
        b.pod(name="p1", namespace="a", group="g1", cpu="1", memory="1Gi", node_name="n1"),
        b.pod(name="p2", namespace="a", group="g1", cpu="1", memory="1Gi"),
        b.pod_group(name="g2", namespace="b", queue="a", phase="Running"),
        b.pod(name="p3", namespace="b", group="g2", cpu="2", memory="1Gi", node_name="n1"),
    )


def task(cluster: ClusterInfo, job: str, name: str) -> TaskInfo:
    return next(t for t in cluster.jobs[JobID(job)].tasks.values() if t.name == name)


def known_result(cluster: ClusterInfo | None = None) -> CycleResult:
    """Queue `a` with every figure and a GPU, `b` overused with none of the optional ones; p2 bound."""
    cluster = cluster or known_cluster()
    return CycleResult(
        binds=[(task(cluster, "a/g1", "p2"), "n1")],
        pipelined={"a/p": "n1"},
        unschedulable={"a/u1": "0/1 nodes are available", "a/u2": "0/1 nodes are available"},
        queues={
            "a": QueueFigures(
                weight=2,
                allocated=Resource(1500, GIB, {GPU: 1000}),
                request=Resource(4000, 2 * GIB, {GPU: 2000}),
                deserved=Resource(3000, 2 * GIB, {GPU: 2000}),
                capability=Resource(8000, 8 * GIB, {GPU: 8000}),
                real_capability=Resource(6000, 4 * GIB, {GPU: 4000}),
                inqueue=Resource(500, GIB // 2, {GPU: 1000}),
                share=0.5,
            ),
            "b": QueueFigures(weight=1, overused=True),
        },
        queue_statuses={
            "a": QueueStatus(pending=1, inqueue=2, running=2, completed=1),
            "b": QueueStatus(unknown=1),
        },
        plugin_durations={
            ("gang", "OnSessionOpen"): 0.0002,
            ("proportion", "OnSessionOpen"): 0.003,
            ("proportion", "OnSessionClose"): 0.001,
        },
        action_durations={"allocate": 0.0015, "enqueue": 0.00004},
        preemption_attempts=3,
        preemption_victims=2,
    )


def observed(result: CycleResult | None = None, cluster: ClusterInfo | None = None) -> Metrics:
    cluster = cluster or known_cluster()
    metrics = Metrics(clock=lambda: NOW)
    metrics.observe_cycle(result or known_result(cluster), 0.25, cluster)
    return metrics


def queue_gauges(values: dict[str, dict[str, float]]) -> Samples:
    """{metric suffix: {queue: value}} -> samples; a suffix `x:resource` carries the resource label."""
    found: Samples = {}
    for suffix, per_queue in values.items():
        name, _, resource = suffix.partition(":")
        for queue, value in per_queue.items():
            labels = {"queue_name": queue, **({"resource": resource} if resource else {})}
            found[key(f"volcano_queue_{name}", **labels)] = value
    return found


def test_queue_gauges_are_exact() -> None:
    """Capacity is the capability, real capacity the real capability; a figure a queue lacks has no series."""
    assert samples(observed(), "volcano_queue_") == queue_gauges(
        {
            "allocated_milli_cpu": {"a": 1500, "b": 0},
            "allocated_memory_bytes": {"a": GIB, "b": 0},
            f"allocated_scalar_resources:{GPU}": {"a": 1000},
            "request_milli_cpu": {"a": 4000, "b": 0},
            "request_memory_bytes": {"a": 2 * GIB, "b": 0},
            f"request_scalar_resources:{GPU}": {"a": 2000},
            "deserved_milli_cpu": {"a": 3000},
            "deserved_memory_bytes": {"a": 2 * GIB},
            f"deserved_scalar_resources:{GPU}": {"a": 2000},
            "capacity_milli_cpu": {"a": 8000},
            "capacity_memory_bytes": {"a": 8 * GIB},
            f"capacity_scalar_resources:{GPU}": {"a": 8000},
            "real_capacity_milli_cpu": {"a": 6000},
            "real_capacity_memory_bytes": {"a": 4 * GIB},
            f"real_capacity_scalar_resources:{GPU}": {"a": 4000},
            "inqueue_milli_cpu": {"a": 500},
            "inqueue_memory_bytes": {"a": GIB // 2},
            f"inqueue_scalar_resources:{GPU}": {"a": 1000},
            "weight": {"a": 2, "b": 1},
            "overused": {"a": 0, "b": 1},
            "share": {"a": 0.5, "b": 0},
            "pod_group_pending_count": {"a": 1, "b": 0},
            "pod_group_inqueue_count": {"a": 2, "b": 0},
            "pod_group_running_count": {"a": 2, "b": 0},
            "pod_group_unknown_count": {"a": 0, "b": 1},
            "pod_group_completed_count": {"a": 1, "b": 0},
        }
    )


def test_series_of_a_queue_that_disappears_go_with_it() -> None:
    metrics = observed()
    cluster = known_cluster()
    later = CycleResult(
        queues={"a": QueueFigures(weight=3, allocated=Resource(500, 0))}, queue_statuses={"a": QueueStatus()}
    )
    metrics.observe_cycle(later, 0.1, cluster)
    assert samples(metrics, "volcano_queue_") == queue_gauges(
        {
            "allocated_milli_cpu": {"a": 500},
            "allocated_memory_bytes": {"a": 0},
            "request_milli_cpu": {"a": 0},
            "request_memory_bytes": {"a": 0},
            "weight": {"a": 3},
            "overused": {"a": 0},
            "share": {"a": 0},
            **{f"pod_group_{phase}_count": {"a": 0} for phase in PHASES},
        }
    )


def test_job_and_namespace_gauges_are_exact() -> None:
    """Shares are dominant shares of the cluster's allocatable; p2's bind counts in g1's e2e job latency."""
    found = samples(observed())
    prefixes = ("volcano_job_", "volcano_unschedule_", "volcano_namespace_")
    jobs = {k: v for k, v in found.items() if k[0].startswith(prefixes)}
    assert jobs == {
        key("volcano_job_share", job_ns="a", job_id="g1"): 0.25,  # 1 of 4 CPUs (1 of 8 GiB)
        key("volcano_job_share", job_ns="b", job_id="g2"): 0.5,  # 2 of 4 CPUs
        key("volcano_namespace_share", namespace_name="a"): 0.25,
        key("volcano_namespace_share", namespace_name="b"): 0.5,
        key("volcano_unschedule_task_count", job_id="g1"): 1,  # minMember 2, one running
        key("volcano_unschedule_job_count"): 1,
        key("volcano_job_retry_counts", job_id="g1"): 1,
    }
    cluster = known_cluster()
    labels = {"job_name": "g1", "queue": "a", "job_namespace": "a"}
    creation = cluster.jobs[JobID("a/g1")].creation
    assert found[key("volcano_e2e_job_scheduling_duration", **labels)] == (NOW - creation) * 1000
    assert found[key("volcano_e2e_job_scheduling_start_time", **labels)] == int(creation)
    assert found[key("volcano_e2e_job_scheduling_last_time", **labels)] == NOW
    g2 = {"job_name": "g2", "queue": "a", "job_namespace": "b"}
    assert found[key("volcano_e2e_job_scheduling_start_time", **g2)] == int(cluster.jobs[JobID("b/g2")].creation)
    assert key("volcano_e2e_job_scheduling_duration", **g2) not in found, "g2 had no allocation"
    latency = "volcano_e2e_job_scheduling_latency_milliseconds"
    assert (found[key(f"{latency}_count")], found[key(f"{latency}_sum")]) == (1, (NOW - creation) * 1000)
    assumed = "volcano_task_scheduling_latency_milliseconds"
    p2 = task(cluster, "a/g1", "p2").creation
    assert (found[key(f"{assumed}_count", stage="Assumed")], found[key(f"{assumed}_sum", stage="Assumed")]) == (
        1,
        (NOW - p2) * 1000,
    )


def test_job_series_follow_the_jobs_and_retries_add_up() -> None:
    cluster = known_cluster()
    metrics = observed(cluster=cluster)
    metrics.observe_cycle(CycleResult(), 0.1, cluster)
    assert samples(metrics)[key("volcano_job_retry_counts", job_id="g1")] == 2
    metrics.observe_cycle(CycleResult(), 0.1, b.cluster(b.node(name="n1"), b.queue(name="a")))
    left = {name for name, _ in samples(metrics) if name.startswith(("volcano_job_", "volcano_e2e_job_scheduling_"))}
    assert left, "the job latency histogram stays"
    assert left <= {f"volcano_e2e_job_scheduling_latency_milliseconds_{s}" for s in ("bucket", "sum", "count")}
    assert samples(metrics)[key("volcano_unschedule_job_count")] == 0


def test_preemption_attempts_add_up_and_victims_keep_the_last_count() -> None:
    metrics = observed()
    metrics.observe_cycle(CycleResult(preemption_attempts=2), 0.1, known_cluster())
    found = samples(metrics)
    assert found[key("volcano_total_preemption_attempts")] == 5
    assert found[key("volcano_pod_preemption_victims")] == 2, "a cycle without preemption keeps the last count"
    metrics.observe_cycle(CycleResult(preemption_attempts=1, preemption_victims=0), 0.1, known_cluster())
    assert samples(metrics)[key("volcano_pod_preemption_victims")] == 0


def test_cycle_histograms_and_counters_are_exact() -> None:
    """Latencies in milliseconds, as Volcano has them since 1.11."""
    found = samples(observed())
    cycle = "volcano_e2e_scheduling_latency_milliseconds"
    assert found[key(f"{cycle}_count")] == 1
    assert found[key(f"{cycle}_sum")] == 250
    assert found[key(f"{cycle}_bucket", le="160.0")] == 0
    assert found[key(f"{cycle}_bucket", le="320.0")] == 1
    action = "volcano_action_scheduling_latency_milliseconds"
    assert found[key(f"{action}_sum", action="allocate")] == pytest.approx(1.5)
    assert found[key(f"{action}_bucket", action="allocate", le="0.8")] == 0
    assert found[key(f"{action}_bucket", action="allocate", le="1.6")] == 1
    assert found[key(f"{action}_bucket", action="enqueue", le="0.1")] == 1
    plugin = "volcano_plugin_scheduling_latency_milliseconds"
    assert found[key(f"{plugin}_sum", plugin="gang", OnSession="OnSessionOpen")] == pytest.approx(0.2)
    assert found[key(f"{plugin}_count", plugin="proportion", OnSession="OnSessionOpen")] == 1
    assert found[key(f"{plugin}_sum", plugin="proportion", OnSession="OnSessionOpen")] == pytest.approx(3)
    assert found[key(f"{plugin}_sum", plugin="proportion", OnSession="OnSessionClose")] == pytest.approx(1)
    assert found[key("volcano_scheduling_cycles_total")] == 1
    attempts = {
        result: found[key("volcano_schedule_attempts_total", result=result)]
        for result in ("scheduled", "unschedulable", "error")
    }
    assert attempts == {"scheduled": 0, "unschedulable": 3, "error": 0}, "two unschedulable, one pipelined"


def test_binds_and_evictions_are_counted_by_result() -> None:
    metrics = Metrics()
    metrics.observe_bind(True, 2.5)
    metrics.observe_bind(True, None)
    metrics.observe_bind(False, None)
    for result in ("success", "blocked", "blocked", "error"):
        metrics.observe_eviction(result)
    found = samples(metrics)
    assert {r: found[key("volcano_pod_binds_total", result=r)] for r in ("success", "error")} == {
        "success": 2,
        "error": 1,
    }
    assert {r: found[key("volcano_schedule_attempts_total", result=r)] for r in ("scheduled", "error")} == {
        "scheduled": 2,
        "error": 1,
    }
    evictions = {r: found[key("volcano_pod_evictions_total", result=r)] for r in ("success", "blocked", "error")}
    assert evictions == {"success": 1, "blocked": 2, "error": 1}
    task = "volcano_task_scheduling_latency_milliseconds"
    assert (found[key(f"{task}_count", stage="Bound")], found[key(f"{task}_sum", stage="Bound")]) == (1, 2500)
    assert found[key(f"{task}_bucket", stage="Bound", le="2560.0")] == 1
    assert found[key(f"{task}_bucket", stage="Bound", le="1280.0")] == 0
    assert found[key(f"{task}_count", stage="Assumed")] == 0


def test_an_unknown_eviction_result_is_refused() -> None:
    with pytest.raises(ValueError, match="'refused'"):
        Metrics().observe_eviction("refused")


def test_each_metrics_owns_its_registry() -> None:
    first, second = Metrics(), Metrics()
    first.observe_bind(True, 1.0)
    assert samples(second)[key("volcano_pod_binds_total", result="success")] == 0


def test_label_values_are_escaped() -> None:
    cluster = b.cluster(b.node(name="n1"), b.queue(name="a"), b.pod(name='p"\\', namespace="a", cpu="1"))
    text = observed(CycleResult(), cluster).render().decode()
    job = next(line for line in text.splitlines() if line.startswith("volcano_job_share{"))
    assert parse(job)[0] == {key("volcano_job_share", job_ns="a", job_id=next(iter(cluster.jobs.values())).name): 0.0}


def exposed_families(text: str) -> dict[str, operations_doc.Metric]:
    """Each `# TYPE` family with the label names its samples carry (`le` aside)."""
    found, types = parse(text)
    families = {}
    for name, kind in types.items():
        suffixes = ("_bucket", "_sum", "_count") if kind == "histogram" else ("",)
        labels = {
            label
            for (sample, pairs) in found
            if sample in {name + suffix for suffix in suffixes}
            for label, _ in pairs
            if label != "le"
        }
        families[name] = operations_doc.Metric(name=name, kind=kind, labels=frozenset(labels))
    return families


def test_exposition_is_exactly_the_documented_metrics() -> None:
    """Names, types and label names of docs/operations.md, nothing more (no `_created` series), besides
    prometheus_client's process and Python collectors."""
    cluster = known_cluster()
    result = known_result(cluster)
    result.overcommitted_nodes = {"n1": "node n1: its pods use more cpu than it allocates"}
    metrics = observed(result, cluster)
    metrics.observe_bind(True, 1.0)
    metrics.observe_conf(load_conf('actions: "allocate, dance"'))
    families = exposed_families(metrics.render().decode())
    ours = {name: family for name, family in families.items() if name.startswith("volcano_")}
    assert ours == operations_doc.metrics()
    assert set(families) - set(ours) >= {
        "process_resident_memory_bytes",
        "process_cpu_seconds_total",
        "python_info",
        "python_gc_collections_total",
    }
    assert all(name.startswith(("process_", "python_")) for name in set(families) - set(ours))


def test_an_overcommitted_node_has_a_series_until_it_is_not() -> None:
    """`volcano_node_overcommitted{node}` is 1 for each node the last cycle found using more than it allocates."""
    cluster = known_cluster()
    result = known_result(cluster)
    result.overcommitted_nodes = {"n1": "node n1: its pods use more cpu than it allocates"}
    metrics = observed(result, cluster)
    assert samples(metrics, "volcano_node_overcommitted") == {key("volcano_node_overcommitted", node="n1"): 1.0}
    metrics.observe_cycle(known_result(cluster), 0.25, cluster)
    assert samples(metrics, "volcano_node_overcommitted") == {}


def test_volcano_counters_without_total_keep_their_bare_names() -> None:
    """Volcano's Go client exposes these two counters without `_total`; dashboards query them so."""
    text = observed().render().decode()
    assert "# TYPE volcano_total_preemption_attempts counter\nvolcano_total_preemption_attempts 3.0\n" in text
    assert '# TYPE volcano_job_retry_counts counter\nvolcano_job_retry_counts{job_id="g1"} 1.0\n' in text
    assert "_total_total" not in text and "volcano_job_retry_counts_total" not in text


def test_a_scrape_that_names_series_gets_those_alone() -> None:
    """`name[]` (prometheus_client's own filter) picks samples by their exposed name: one bucket series of a
    histogram, a per-job family; the rest, per-job lines included, is not rendered."""
    metrics = observed()
    metrics.observe_bind(True, 1.0)
    everything = samples(metrics, "")
    names = ("volcano_e2e_scheduling_latency_milliseconds_count", "volcano_job_share", "volcano_pod_binds_total")
    found, types = parse(metrics.render(names).decode())
    assert found == {k: v for k, v in everything.items() if k[0] in names}
    assert {name for name, _ in found} == set(names)
    assert set(types) == {"volcano_e2e_scheduling_latency_milliseconds", "volcano_job_share", "volcano_pod_binds_total"}
    assert parse(metrics.render(("volcano_no_such_series",)).decode()) == ({}, {})
    assert samples(metrics, "").keys() == everything.keys(), "no name: every series"


def test_the_metrics_of_a_real_cycle_are_what_it_computed() -> None:
    """A cycle of the packaged configuration: the queue gauges are its figures, the job share drf's."""
    cluster = b.cluster(
        b.node(name="n1", cpu="4", memory="8Gi"),
        b.queue(name="default"),
        b.queue(name="q1", weight=2, capability={"cpu": "3"}),
        b.pod_group(name="g1", queue="q1", min_member=2),
        b.pod(name="p1", group="g1", cpu="1", memory="1Gi"),
        b.pod(name="p2", group="g1", cpu="1", memory="1Gi"),
    )
    registry = default_registry()
    result = run_cycle(cluster, load_conf(None, source="default", registry=registry), registry)
    assert len(result.binds) == 2
    found = samples(observed(result, cluster))
    figures = result.queues["q1"]
    assert figures.deserved is not None and figures.real_capability is not None and figures.capability is not None
    assert found[key("volcano_queue_allocated_milli_cpu", queue_name="q1")] == figures.allocated.milli_cpu == 2000
    assert found[key("volcano_queue_deserved_milli_cpu", queue_name="q1")] == figures.deserved.milli_cpu
    assert found[key("volcano_queue_capacity_milli_cpu", queue_name="q1")] == figures.capability.milli_cpu == 3000
    assert found[key("volcano_queue_real_capacity_milli_cpu", queue_name="q1")] == figures.real_capability.milli_cpu
    assert found[key("volcano_queue_share", queue_name="q1")] == figures.share
    assert found[key("volcano_job_share", job_ns="default", job_id="g1")] == 0.5
    assert found[key("volcano_unschedule_job_count")] == 0


PREEMPT_CONF = """actions: enqueue, allocate, preempt
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
"""


def test_a_preempting_cycle_counts_its_attempt_and_victims() -> None:
    """high-0 preempts on the one node: the plugins offer one victim (gang keeps `low` at its minMember)
    and the one attempt evicts it; the preempt action reports both through the cycle result."""
    cluster = b.cluster(
        b.priority_class(name="low", value=1),
        b.priority_class(name="high", value=900),
        b.node(name="n", cpu="2"),
        b.pod_group(name="low", min_member=1, priority_class="low", phase="Running"),
        *[b.pod(name=f"low-{i}", group="low", node_name="n") for i in range(2)],
        b.pod_group(name="high", min_member=1, priority_class="high", phase="Inqueue"),
        b.pod(name="high-0", group="high"),
    )
    registry = default_registry()
    result = run_cycle(cluster, load_conf(PREEMPT_CONF, source="preempt", registry=registry), registry)
    assert [(task.name, reason) for task, reason in result.evictions] == [("low-0", "preempt")]
    found = samples(observed(result, cluster))
    assert (found[key("volcano_total_preemption_attempts")], found[key("volcano_pod_preemption_victims")]) == (1, 1)


def dashboard_queries() -> set[str]:
    """The series every panel target and template variable of the Grafana dashboard queries."""
    board = json.loads(DASHBOARD.read_text())
    panels = [p for top in board["panels"] for p in (top, *top.get("panels", []))]
    exprs = [target["expr"] for panel in panels for target in panel.get("targets", [])]
    exprs += [var["definition"] for var in board["templating"]["list"] if var["type"] == "query"]
    return {name for expr in exprs for name in re.findall(r"\bvolcano_[A-Za-z0-9_]+", expr)}


def test_every_metric_the_dashboard_queries_is_exported() -> None:
    queried = dashboard_queries()
    assert len(queried) > 40, "the dashboard queries the queue, job and latency metrics"
    exported = {name for name, _ in samples(observed())}
    assert queried - exported == set()


async def get(session: aiohttp.ClientSession, url: str) -> tuple[int, str, str]:
    async with session.get(url) as response:
        return response.status, response.headers["Content-Type"], await response.text()


async def wait_serving(session: aiohttp.ClientSession, url: str) -> None:
    for _ in range(200):
        try:
            await get(session, url)
        except aiohttp.ClientConnectionError:
            await asyncio.sleep(0.01)
        else:
            return
    pytest.fail(f"{url} never answered")


def test_endpoint_serves_metrics_health_and_readiness() -> None:
    """Scraped over loopback with aiohttp; readiness follows `ready()`; cancelling stops listening."""
    metrics = observed()
    ready = False
    port = free_port()
    base = f"http://127.0.0.1:{port}"

    async def main() -> None:
        nonlocal ready
        server = asyncio.create_task(serve(metrics, f"127.0.0.1:{port}", ready=lambda: ready))
        async with aiohttp.ClientSession() as session:
            await wait_serving(session, f"{base}/healthz")
            status, content_type, text = await get(session, f"{base}/metrics")
            assert status == 200
            assert content_type == "text/plain; version=0.0.4; charset=utf-8"
            assert {"volcano_queue_weight", "volcano_job_share"} <= set(parse(text)[1])
            names = "name[]=volcano_job_share&name[]=volcano_queue_weight"
            status, _, text = await get(session, f"{base}/metrics?{names}")
            assert (status, set(parse(text)[1])) == (200, {"volcano_queue_weight", "volcano_job_share"})
            assert await get(session, f"{base}/healthz") == (200, "text/plain; charset=utf-8", "ok")
            assert (await get(session, f"{base}/readyz"))[::2] == (503, "not ready")
            ready = True
            assert (await get(session, f"{base}/readyz"))[::2] == (200, "ok")
            server.cancel()
            with pytest.raises(asyncio.CancelledError):
                await server
            with pytest.raises(aiohttp.ClientConnectionError):
                await get(session, f"{base}/healthz")

    asyncio.run(main())


@pytest.mark.parametrize("address", ["8080", "localhost:http", "127.0.0.1:99999"])
def test_a_malformed_listen_address_is_a_config_error(address: str) -> None:
    with pytest.raises(ConfigError, match="--listen-address"):
        asyncio.run(serve(Metrics(), address, ready=lambda: True))


def test_an_address_in_use_is_a_config_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match="cannot listen"):
            asyncio.run(serve(Metrics(), f"127.0.0.1:{port}", ready=lambda: True))
