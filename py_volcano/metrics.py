"""Prometheus metrics of docs/operations.md, and the HTTP endpoint serving them with /healthz and /readyz.

Counters and histograms move as cycles, binds and evictions happen. The queue gauges are collected at
scrape time from the last cycle's figures: a cycle costs one reference swap, and a queue that disappears
takes its series with it. Each `Metrics` owns its registry, so tests get fresh ones.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Mapping

import structlog
from aiohttp import web
from prometheus_client import CONTENT_TYPE_PLAIN_0_0_4, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from py_volcano.api import JobID, PodGroupPhase, Resource
from py_volcano.errors import ConfigError
from py_volcano.framework import CycleResult, PodGroupStatus, QueueFigures

__all__ = ["BIND_RESULTS", "EVICTION_RESULTS", "SCHEDULE_RESULTS", "Metrics", "serve"]

log = structlog.get_logger(__name__)

SCHEDULE_RESULTS = ("scheduled", "unschedulable", "error")
BIND_RESULTS = ("success", "error")
EVICTION_RESULTS = ("success", "blocked", "error")

# Volcano's buckets start at 5 ms and 5 µs and double ten times; a Python cycle over thousands of pods
# and its hooks take longer, so these double further: cycles 5 ms .. 82 s, hooks 50 µs .. 13 s, pods
# 10 ms .. 11 min.
_CYCLE_MS = tuple(5.0 * 2**i for i in range(15))
_HOOK_US = tuple(50.0 * 2**i for i in range(19))
_POD_S = tuple(0.01 * 2**i for i in range(17))

_FIGURES = {
    "allocated": "allocated to the queue",
    "request": "requested by the queue's jobs",
    "deserved": "the queue deserves",
    "capability": "capability (real capability)",
}
_PHASES = (PodGroupPhase.PENDING, PodGroupPhase.INQUEUE, PodGroupPhase.RUNNING, PodGroupPhase.UNKNOWN)


def _figure(figures: QueueFigures, name: str) -> Resource | None:
    if name == "capability":
        return figures.real_capability if figures.real_capability is not None else figures.capability
    resource: Resource | None = getattr(figures, name)
    return resource


class _QueueCollector(Collector):
    """The queue gauges, built at scrape time from the last cycle's queue figures and PodGroup phases."""

    def __init__(self) -> None:
        self.queues: Mapping[str, QueueFigures] = {}
        self.pod_groups: Mapping[JobID, PodGroupStatus] = {}

    def collect(self) -> Iterator[Metric]:
        """Yield every queue gauge family; a figure a queue does not have (no deserved yet) has no series."""
        queues, pod_groups = self.queues, self.pod_groups
        for name, meaning in _FIGURES.items():
            cpu = GaugeMetricFamily(
                f"volcano_queue_{name}_milli_cpu", f"CPU {meaning}", labels=["queue_name"]
            )
            memory = GaugeMetricFamily(
                f"volcano_queue_{name}_memory", f"memory {meaning} (bytes)", labels=["queue_name"]
            )
            scalars = GaugeMetricFamily(
                f"volcano_queue_{name}_scalar_resources",
                f"scalar resources {meaning} (milli units, as Volcano)",
                labels=["queue_name", "resource"],
            )
            for queue, figures in queues.items():
                resource = _figure(figures, name)
                if resource is None:
                    continue
                cpu.add_metric([queue], resource.milli_cpu)
                memory.add_metric([queue], resource.memory)
                for scalar in sorted(resource.scalars):
                    scalars.add_metric([queue, scalar], resource.scalars[scalar])
            yield from (cpu, memory, scalars)
        weight = GaugeMetricFamily("volcano_queue_weight", "queue weight", labels=["queue_name"])
        overused = GaugeMetricFamily(
            "volcano_queue_overused", "1 when the queue is overused", labels=["queue_name"]
        )
        share = GaugeMetricFamily("volcano_queue_share", "queue share", labels=["queue_name"])
        for queue, figures in queues.items():
            weight.add_metric([queue], figures.weight)
            overused.add_metric([queue], 1.0 if figures.overused else 0.0)
            share.add_metric([queue], figures.share)
        yield from (weight, overused, share)
        yield from self._phase_counts(queues, pod_groups)

    def _phase_counts(
        self, queues: Mapping[str, QueueFigures], pod_groups: Mapping[JobID, PodGroupStatus]
    ) -> Iterator[Metric]:
        """A pod without a PodGroup counts as its own one-pod group, as Volcano's PodGroup for it would."""
        counts = {queue: dict.fromkeys(_PHASES, 0) for queue in queues}
        for status in pod_groups.values():
            tally = counts.get(status.queue)
            if tally is not None and status.phase in tally:
                tally[status.phase] += 1
        for phase in _PHASES:
            family = GaugeMetricFamily(
                f"volcano_queue_pod_group_{phase.value.lower()}_count",
                f"PodGroups in phase {phase.value}",
                labels=["queue_name"],
            )
            for queue, tally in counts.items():
                family.add_metric([queue], tally[phase])
            yield family


class _WithoutCreated(Collector):
    """A registry's metrics without the `_created` series prometheus_client adds (not in the contract)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry

    def collect(self) -> Iterator[Metric]:
        """Yield the registry's families, `_created` samples dropped."""
        for family in self.registry.collect():
            family.samples = [s for s in family.samples if not s.name.endswith("_created")]
            yield family


class Metrics:
    """Every metric of docs/operations.md, in a registry of its own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        registry = self.registry
        self._cycle_latency = Histogram(
            "volcano_e2e_scheduling_latency_milliseconds",
            "duration of one scheduling cycle",
            buckets=_CYCLE_MS,
            registry=registry,
        )
        self._action_latency = Histogram(
            "volcano_action_scheduling_latency_microseconds",
            "duration of one action",
            ["action"],
            buckets=_HOOK_US,
            registry=registry,
        )
        self._plugin_latency = Histogram(
            "volcano_plugin_scheduling_latency_microseconds",
            "duration of a plugin's session hooks",
            ["plugin", "OnSession"],
            buckets=_HOOK_US,
            registry=registry,
        )
        self._pod_latency = Histogram(
            "volcano_pod_e2e_scheduling_latency_seconds",
            "pod creation to successful bind",
            buckets=_POD_S,
            registry=registry,
        )
        attempts = Counter(
            "volcano_schedule_attempts", "task placement attempts", ["result"], registry=registry
        )
        binds = Counter("volcano_pod_binds", "bind calls", ["result"], registry=registry)
        evictions = Counter("volcano_pod_evictions", "eviction calls", ["result"], registry=registry)
        self._cycles = Counter("volcano_scheduling_cycles", "cycles run", registry=registry)
        # Every result exists from the start, so rate() sees a 0 before the first error.
        self._attempts = {result: attempts.labels(result) for result in SCHEDULE_RESULTS}
        self._binds = {result: binds.labels(result) for result in BIND_RESULTS}
        self._evictions = {result: evictions.labels(result) for result in EVICTION_RESULTS}
        self._queues = _QueueCollector()
        registry.register(self._queues)
        self._exposed = _WithoutCreated(registry)

    def observe_cycle(self, result: CycleResult, seconds: float) -> None:
        """Record one cycle: latencies, the cycle count, unplaced tasks, and its queue figures for scrapes.

        Unschedulable and pipelined tasks count as `unschedulable` attempts; `scheduled` and `error` are
        counted when binds answer (`observe_bind`), as kube-scheduler counts them.
        """
        self._cycle_latency.observe(seconds * 1000)
        for action, duration in result.action_durations.items():
            self._action_latency.labels(action).observe(duration * 1e6)
        for (plugin, hook), duration in result.plugin_durations.items():
            self._plugin_latency.labels(plugin, hook).observe(duration * 1e6)
        self._cycles.inc()
        waiting = len(result.unschedulable) + len(result.pipelined)
        if waiting:
            self._attempts["unschedulable"].inc(waiting)
        self._queues.queues = result.queues
        self._queues.pod_groups = result.pod_groups

    def observe_bind(self, ok: bool, latency_s: float | None) -> None:
        """Record a bind call; `latency_s` is pod creation to successful bind, None when unknown."""
        self._binds["success" if ok else "error"].inc()
        self._attempts["scheduled" if ok else "error"].inc()
        if ok and latency_s is not None:
            self._pod_latency.observe(latency_s)

    def observe_eviction(self, result: str) -> None:
        """Record an eviction call: `success`, `blocked` (by a PodDisruptionBudget) or `error`."""
        counter = self._evictions.get(result)
        if counter is None:
            raise ValueError(f"eviction result {result!r} is not one of {', '.join(EVICTION_RESULTS)}")
        counter.inc()

    def render(self) -> bytes:
        """Return the Prometheus text exposition of every metric."""
        return generate_latest(self._exposed)


def _split_address(listen_address: str) -> tuple[str | None, int]:
    """Return (host, port) of `host:port`, `[v6]:port` or `:port` (host None: every interface)."""
    host, colon, port = listen_address.rpartition(":")
    if not colon or not port.isdigit() or int(port) > 65535:
        raise ConfigError(f"--listen-address {listen_address!r}: expected HOST:PORT")
    return host.strip("[]") or None, int(port)


async def serve(metrics: Metrics, listen_address: str, *, ready: Callable[[], bool]) -> None:
    """Serve /metrics, /healthz and /readyz on `listen_address` until cancelled.

    /healthz answers 200 while the event loop runs; /readyz answers 200 when `ready()` is true, else 503.
    ConfigError when the address is malformed or cannot be listened on.
    """
    host, port = _split_address(listen_address)

    async def metrics_page(_: web.Request) -> web.Response:
        return web.Response(body=metrics.render(), headers={"Content-Type": CONTENT_TYPE_PLAIN_0_0_4})

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(_: web.Request) -> web.Response:
        return web.Response(text="ok") if ready() else web.Response(status=503, text="not ready")

    app = web.Application()
    app.router.add_get("/metrics", metrics_page)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    try:
        try:
            await web.TCPSite(runner, host, port).start()
        except OSError as exc:
            raise ConfigError(
                f"--listen-address {listen_address!r}: cannot listen: {exc.strerror or exc}"
            ) from exc
        log.info("metrics_serving", address=listen_address)
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
