"""Metrics: the exposition matches docs/operations.md, values are exact, and the endpoint serves them."""

from __future__ import annotations

import asyncio
import json
import re
import socket
from pathlib import Path

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from py_volcano.api import JobID, PodGroupPhase, Resource
from py_volcano.errors import ConfigError
from py_volcano.framework import CycleResult, PodGroupStatus, QueueFigures
from py_volcano.metrics import Metrics, serve

from .deploy import operations_doc

GPU = "nvidia.com/gpu"
GIB = 2**30
DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "py-volcano-dashboard.json"

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def group(phase: PodGroupPhase, queue: str, *, shadow: bool = False) -> PodGroupStatus:
    return PodGroupStatus(phase=phase, queue=queue, shadow=shadow)


def known_result() -> CycleResult:
    """Two queues: `a` with every figure and a GPU, `b` overused with no deserved or capability."""
    return CycleResult(
        pipelined={"ns/p": "n1"},
        unschedulable={"ns/u1": "0/1 nodes are available", "ns/u2": "0/1 nodes are available"},
        pod_groups={
            JobID("ns/g1"): group(PodGroupPhase.PENDING, "a"),
            JobID("ns/g2"): group(PodGroupPhase.INQUEUE, "a"),
            JobID("ns/podgroup-u1"): group(PodGroupPhase.INQUEUE, "a", shadow=True),
            JobID("ns/g3"): group(PodGroupPhase.RUNNING, "a"),
            JobID("ns/g4"): group(PodGroupPhase.RUNNING, "a"),
            JobID("ns/g5"): group(PodGroupPhase.COMPLETED, "a"),
            JobID("ns/g6"): group(PodGroupPhase.UNKNOWN, "b"),
            JobID("ns/g7"): group(PodGroupPhase.RUNNING, "missing-queue"),
        },
        queues={
            "a": QueueFigures(
                weight=2,
                allocated=Resource(1500, GIB, {GPU: 1000}),
                request=Resource(4000, 2 * GIB, {GPU: 2000}),
                deserved=Resource(3000, 2 * GIB, {GPU: 2000}),
                capability=Resource(8000, 8 * GIB),
                real_capability=Resource(6000, 4 * GIB, {GPU: 4000}),
                share=0.5,
            ),
            "b": QueueFigures(weight=1, overused=True),
        },
        plugin_durations={("gang", "OnSessionOpen"): 0.0002, ("proportion", "OnSessionOpen"): 0.003,
                          ("proportion", "OnSessionClose"): 0.001},
        action_durations={"allocate": 0.0015, "enqueue": 0.00004},
    )


def samples(metrics: Metrics, prefix: str = "volcano_") -> Samples:
    found: Samples = {}
    for family in text_string_to_metric_families(metrics.render().decode()):
        for sample in family.samples:
            if sample.name.startswith(prefix):
                found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def key(name: str, **labels: str) -> tuple[str, frozenset[tuple[str, str]]]:
    return name, frozenset(labels.items())


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
    """Capability is the real capability; a figure a queue lacks has no series; shadow groups count."""
    metrics = Metrics()
    metrics.observe_cycle(known_result(), 0.25)
    assert samples(metrics, "volcano_queue_") == queue_gauges(
        {
            "allocated_milli_cpu": {"a": 1500, "b": 0},
            "allocated_memory": {"a": GIB, "b": 0},
            f"allocated_scalar_resources:{GPU}": {"a": 1000},
            "request_milli_cpu": {"a": 4000, "b": 0},
            "request_memory": {"a": 2 * GIB, "b": 0},
            f"request_scalar_resources:{GPU}": {"a": 2000},
            "deserved_milli_cpu": {"a": 3000},
            "deserved_memory": {"a": 2 * GIB},
            f"deserved_scalar_resources:{GPU}": {"a": 2000},
            "capability_milli_cpu": {"a": 6000},
            "capability_memory": {"a": 4 * GIB},
            f"capability_scalar_resources:{GPU}": {"a": 4000},
            "weight": {"a": 2, "b": 1},
            "overused": {"a": 0, "b": 1},
            "share": {"a": 0.5, "b": 0},
            "pod_group_pending_count": {"a": 1, "b": 0},
            "pod_group_inqueue_count": {"a": 2, "b": 0},
            "pod_group_running_count": {"a": 2, "b": 0},
            "pod_group_unknown_count": {"a": 0, "b": 1},
        }
    )


def test_series_of_a_queue_that_disappears_go_with_it() -> None:
    metrics = Metrics()
    metrics.observe_cycle(known_result(), 0.25)
    later = CycleResult(queues={"a": QueueFigures(weight=3, allocated=Resource(500, 0))})
    metrics.observe_cycle(later, 0.1)
    assert samples(metrics, "volcano_queue_") == queue_gauges(
        {
            "allocated_milli_cpu": {"a": 500},
            "allocated_memory": {"a": 0},
            "request_milli_cpu": {"a": 0},
            "request_memory": {"a": 0},
            "weight": {"a": 3},
            "overused": {"a": 0},
            "share": {"a": 0},
            "pod_group_pending_count": {"a": 0},
            "pod_group_inqueue_count": {"a": 0},
            "pod_group_running_count": {"a": 0},
            "pod_group_unknown_count": {"a": 0},
        }
    )


def test_cycle_histograms_and_counters_are_exact() -> None:
    metrics = Metrics()
    metrics.observe_cycle(known_result(), 0.25)
    found = samples(metrics)
    cycle = "volcano_e2e_scheduling_latency_milliseconds"
    assert found[key(f"{cycle}_count")] == 1
    assert found[key(f"{cycle}_sum")] == 250
    assert found[key(f"{cycle}_bucket", le="160.0")] == 0
    assert found[key(f"{cycle}_bucket", le="320.0")] == 1
    action = "volcano_action_scheduling_latency_microseconds"
    assert found[key(f"{action}_sum", action="allocate")] == pytest.approx(1500)
    assert found[key(f"{action}_bucket", action="allocate", le="800.0")] == 0
    assert found[key(f"{action}_bucket", action="allocate", le="1600.0")] == 1
    assert found[key(f"{action}_bucket", action="enqueue", le="50.0")] == 1
    plugin = "volcano_plugin_scheduling_latency_microseconds"
    assert found[key(f"{plugin}_sum", plugin="gang", OnSession="OnSessionOpen")] == pytest.approx(200)
    assert found[key(f"{plugin}_count", plugin="proportion", OnSession="OnSessionOpen")] == 1
    assert found[key(f"{plugin}_sum", plugin="proportion", OnSession="OnSessionOpen")] == pytest.approx(3000)
    assert found[key(f"{plugin}_sum", plugin="proportion", OnSession="OnSessionClose")] == pytest.approx(1000)
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
    evictions = {
        r: found[key("volcano_pod_evictions_total", result=r)] for r in ("success", "blocked", "error")
    }
    assert evictions == {"success": 1, "blocked": 2, "error": 1}
    pod = "volcano_pod_e2e_scheduling_latency_seconds"
    assert (found[key(f"{pod}_count")], found[key(f"{pod}_sum")]) == (1, 2.5)
    assert found[key(f"{pod}_bucket", le="2.56")] == 1
    assert found[key(f"{pod}_bucket", le="1.28")] == 0


def test_an_unknown_eviction_result_is_refused() -> None:
    with pytest.raises(ValueError, match="'refused'"):
        Metrics().observe_eviction("refused")


def test_each_metrics_owns_its_registry() -> None:
    first, second = Metrics(), Metrics()
    first.observe_bind(True, 1.0)
    assert samples(second)[key("volcano_pod_binds_total", result="success")] == 0


def test_exposition_is_exactly_the_documented_metrics() -> None:
    """Names, types and label names of docs/operations.md, nothing more (no `_created` series)."""
    metrics = Metrics()
    metrics.observe_cycle(known_result(), 0.25)
    metrics.observe_bind(True, 1.0)
    exposed: dict[str, operations_doc.Metric] = {}
    for family in text_string_to_metric_families(metrics.render().decode()):
        name = f"{family.name}_total" if family.type == "counter" else family.name
        labels = {label for sample in family.samples for label in sample.labels if label != "le"}
        exposed[name] = operations_doc.Metric(name=name, kind=family.type, labels=frozenset(labels))
    assert exposed == operations_doc.metrics()


def dashboard_queries() -> set[str]:
    """The series every panel target and template variable of the Grafana dashboard queries."""
    board = json.loads(DASHBOARD.read_text())
    panels = [p for top in board["panels"] for p in (top, *top.get("panels", []))]
    exprs = [target["expr"] for panel in panels for target in panel.get("targets", [])]
    exprs += [var["definition"] for var in board["templating"]["list"] if var["type"] == "query"]
    return {name for expr in exprs for name in re.findall(r"\bvolcano_[A-Za-z0-9_]+", expr)}


def test_every_metric_the_dashboard_queries_is_exported() -> None:
    queried = dashboard_queries()
    assert len(queried) > 20, "the dashboard queries the queue and latency metrics"
    metrics = Metrics()
    metrics.observe_cycle(known_result(), 0.25)
    exported = {name for name, _ in samples(metrics)}
    assert queried - exported == set()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


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
    metrics = Metrics()
    metrics.observe_cycle(known_result(), 0.25)
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
            families = {f.name for f in text_string_to_metric_families(text)}
            assert {"volcano_queue_weight", "volcano_scheduling_cycles"} <= families
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
