"""The node usage poller: asks Prometheus for each node's CPU and memory load, off the cycle's path.

As Volcano's cache does, every `metrics.interval` (30 s by default) it sends, for every node the store
holds, two instant queries to Prometheus' HTTP API (`/api/v1/query`): the CPU and the memory usage in
percent averaged over the last 10 minutes, from node-exporter's series labelled `instance="<node name>"`.
Each node's answer replaces its usage in the store, stamped with the time of the poll, and the store
is touched so the next cycle reads it.

A query that fails, times out or answers something other than a vector with a number leaves that
dimension at 0 and is logged, and the node is still stamped (Volcano does the same: its plugin then
sees 0% usage, not stale usage). A poll never raises: the loop goes on at the next interval.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

import aiohttp
import structlog

from py_volcano.aio import wait_or_stop
from py_volcano.api import METRICS_PERIOD, MetricsConf, NodeSpec, NodeUsage
from py_volcano.cache.store import NODES, Store

__all__ = ["CPU_QUERY", "MEMORY_QUERY", "NodeUsagePoller", "QueryError", "cpu_query", "memory_query", "sample_value"]

log = structlog.get_logger(__name__)

CPU_QUERY = (
    "avg_over_time(clamp_min(100 - (avg by (instance) "
    '(rate(node_cpu_seconds_total{{mode="idle",instance="{node}"}}[5m])) * 100), 0)[{period}:30s])'
)
"""Busy CPU percent: 100 minus the idle rate of the node's CPUs, averaged over the period (Volcano's query)."""
MEMORY_QUERY = (
    '100*avg_over_time(((1-node_memory_MemAvailable_bytes{{instance="{node}"}}'
    '/node_memory_MemTotal_bytes{{instance="{node}"}}))[{period}:30s])'
)
"""Used memory percent: 1 - MemAvailable/MemTotal, averaged over the period (Volcano's query)."""
POLL_TIMEOUT = 60.0
"""Seconds one poll of every node may take (Volcano's context timeout)."""
CONCURRENCY = 8
"""Queries in flight at once (Volcano sends them one after another)."""


class QueryError(Exception):
    """A Prometheus answer that holds no usage value."""


def _label(node: str) -> str:
    return node.replace("\\", "\\\\").replace('"', '\\"')


def cpu_query(node: str) -> str:
    """Return the CPU usage query of one node."""
    return CPU_QUERY.format(node=_label(node), period=METRICS_PERIOD)


def memory_query(node: str) -> str:
    """Return the memory usage query of one node."""
    return MEMORY_QUERY.format(node=_label(node), period=METRICS_PERIOD)


def sample_value(body: object) -> float:
    """Return the value of the first sample of an instant-query answer; QueryError says what is wrong.

    An error status, a result type other than `vector`, an empty vector, or a value that is not a
    finite number is a QueryError (Volcano reads the first row of a vector and skips the rest).
    """
    if not isinstance(body, Mapping):
        raise QueryError(f"answer is not a JSON object: {body!r:.200}")
    if body.get("status") != "success":
        raise QueryError(f"status {body.get('status')!r}: {body.get('errorType', '')} {body.get('error', '')}".strip())
    data = body.get("data")
    if not isinstance(data, Mapping):
        raise QueryError("answer has no data")
    if data.get("resultType") != "vector":
        raise QueryError(f"result type {data.get('resultType')!r}, expected vector")
    result = data.get("result")
    if not isinstance(result, list):
        raise QueryError("vector result is not a list")
    if not result:
        raise QueryError("no data")
    first = result[0]
    value = first.get("value") if isinstance(first, Mapping) else None
    if not isinstance(value, list) or len(value) != 2:
        raise QueryError(f"sample has no [time, value] pair: {first!r:.200}")
    try:
        number = float(value[1])
    except (TypeError, ValueError):
        raise QueryError(f"sample value {value[1]!r} is not a number") from None
    if not math.isfinite(number):
        raise QueryError(f"sample value {value[1]!r} is not finite")
    return number


class NodeUsagePoller:
    """Polls the configured Prometheus every interval and writes each node's usage into the store."""

    __slots__ = ("clock", "conf", "store")

    def __init__(self, store: Store, conf: Callable[[], MetricsConf], *, clock: Callable[[], datetime]) -> None:
        self.store = store
        self.conf = conf
        """Returns the `metrics` section in force (re-read every round, so a reload takes effect)."""
        self.clock = clock
        """The scheduler's wall clock: usage is stamped with it, and cycles compare against it."""

    async def run(self, stop: asyncio.Event) -> None:
        """Poll until `stop` is set; with no `prometheus` source configured, only wait."""
        while not stop.is_set():
            conf = self.conf()
            if conf.collects:
                await self.poll(conf)
            if await wait_or_stop(stop, conf.interval):
                return

    async def poll(self, conf: MetricsConf) -> None:
        """Query every node once and replace the store's usage; every failure is logged, none raised."""
        names = sorted(spec.name for spec in self.store.specs(NODES) if isinstance(spec, NodeSpec))
        if not names:
            return
        failures: list[str] = []
        connector = aiohttp.TCPConnector(ssl=False) if conf.insecure_skip_verify else aiohttp.TCPConnector()
        if conf.insecure_skip_verify:
            log.warning("metrics_tls_verification_disabled", address=conf.address)
        gate = asyncio.Semaphore(CONCURRENCY)
        async with aiohttp.ClientSession(
            connector=connector, timeout=aiohttp.ClientTimeout(total=POLL_TIMEOUT / 2)
        ) as session:

            async def query(expr: str) -> float:
                async with gate:
                    try:
                        return await self._query(session, conf.address, expr)
                    except QueryError as exc:
                        failures.append(f"{expr}: {exc}")
                        return 0.0

            async def node_usage(name: str) -> tuple[float, float]:
                cpu, memory = await asyncio.gather(query(cpu_query(name)), query(memory_query(name)))
                return cpu, memory

            try:
                answers = await asyncio.wait_for(
                    asyncio.gather(*(node_usage(name) for name in names)), timeout=POLL_TIMEOUT
                )
            except TimeoutError:
                log.error("node_usage_poll_timed_out", address=conf.address, seconds=POLL_TIMEOUT, nodes=len(names))
                return
        stamp = self.clock()
        self.store.set_node_usage(
            {
                name: NodeUsage(cpu=cpu, memory=memory, metrics_time=stamp)
                for name, (cpu, memory) in zip(names, answers, strict=True)
            }
        )
        if failures:
            log.error(
                "node_usage_query_failed",
                address=conf.address,
                failed=len(failures),
                queries=2 * len(names),
                first=failures[0],
                usage="0 for the dimensions that failed",
            )
        log.info("node_usage_polled", address=conf.address, nodes=len(names), failed=len(failures))

    @staticmethod
    async def _query(session: aiohttp.ClientSession, address: str, expr: str) -> float:
        try:
            async with session.get(f"{address}/api/v1/query", params={"query": expr}) as answer:
                text = await answer.text()
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise QueryError(f"{type(exc).__name__}: {exc}") from None
        try:
            body: Any = json.loads(text)
        except ValueError:
            raise QueryError(f"HTTP {answer.status}, not JSON: {text[:200]!r}") from None
        return sample_value(body)
