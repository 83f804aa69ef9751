"""Prometheus metrics of docs/operations.md, and the plain HTTP endpoint serving them with /healthz and /readyz.

Every scheduler metric Volcano exports, under Volcano's names, types, labels and units (latencies in
milliseconds, memory in bytes, scalar resources in milli units), so Volcano's dashboards work; ours
where Volcano has none (binds, evictions, cycles); prometheus_client's process and Python collectors.

Counters and histograms move as cycles, binds and evictions happen. The queue, job and namespace
gauges are built at scrape time from what the last cycle left: a queue or job that is gone takes its
series with it, as Volcano deletes them when the object goes. Each `Metrics` owns its registry, so
tests get fresh ones.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import cast

import structlog
from aiohttp import web
from prometheus_client import (
    CONTENT_TYPE_PLAIN_0_0_4,
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from py_volcano.api import (
    ClusterInfo,
    CycleResult,
    JobID,
    JobInfo,
    NodeInfo,
    QueueFigures,
    QueueStatus,
    Resource,
    SettledFollower,
    TaskInfo,
)
from py_volcano.errors import ConfigError
from py_volcano.framework import SchedulerConf, SpecState

__all__ = ["BIND_RESULTS", "EVICTION_RESULTS", "SCHEDULE_RESULTS", "Metrics", "serve", "split_address"]

log = structlog.get_logger(__name__)

SCHEDULE_RESULTS = ("scheduled", "unschedulable", "error")
BIND_RESULTS = ("success", "error")
EVICTION_RESULTS = ("success", "blocked", "error")

# Volcano's buckets: cycles 5 ms .. 82 s (15 doublings), jobs from 32 ms, hooks and tasks from 5 ms.
# A Python hook often takes under 5 ms and a pod waits longer at scale, so hooks start at 0.1 ms and
# tasks and jobs double further (to 11 and 9 minutes); quantile queries read any buckets alike.
_CYCLE_MS = tuple(5.0 * 2**i for i in range(15))
_HOOK_MS = tuple(0.1 * 2**i for i in range(21))
_TASK_MS = tuple(5.0 * 2**i for i in range(18))
_JOB_MS = tuple(32.0 * 2**i for i in range(15))

_QUEUE_RESOURCES: tuple[tuple[str, str, Callable[[QueueFigures], Resource | None]], ...] = (
    ("allocated", "allocated to the queue", lambda f: f.allocated),
    ("request", "requested by the queue's jobs", lambda f: f.request),
    ("deserved", "the queue deserves", lambda f: f.deserved),
    ("capacity", "of the queue's capability", lambda f: f.capability),
    ("real_capacity", "of the queue's real capability (what of the cluster it may reach)", lambda f: f.real_capability),
    ("inqueue", "reserved by the queue's admitted jobs that do not run yet", lambda f: f.inqueue),
)
_QUEUE_PHASES: tuple[tuple[str, Callable[[QueueStatus], int]], ...] = (
    ("inqueue", lambda s: s.inqueue),
    ("pending", lambda s: s.pending),
    ("running", lambda s: s.running),
    ("unknown", lambda s: s.unknown),
    ("completed", lambda s: s.completed),
)


class _Shares:
    """Dominant shares (drf's) against one cluster total: the largest used / total over its dimensions."""

    __slots__ = ("cpu", "memory", "scalars")

    def __init__(self, total: Resource) -> None:
        self.cpu, self.memory = total.milli_cpu, total.memory
        self.scalars = [(name, value) for name, value in total.scalars.items() if value > 0]

    @property
    def total(self) -> tuple[object, ...]:
        """The total the shares are taken against, comparable with another's."""
        return self.cpu, self.memory, tuple(self.scalars)

    def of(self, used: Resource) -> float:
        """Return the dominant share of `used`."""
        share = used.milli_cpu / self.cpu if self.cpu > 0 else 0.0
        if self.memory > 0:
            share = max(share, used.memory / self.memory)
        for name, value in self.scalars:
            share = max(share, used.scalars.get(name, 0.0) / value)
        return share


class _JobRecord:
    """What the metrics know of one job: the last cycle's figures and its scheduling times."""

    __slots__ = ("duration_ms", "last", "name", "namespace", "queue", "retries", "share", "start", "unready")

    def __init__(self, name: str, queue: str, namespace: str, start: float) -> None:
        self.name, self.queue, self.namespace = name, queue, namespace
        self.start = start  # unix seconds of the PodGroup's creation
        self.duration_ms: float | None = None  # creation to the last task allocation
        self.last = 0.0  # unix seconds of the last task allocation
        self.retries = 0  # cycles that ended with the job not ready, as Volcano's gang plugin counts
        self.share = 0.0
        self.unready = 0  # tasks short of minAvailable


def _number(value: float) -> str:
    """Return a sample value as the text format writes it."""
    return repr(float(value))


def _escape(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def _family(name: str, kind: str, meaning: str, samples: list[str]) -> str:
    return f"# HELP {name} {meaning}\n# TYPE {name} {kind}\n" + "".join(samples)


#: The per-job families `_render_jobs` writes, with their type and help, in the order written.
_JOB_FAMILIES = {
    "volcano_job_share": ("gauge", "Share for one job"),
    "volcano_unschedule_task_count": ("gauge", "Number of tasks could not be scheduled"),
    "volcano_job_retry_counts": ("counter", "Number of retry counts for one job"),
    "volcano_e2e_job_scheduling_duration": ("gauge", "E2E job scheduling duration"),
    "volcano_e2e_job_scheduling_start_time": ("gauge", "E2E job scheduling start time"),
    "volcano_e2e_job_scheduling_last_time": ("gauge", "E2E job scheduling last time"),
}
_PREEMPTION_ATTEMPTS = "volcano_total_preemption_attempts"


def _render_jobs(jobs: Iterable[_JobRecord], preemption_attempts: int, names: Collection[str] | None = None) -> str:
    """Return the per-job families and the preemption counter as Prometheus text (only those in `names`
    when given: a scrape that asks for other series does not pay a line per job).

    Written here rather than through prometheus_client, whose families cost 20 us a sample (with
    20,000 jobs a scrape took a second). Two of Volcano's counters keep their bare names this way
    (`volcano_job_retry_counts`, `volcano_total_preemption_attempts`): prometheus_client adds `_total`.
    """
    wanted = [name for name in _JOB_FAMILIES if names is None or name in names]
    samples: dict[str, list[str]] = {name: [] for name in _JOB_FAMILIES}
    share, unready, retries, duration, start, last = samples.values()
    for job in jobs if wanted else ():
        name, namespace = _escape(job.name), _escape(job.namespace)
        share.append(f'volcano_job_share{{job_ns="{namespace}",job_id="{name}"}} {_number(job.share)}\n')
        if job.unready:
            unready.append(f'volcano_unschedule_task_count{{job_id="{name}"}} {_number(job.unready)}\n')
        if job.retries:
            retries.append(f'volcano_job_retry_counts{{job_id="{name}"}} {_number(job.retries)}\n')
        labels = f'{{job_name="{name}",queue="{_escape(job.queue)}",job_namespace="{namespace}"}}'
        start.append(f"volcano_e2e_job_scheduling_start_time{labels} {_number(int(job.start))}\n")
        if job.duration_ms is not None:
            duration.append(f"volcano_e2e_job_scheduling_duration{labels} {_number(job.duration_ms)}\n")
            last.append(f"volcano_e2e_job_scheduling_last_time{labels} {_number(int(job.last))}\n")
    text = [_family(name, *_JOB_FAMILIES[name], samples[name]) for name in wanted]
    if names is None or _PREEMPTION_ATTEMPTS in names:
        attempts = [f"{_PREEMPTION_ATTEMPTS} {_number(preemption_attempts)}\n"]
        meaning = "Total preemption attempts in the cluster till now"
        text.append(_family(_PREEMPTION_ATTEMPTS, "counter", meaning, attempts))
    return "".join(text)


@dataclass(slots=True)
class _LastCycle:
    """The queue and namespace figures the last cycle leaves for scrapes."""

    queues: Mapping[str, QueueFigures] = field(default_factory=dict)
    queue_statuses: Mapping[str, QueueStatus] = field(default_factory=dict)
    namespace_shares: dict[str, float] = field(default_factory=dict)
    unready_jobs: int = 0
    preemption_victims: int = 0
    overcommitted_nodes: tuple[str, ...] = ()


class _LastCycleCollector(Collector):
    """The queue and namespace gauges, built at scrape time from the last cycle's figures."""

    def __init__(self) -> None:
        self.cycle = _LastCycle()

    def collect(self) -> Iterator[Metric]:
        """Yield every queue and namespace family; a figure no queue has (no deserved yet) has no series."""
        cycle = self.cycle
        yield from _queue_resources(cycle.queues)
        weight = GaugeMetricFamily("volcano_queue_weight", "Weight for one queue", labels=["queue_name"])
        overused = GaugeMetricFamily("volcano_queue_overused", "If one queue is overused", labels=["queue_name"])
        share = GaugeMetricFamily("volcano_queue_share", "Share for one queue", labels=["queue_name"])
        for queue, figures in cycle.queues.items():
            weight.add_metric([queue], figures.weight)
            overused.add_metric([queue], 1.0 if figures.overused else 0.0)
            share.add_metric([queue], figures.share)
        yield from (weight, overused, share)
        for phase, count in _QUEUE_PHASES:
            family = GaugeMetricFamily(
                f"volcano_queue_pod_group_{phase}_count",
                f"The number of {phase.capitalize()} PodGroup in this queue",
                labels=["queue_name"],
            )
            for queue, status in cycle.queue_statuses.items():
                family.add_metric([queue], count(status))
            yield family
        namespaces = GaugeMetricFamily("volcano_namespace_share", "Share for one namespace", labels=["namespace_name"])
        for namespace, value in sorted(cycle.namespace_shares.items()):
            namespaces.add_metric([namespace], value)
        jobs = GaugeMetricFamily("volcano_unschedule_job_count", "Number of jobs could not be scheduled")
        jobs.add_metric([], cycle.unready_jobs)
        victims = GaugeMetricFamily("volcano_pod_preemption_victims", "Number of selected preemption victims")
        victims.add_metric([], cycle.preemption_victims)
        overcommitted = GaugeMetricFamily(
            "volcano_node_overcommitted", "1 for a node whose pods use more than it allocates", labels=["node"]
        )
        for node in cycle.overcommitted_nodes:
            overcommitted.add_metric([node], 1.0)
        yield from (namespaces, jobs, victims, overcommitted)


def _queue_resources(queues: Mapping[str, QueueFigures]) -> Iterator[Metric]:
    """Yield the milli-CPU, memory and scalar families of every queue figure."""
    for name, meaning, figure in _QUEUE_RESOURCES:
        cpu = GaugeMetricFamily(f"volcano_queue_{name}_milli_cpu", f"CPU {meaning}", labels=["queue_name"])
        memory = GaugeMetricFamily(f"volcano_queue_{name}_memory_bytes", f"Memory {meaning}", labels=["queue_name"])
        scalars = GaugeMetricFamily(
            f"volcano_queue_{name}_scalar_resources",
            f"Scalar resources {meaning} (milli units)",
            labels=["queue_name", "resource"],
        )
        for queue, figures in queues.items():
            resource = figure(figures)
            if resource is None:
                continue
            cpu.add_metric([queue], resource.milli_cpu)
            memory.add_metric([queue], resource.memory)
            for scalar in sorted(resource.scalars):
                scalars.add_metric([queue, scalar], resource.scalars[scalar])
        yield from (cpu, memory, scalars)


class _Exposed(Collector):
    """A registry's metrics without the `_created` series prometheus_client adds (not in the contract),
    only the samples named in `names` when given (a scrape's `name[]`, as prometheus_client serves it)."""

    def __init__(self, registry: CollectorRegistry, names: Collection[str] | None = None) -> None:
        self.registry, self.names = registry, names

    def collect(self) -> Iterator[Metric]:
        """Yield copies of the registry's families, `_created` samples dropped; a family left with no
        sample of `names` is not yielded. Copies: a collector may hand out the same family every time
        (PlatformCollector does)."""
        names = self.names
        for family in self.registry.collect():
            kept = Metric(family.name, family.documentation, family.type, family.unit)
            kept.samples = [
                s for s in family.samples if not s.name.endswith("_created") and (names is None or s.name in names)
            ]
            if names is None or kept.samples:
                yield kept


class Metrics:
    """Every metric of docs/operations.md, in a registry of its own; `clock` gives unix seconds."""

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.registry = registry = CollectorRegistry()
        ProcessCollector(registry=registry)
        PlatformCollector(registry=registry)
        GCCollector(registry=registry)
        self._cycle_latency = Histogram(
            "volcano_e2e_scheduling_latency_milliseconds",
            "E2e scheduling latency in milliseconds (scheduling algorithm + binding)",
            buckets=_CYCLE_MS,
            registry=registry,
        )
        self._job_latency = Histogram(
            "volcano_e2e_job_scheduling_latency_milliseconds",
            "E2e job scheduling latency in milliseconds",
            buckets=_JOB_MS,
            registry=registry,
        )
        self._action_latency = Histogram(
            "volcano_action_scheduling_latency_milliseconds",
            "Action scheduling latency in milliseconds",
            ["action"],
            buckets=_HOOK_MS,
            registry=registry,
        )
        self._plugin_latency = Histogram(
            "volcano_plugin_scheduling_latency_milliseconds",
            "Plugin scheduling latency in milliseconds",
            ["plugin", "OnSession"],
            buckets=_HOOK_MS,
            registry=registry,
        )
        self._task_latency = Histogram(
            "volcano_task_scheduling_latency_milliseconds",
            "Task scheduling latency in milliseconds, from creation to a stage: Assumed (allocated by a cycle) "
            "or Bound",
            ["stage"],
            buckets=_TASK_MS,
            registry=registry,
        )
        attempts = Counter(
            "volcano_schedule_attempts",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be "
            "scheduled, while 'error' means an internal scheduler problem.",
            ["result"],
            registry=registry,
        )
        binds = Counter("volcano_pod_binds", "Bind calls, by the result", ["result"], registry=registry)
        evictions = Counter("volcano_pod_evictions", "Eviction calls, by the result", ["result"], registry=registry)
        self._cycles = Counter("volcano_scheduling_cycles", "Scheduling cycles run", registry=registry)
        self._fast_path = Counter(
            "volcano_fast_path_placements",
            "Pods placed by the fast path between cycles (docs/semantics.md, \"The fast path\")",
            registry=registry,
        )
        # Every result exists from the start, so rate() sees a 0 before the first error.
        self._attempts = {result: attempts.labels(result) for result in SCHEDULE_RESULTS}
        self._binds = {result: binds.labels(result) for result in BIND_RESULTS}
        self._evictions = {result: evictions.labels(result) for result in EVICTION_RESULTS}
        self._assumed, self._bound = (self._task_latency.labels(stage) for stage in ("Assumed", "Bound"))
        self._last_cycle = _LastCycleCollector()
        registry.register(self._last_cycle)
        self._jobs: dict[JobID, _JobRecord] = {}
        self._settled_total: tuple[object, ...] = ()
        self._settled = SettledFollower()  # the settled jobs' changes from cycle to cycle
        self._shares = SpecState()
        """The nodes' total allocatable the jobs' shares are taken against, while the node specs stay."""
        self._preemption_attempts = 0
        self._unsupported = Gauge(
            "volcano_config_unsupported",
            "1 for each action or plugin the loaded configuration names that py-volcano does not have "
            "(skipped; the rest runs)",
            ["kind", "name"],
            registry=registry,
        )

    def observe_cycle(self, result: CycleResult, seconds: float, cluster: ClusterInfo) -> None:
        """Record one cycle: latencies, counts, the job allocations, and its figures for scrapes.

        `cluster` is the snapshot the cycle ran over, as the cycle left it. Unschedulable and
        pipelined tasks count as `unschedulable` attempts; `scheduled` and `error` are counted when
        binds answer (`observe_bind`), as kube-scheduler counts them. Costs about 10 us a job, so
        the runner calls it off the event loop.
        """
        self._cycle_latency.observe(seconds * 1000)
        for action, duration in result.action_durations.items():
            self._action_latency.labels(action).observe(duration * 1000)
        for (plugin, hook), duration in result.plugin_durations.items():
            self._plugin_latency.labels(plugin, hook).observe(duration * 1000)
        self._cycles.inc()
        waiting = len(result.unschedulable) + len(result.pipelined)
        if waiting:
            self._attempts["unschedulable"].inc(waiting)
        self._preemption_attempts += result.preemption_attempts
        nodes = list(cluster.nodes.values())
        shares = self._shares.take(nodes, None, lambda: _Shares(_total_allocatable(nodes)))
        namespaces = self._observe_jobs(result, cluster, shares)
        previous = self._last_cycle.cycle
        self._last_cycle.cycle = _LastCycle(
            queues=result.queues,
            queue_statuses=result.queue_statuses,
            namespace_shares={namespace: shares.of(used) for namespace, used in namespaces.items()},
            unready_jobs=sum(1 for uid in cluster.jobs if self._jobs[uid].unready),  # a settled job is ready
            preemption_victims=(
                previous.preemption_victims if result.preemption_victims is None else result.preemption_victims
            ),
            overcommitted_nodes=tuple(sorted(result.overcommitted_nodes)),
        )

    def _observe_jobs(self, result: CycleResult, cluster: ClusterInfo, shares: _Shares) -> dict[str, Resource]:
        """Update every job's record (a job gone loses its record); return each namespace's allocated.

        A settled job (`ClusterInfo.settled`: every task running, no cycle changes it) keeps its record;
        its share is recomputed as it joins the settled ones (one that settled at sight may have changed
        since its last record) and when the cluster's total changes."""
        now = self.clock()
        jobs = dict(self._jobs)  # a scrape may be reading the last ones
        settled = cluster.settled.entries
        for gone in self._settled.gone(jobs, cluster.jobs, result.settled_update, settled):
            del jobs[gone]
        namespaces: dict[str, Resource] = {}
        backlog = cluster.backlog.entries
        idle = shares.of(Resource())
        for uid, job in cluster.jobs.items():
            record = jobs.get(uid)
            if record is None:
                record = jobs[uid] = _JobRecord(job.name, str(job.queue), job.namespace, start=job.creation)
            if uid in backlog:  # every task pending: nothing allocated, nothing ready
                record.share, record.unready = idle, max(0, job.min_available)
                if record.unready:
                    record.retries += 1
                if job.namespace not in namespaces:
                    namespaces[job.namespace] = Resource()
                continue
            record.share = shares.of(job.allocated)
            record.unready = max(0, job.min_available - job.ready_task_num())
            if record.unready:
                record.retries += 1
            used = namespaces.get(job.namespace)
            if used is None:
                used = namespaces[job.namespace] = Resource()
            used.add(job.allocated)
        joined = self._settled.joined  # one that settled at sight may have changed since its record
        fresh = list(settled) if shares.total != self._settled_total or joined is None else joined
        self._settled_total = shares.total
        for uid in fresh:  # every task is bound or runs: ready
            job = settled[uid].job
            record = jobs.get(uid)
            if record is None:
                record = jobs[uid] = _JobRecord(job.name, str(job.queue), job.namespace, start=job.creation)
            record.share, record.unready = shares.of(job.allocated), 0
        for namespace, (_, (allocated,)) in cluster.settled.sums("metrics", _namespace, _allocated).items():
            used = namespaces.get(cast(str, namespace))
            if used is None:
                used = namespaces[cast(str, namespace)] = Resource()
            used.add(allocated)
        for task, _node in result.binds:
            if task.creation:
                self._assumed.observe(max(0.0, now - task.creation) * 1000)
            owner = cluster.jobs.get(task.job) if task.job is not None else None
            if owner is not None and owner.creation:  # 0: no creationTimestamp known
                record = jobs[owner.uid]
                record.duration_ms = max(0.0, now - owner.creation) * 1000
                record.last = now
                self._job_latency.observe(record.duration_ms)
        self._jobs = jobs
        return namespaces

    def observe_fast_path(self, binds: Sequence[tuple[TaskInfo, str]]) -> None:
        """Record the pods the fast path placed: counted, and their latency from creation to placement
        (Assumed, and the job's: each is a one-pod job created with its pod)."""
        now = self.clock()
        self._fast_path.inc(len(binds))
        for task, _node in binds:
            if task.creation:
                waited = max(0.0, now - task.creation) * 1000
                self._assumed.observe(waited)
                self._job_latency.observe(waited)

    def observe_bind(self, ok: bool, latency_s: float | None) -> None:
        """Record a bind call; `latency_s` is pod creation to successful bind, None when unknown."""
        self._binds["success" if ok else "error"].inc()
        self._attempts["scheduled" if ok else "error"].inc()
        if ok and latency_s is not None:
            self._bound.observe(latency_s * 1000)

    def observe_conf(self, conf: SchedulerConf) -> None:
        """Record the configuration just loaded: one `volcano_config_unsupported` series per name it skips."""
        self._unsupported.clear()
        for kind, name in conf.unsupported:
            self._unsupported.labels(kind, name).set(1)

    def observe_eviction(self, result: str) -> None:
        """Record an eviction call: `success`, `blocked` (by a PodDisruptionBudget) or `error`."""
        counter = self._evictions.get(result)
        if counter is None:
            raise ValueError(f"eviction result {result!r} is not one of {', '.join(EVICTION_RESULTS)}")
        counter.inc()

    def render(self, names: Collection[str] = ()) -> bytes:
        """Return the Prometheus text exposition of every metric, or of the series in `names` (sample
        names, such as `volcano_e2e_scheduling_latency_milliseconds_count`) when any are given."""
        wanted = frozenset(names) or None
        jobs = _render_jobs(list(self._jobs.values()), self._preemption_attempts, wanted)
        return generate_latest(_Exposed(self.registry, wanted)) + jobs.encode()


def _total_allocatable(nodes: Iterable[NodeInfo]) -> Resource:
    total = Resource()
    for node in nodes:
        total.add(node.allocatable)
    return total


def split_address(listen_address: str, *, flag: str = "--listen-address") -> tuple[str | None, int]:
    """Return (host, port) of `host:port`, `[v6]:port` or `:port` (host None: every interface); ConfigError
    naming `flag` when it is none of these."""
    host, colon, port = listen_address.rpartition(":")
    if not colon or not port.isdigit() or int(port) > 65535:
        raise ConfigError(f"{flag} {listen_address!r}: expected HOST:PORT")
    return host.strip("[]") or None, int(port)


async def serve(metrics: Metrics, listen_address: str, *, ready: Callable[[], bool], with_metrics: bool = True) -> None:
    """Serve /healthz, /readyz and (`with_metrics`) /metrics over plain HTTP on `listen_address` until
    cancelled; without `with_metrics`, /metrics is served by serving.serve_secure only.

    /healthz answers 200 while the event loop runs; /readyz answers 200 when `ready()` is true, else 503.
    /metrics is rendered in a worker thread: with tens of thousands of jobs it takes a while.
    ConfigError when the address is malformed or cannot be listened on.
    """
    host, port = split_address(listen_address)

    async def metrics_page(request: web.Request) -> web.Response:
        body = await asyncio.to_thread(metrics.render, request.query.getall("name[]", ()))
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_PLAIN_0_0_4})

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(_: web.Request) -> web.Response:
        return web.Response(text="ok") if ready() else web.Response(status=503, text="not ready")

    app = web.Application()
    if with_metrics:
        app.router.add_get("/metrics", metrics_page)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    try:
        try:
            await web.TCPSite(runner, host, port).start()
        except OSError as exc:
            raise ConfigError(f"--listen-address {listen_address!r}: cannot listen: {exc.strerror or exc}") from exc
        log.info("metrics_serving", address=listen_address)
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


def _namespace(job: JobInfo) -> str:
    return job.namespace


def _allocated(job: JobInfo) -> tuple[Resource | None, ...]:
    return (job.allocated,)
