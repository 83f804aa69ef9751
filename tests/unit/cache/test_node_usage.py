"""The node usage poller: Volcano's two PromQL queries per node, Prometheus' answers read from recorded JSON,
and every failure (an error answer, no data, a matrix, NaN, Prometheus down) leaving 0 and a log line."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, MutableMapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from structlog.testing import capture_logs

from py_volcano.api import MetricsConf, NodeUsage
from py_volcano.cache.node_usage import NodeUsagePoller, QueryError, cpu_query, memory_query, sample_value
from py_volcano.cache.store import NODES, Store
from tests.builders import node
from tests.ports import free_port

ANSWERS = Path(__file__).parent / "prometheus_answers"
STAMP = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def answer(name: str) -> Any:
    return json.loads((ANSWERS / f"{name}.json").read_text())


def test_queries_are_volcanos() -> None:
    """The node's name is the `instance` label; the usage is averaged over 10m at a 30s resolution."""
    assert cpu_query("node-a") == (
        'avg_over_time(clamp_min(100 - (avg by (instance) (rate(node_cpu_seconds_total{mode="idle",'
        'instance="node-a"}[5m])) * 100), 0)[10m:30s])'
    )
    assert memory_query("node-a") == (
        '100*avg_over_time(((1-node_memory_MemAvailable_bytes{instance="node-a"}'
        '/node_memory_MemTotal_bytes{instance="node-a"}))[10m:30s])'
    )
    assert 'instance="a\\"b"' in cpu_query('a"b')


def test_a_vector_gives_its_first_value() -> None:
    assert sample_value(answer("cpu_vector")) == pytest.approx(91.66666666666667)
    assert sample_value(answer("memory_vector")) == 37.5


@pytest.mark.parametrize(
    ("name", "message"),
    [
        pytest.param("empty_vector", "no data", id="empty"),
        pytest.param("bad_data", "status 'error': bad_data invalid parameter", id="error"),
        pytest.param("matrix", "result type 'matrix', expected vector", id="matrix"),
        pytest.param("nan_vector", "sample value 'NaN' is not finite", id="nan"),
    ],
)
def test_an_odd_answer_is_a_query_error(name: str, message: str) -> None:
    with pytest.raises(QueryError, match=message):
        sample_value(answer(name))


@pytest.mark.parametrize("body", [[], {"status": "success"}, {"status": "success", "data": {"resultType": "vector",
                                  "result": [{"value": [1]}]}}, "text"])
def test_a_malformed_answer_is_a_query_error(body: object) -> None:
    with pytest.raises(QueryError):
        sample_value(body)


def store_with(*names: str) -> Store:
    store = Store(scheduler_name="py-volcano")
    for name in names:
        store.apply_event(NODES, "ADDED", {**node(name=name), "metadata": {"name": name, "resourceVersion": "1"}})
    return store


async def serve(answers: Callable[[str], web.Response]) -> tuple[web.AppRunner, str]:
    """A loopback HTTP server answering `/api/v1/query` with `answers(query)`."""

    async def query(request: web.Request) -> web.Response:
        return answers(request.query["query"])

    app = web.Application()
    app.router.add_get("/api/v1/query", query)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner, f"http://127.0.0.1:{port}"


def poll(store: Store, answers: Callable[[str], web.Response] | None) -> list[MutableMapping[str, Any]]:
    """Run one poll against a server giving `answers` (None: nothing listens); return the log lines."""

    async def run() -> None:
        runner = None
        address = f"http://127.0.0.1:{free_port()}"
        if answers is not None:
            runner, address = await serve(answers)
        try:
            conf = MetricsConf(type="prometheus", address=address)
            await NodeUsagePoller(store, lambda: conf, clock=lambda: STAMP).poll(conf)
        finally:
            if runner is not None:
                await runner.cleanup()

    with capture_logs() as logs:
        asyncio.run(run())
    return logs


def test_a_poll_writes_each_nodes_usage_and_touches_the_store() -> None:
    """Each node gets its own CPU and memory answer, stamped with the poll's time; the next cycle is due."""
    recorded = {
        cpu_query("node-a"): answer("cpu_vector"),
        memory_query("node-a"): answer("memory_vector"),
    }

    def answers(query: str) -> web.Response:
        return web.json_response(recorded.get(query, answer("empty_vector")))

    store = store_with("node-a", "node-b")
    generation = store.generation
    logs = poll(store, answers)
    assert store.node_usage == {
        "node-a": NodeUsage(cpu=91.66666666666667, memory=37.5, metrics_time=STAMP),
        "node-b": NodeUsage(cpu=0.0, memory=0.0, metrics_time=STAMP),
    }
    assert store.generation > generation
    (failed,) = [line for line in logs if line["event"] == "node_usage_query_failed"]
    assert failed["log_level"] == "error" and failed["failed"] == 2 and "no data" in failed["first"]
    assert store.snapshot().nodes["node-a"].usage == store.node_usage["node-a"]


def test_prometheus_down_leaves_zero_usage_and_an_error() -> None:
    """Nothing listens: every query fails, each node's usage is 0 (as Volcano's), the poll does not raise."""
    store = store_with("node-a")
    logs = poll(store, None)
    assert store.node_usage == {"node-a": NodeUsage(cpu=0.0, memory=0.0, metrics_time=STAMP)}
    (failed,) = [line for line in logs if line["event"] == "node_usage_query_failed"]
    assert failed["failed"] == 2 and "ClientConnectorError" in failed["first"]


def test_an_http_error_page_is_an_error_not_a_crash() -> None:
    """A proxy's HTML error page instead of JSON is logged with its status."""
    store = store_with("node-a")
    logs = poll(store, lambda query: web.Response(status=502, text="<html>Bad Gateway</html>"))
    assert store.node_usage["node-a"].cpu == 0.0
    (failed,) = [line for line in logs if line["event"] == "node_usage_query_failed"]
    assert "HTTP 502, not JSON" in failed["first"]


def test_the_loop_only_waits_without_a_prometheus_source() -> None:
    """No `metrics` section: nothing is polled and the loop ends when stopped."""

    async def run() -> None:
        stop = asyncio.Event()
        poller = NodeUsagePoller(store_with("node-a"), MetricsConf, clock=lambda: STAMP)
        task = asyncio.create_task(poller.run(stop))
        await asyncio.sleep(0.05)
        stop.set()
        await asyncio.wait_for(task, 1)
        assert poller.store.node_usage == {}

    asyncio.run(run())
