"""`py-volcano run`: the scheduling loop against a real API server, and everything around it.

Data flow: watchers fill the store -> at least every `schedule_period`, and `min_cycle_gap` after the
last cycle began when new pending work arrived, the loop takes a snapshot, runs one
cycle (synchronous, in a worker thread so watches and Lease renewals go on), records the decided
PodGroup phases, hands the result to the status writer and the metrics, and submits binds and
evictions to the binder. The binder holds them in the store's overlays at once and sends them in the
background, so the next cycle never waits for the API server's answers (10,000 binds take seconds).
Between cycles, a pod without a PodGroup that arrives is placed by the fast path in the last cycle's
session, kept open until the next one (`actions.arrivals`). Only the Lease holder runs cycles; a standby
keeps its store warm.

Every background task is spawned by name through `Runner.spawn`, whose guard logs a failure or an
unexpected exit and stops the process with exit code 1. SIGTERM/SIGINT stop scheduling, let the
binds and evictions in flight finish, flush status, release the Lease, stop the watches, exit 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import hashlib
import signal
import time
import warnings
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import structlog

from py_volcano.actions.arrivals import place_arrivals, take_in_binds
from py_volcano.aio import in_thread, wait_any
from py_volcano.api import DEFAULT_QUEUE, HARD_SHARDING, CycleResult, JobID, JobInfo, PodGroupPhase
from py_volcano.cache import (
    INFORMED_KINDS,
    KOPF_KINDS,
    QUEUES,
    AccessReviewer,
    ApiClient,
    ApplyReport,
    Backoff,
    Binder,
    DecisionStream,
    LeaderElector,
    NodeShardPoller,
    NodeUsagePoller,
    PendingShares,
    StatusWriter,
    Store,
    collector_paused,
    inform,
    resync,
    watch,
)
from py_volcano.controller import PodGroupController
from py_volcano.errors import ApiError, ConfigError
from py_volcano.framework import (
    NodesToFind,
    PluginMemory,
    Registry,
    SchedulerConf,
    Session,
    end_session,
    run_cycle,
    shares_backlog,
)
from py_volcano.metrics import Metrics, serve
from py_volcano.registry import default_registry, load_conf
from py_volcano.serving import TlsFiles, serve_secure
from py_volcano.settings import Settings

__all__ = ["ConfFile", "Runner", "run"]

log = structlog.get_logger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

#: Connections beyond `--bind-concurrency` for Lease, status and LIST traffic, so a burst of binds
#: never delays a Lease renewal.
_SPARE_CONNECTIONS = 8
#: Allocations between two young collections (CPython's default is 700). The scheduler keeps hundreds
#: of thousands of objects for long (the store, the jobs and nodes handed from snapshot to snapshot), and
#: with the default every tenth middle collection scanned all of them again: 17% of the process's time in
#: the 10,000-pod burst at 5,000 nodes (docs/performance.md, "The collector's threshold").
_GC_YOUNG_THRESHOLD = 50_000
#: Arriving jobs (and binds elsewhere) the fast path places on the event loop itself; more go to a
#: thread. A turn of a few pods takes well under the interpreter's 5 ms switch interval, less than
#: handing it to a thread and back costs (docs/performance.md, "Binds over lean HTTP/1.1 connections;
#: small fast-path turns on the event loop").
_INLINE_ARRIVALS = 16

EXIT_FAILED = 1
EXIT_INVALID = 2

#: The HTTP endpoints' tasks, stopped last.
_HTTP_SERVERS = ("metrics-server", "secure-metrics-server")

#: Seconds shutdown waits for each step (status flush, watches) before going on.
_SHUTDOWN_STEP_TIMEOUT = 10.0
#: Seconds the events still waiting at shutdown may take, once the status writes are sent.
_SHUTDOWN_EVENTS_GRACE = 2.0


@dataclass(slots=True)
class KeptSession:
    """The last cycle's session, kept open for the fast path until the next cycle (`actions.arrivals`):
    valid while the configuration is `conf` and the store saw no change it cannot see (`outside`)."""

    session: Session
    conf: SchedulerConf
    outside: int


class ConfFile:
    """The scheduler configuration, re-read when its file changes; a broken new file keeps the old one.

    A ConfigMap mount replaces the file by swapping a symlink, so the check is by the target's
    identity and content, not by the path's mtime alone.
    """

    def __init__(self, path: Path | None, registry: Registry) -> None:
        """Load the first configuration; ConfigError when it is unusable (the process must not start)."""
        self.path = path
        self.registry = registry
        self.listener: Callable[[SchedulerConf], None] | None = None
        """Called with every configuration loaded from now on (the runner's metrics)."""
        self._stamp: tuple[int, int, int] | None = None
        self._digest = ""
        try:
            text = path.read_text() if path is not None else None
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read: {exc.strerror}") from exc
        self.conf = self._load(text)
        if text is not None:
            self._digest = hashlib.sha256(text.encode()).hexdigest()
            self._stamp = self._stat()

    def _load(self, text: str | None) -> SchedulerConf:
        """Parse `text`; log its warnings, and each action or plugin it names that py-volcano lacks as an
        error (they are skipped and the rest runs, at every load and reload)."""
        source = str(self.path) if self.path is not None else "default scheduler conf"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            conf = load_conf(text, source=source, registry=self.registry)
        for warning in caught:
            log.warning("scheduler_conf_warning", file=source, reason=str(warning.message))
        for kind, name in conf.unsupported:
            log.error("scheduler_conf_unsupported", file=source, kind=kind, name=name, skipped=True)
        if self.listener is not None:
            self.listener(conf)
        return conf

    def _stat(self) -> tuple[int, int, int] | None:
        assert self.path is not None
        try:
            stat = self.path.stat()
        except OSError:
            return None
        return (stat.st_ino, stat.st_mtime_ns, stat.st_size)

    def current(self) -> SchedulerConf:
        """Return the configuration to use now, reloading it first when the file changed."""
        if self.path is None:
            return self.conf
        stamp = self._stat()
        if stamp == self._stamp:
            return self.conf
        self._stamp = stamp
        try:
            text = self.path.read_text()
        except OSError as exc:
            log.error("scheduler_conf_unreadable", file=str(self.path), reason=str(exc))
            return self.conf
        digest = hashlib.sha256(text.encode()).hexdigest()
        if digest == self._digest:
            return self.conf
        self._digest = digest
        try:
            self.conf = self._load(text)
        except ConfigError as exc:
            log.error("scheduler_conf_invalid", file=str(self.path), reason=str(exc), kept="previous")
            return self.conf
        log.info("scheduler_conf_reloaded", file=str(self.path), actions=list(self.conf.actions))
        return self.conf


class Runner:
    """One `py-volcano run` process: its tasks, its loop and its shutdown."""

    def __init__(self, settings: Settings, client: ApiClient, conf: ConfFile, *, registry: Registry) -> None:
        self.settings = settings
        self.client = client
        self.conf = conf
        self.registry = registry
        self.store = Store(scheduler_name=settings.cycle.scheduler_name)
        self.metrics = Metrics()
        self.metrics.observe_conf(conf.conf)
        conf.listener = self.metrics.observe_conf
        self.status = StatusWriter(
            client, scheduler_name=settings.cycle.scheduler_name, waiting_version=self.store.waiting_pod_version
        )
        self.leader = LeaderElector(client, settings.leader) if settings.leader.enabled else None
        self.controller: PodGroupController | None = None
        if settings.controller.enabled:
            self.controller = PodGroupController(
                client, self.store, scheduler_name=settings.cycle.scheduler_name, is_leader=self.is_leader
            )
            self.store.grouping = self.controller
        self.binder = Binder(
            client,
            self.store,
            concurrency=settings.binding.concurrency,
            is_leader=self.is_leader,
            on_bind=self.metrics.observe_bind,
            on_eviction=self.metrics.observe_eviction,
            after_bind=self.status.record_bind,
            after_eviction=self.status.record_eviction,
        )
        self.stop = asyncio.Event()
        self.watch_stop = asyncio.Event()
        self.leader_stop = asyncio.Event()
        self.failed: list[str] = []
        self.exit_code = 0
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.cycles_run = 0
        self.in_flight: set[asyncio.Task[ApplyReport]] = set()
        self._last_input: tuple[int, int] | None = None
        self._queue_missing_logged = False
        backoff = settings.backoff
        self.backoff = Backoff(
            initial=backoff.initial, maximum=backoff.maximum, flush_after=backoff.flush_after, clock=time.monotonic
        )
        self._backoff_conf = 0
        self._started = time.monotonic()
        self.memory = PluginMemory(self.wall_clock())
        self.node_usage = NodeUsagePoller(self.store, lambda: self.conf.conf.metrics, clock=self.wall_clock)
        shard = settings.shard
        self.shard_poller = (
            NodeShardPoller(client, self.store, name=shard.name, period=shard.period)
            if shard.mode == HARD_SHARDING
            else None
        )
        self.pending_shares = (
            PendingShares(shard.name, takeover=shard.takeover, clock=time.monotonic)
            if shard.mode == HARD_SHARDING
            else None
        )
        self._reads_clock = False
        #: The last cycle's session, open for the fast path (None: none kept, or it no longer holds).
        self.kept: KeptSession | None = None

    def wall_clock(self) -> datetime:
        """Return the cycle's wall-clock time: the real clock, or `--clock-start` plus the time run since."""
        start = self.settings.cycle.clock_start
        if start is None:
            return datetime.now().astimezone()
        return start + timedelta(seconds=time.monotonic() - self._started)

    def is_leader(self) -> bool:
        """Return whether this instance may bind now (always, without leader election)."""
        return self.leader is None or self.leader.is_leader()

    def ready(self) -> bool:
        """Return whether every kind's first listing is in (leader and standby alike)."""
        return self.store.is_synced

    # Tasks ----------------------------------------------------------------------------------------

    def spawn(self, name: str, coro: Coroutine[Any, Any, None], *, finishes: bool = False) -> asyncio.Task[None]:
        """Start a named background task whose failure or unexpected exit is logged and stops the process."""

        async def guard() -> None:
            try:
                await coro
            except asyncio.CancelledError:
                if not self.stop.is_set():
                    log.error("task_cancelled", task=name)
                raise
            except ConfigError as exc:
                log.error("task_failed", task=name, reason=str(exc))
                self._fail(name, code=EXIT_INVALID)
                return
            except Exception as exc:
                log.exception("task_failed", task=name, reason=f"{type(exc).__name__}: {exc}")
                self._fail(name)
                return
            if not finishes and not self.stop.is_set():
                log.error("task_exited", task=name)
                self._fail(name)

        task = asyncio.create_task(guard(), name=name)
        self.tasks[name] = task
        return task

    def _fail(self, name: str, *, code: int = EXIT_FAILED) -> None:
        self.failed.append(name)
        self.exit_code = max(self.exit_code, code)
        self.stop.set()

    def on_signal(self, sig: signal.Signals) -> None:
        """Begin a clean shutdown."""
        if not self.stop.is_set():
            log.info("shutdown_requested", signal=sig.name)
        self.stop.set()

    # Main -----------------------------------------------------------------------------------------

    async def run(self) -> int:
        """Run until stopped or `cycles` are done; return the exit code: 0 clean, 1 a task failed, 2 a
        task found the configuration unusable (the metrics address cannot be listened on)."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.on_signal, sig)
        log.info(
            "scheduler_starting",
            server=self.client.server,
            scheduler_name=self.settings.cycle.scheduler_name,
            leader_election=self.leader is not None,
            sharding=self.settings.shard.mode,
        )
        if self.leader is not None:
            self.spawn("leader-election", self.leader.run(self.leader_stop))
        self.spawn("status-writer", self.status.run())
        self._serve_http()
        self.spawn("scheduling-loop", self.loop(), finishes=True)
        self.spawn("node-usage", self.node_usage.run(self.watch_stop))
        if self.shard_poller is not None:
            self.spawn("node-shard", self.shard_poller.run(self.watch_stop))
        if self.controller is not None:
            self.spawn("podgroup-controller", self.controller.run(self.stop))
        watching = self.settings.watching
        for kind in INFORMED_KINDS:
            self.spawn(
                f"inform-{kind.plural}", inform(self.client, self.store, kind, settings=watching, stop=self.watch_stop)
            )
        for kind in KOPF_KINDS:
            self.spawn(
                f"resync-{kind.plural}", resync(self.client, self.store, kind, settings=watching, stop=self.watch_stop)
            )
        self.spawn(
            "watch",
            watch(
                self.store,
                self.client.credentials,
                settings=self.settings.watching,
                stop=self.watch_stop,
                on_signal=self.on_signal,
                extensions=(self.controller.register,) if self.controller is not None else (),
            ),
        )
        await self.stop.wait()
        await self.shutdown()
        if self.failed:
            log.error("scheduler_failed", tasks=self.failed, exit_code=self.exit_code)
            return self.exit_code
        log.info("scheduler_stopped", cycles=self.cycles_run)
        return 0

    async def shutdown(self) -> None:
        """Finish the binds and evictions in flight, flush status, release the Lease, stop the watches."""
        loop_task = self.tasks.get("scheduling-loop")
        if loop_task is not None:
            await asyncio.wait({loop_task})
        if self.in_flight:
            await asyncio.wait(set(self.in_flight))
        await self._flush_status()
        self.leader_stop.set()
        if self.leader is not None:
            await self.leader.release()
        self.watch_stop.set()
        self.tasks["status-writer"].cancel()
        await self._wait_tasks(name for name in self.tasks if name not in _HTTP_SERVERS)
        # /metrics and /healthz go last: they answer for as long as the process does.
        servers = [name for name in _HTTP_SERVERS if name in self.tasks]
        for name in servers:
            self.tasks[name].cancel()
        await self._wait_tasks(servers)

    async def _flush_status(self) -> None:
        """Send the status writes queued (an error when they take over `_SHUTDOWN_STEP_TIMEOUT`), then the
        events for at most `_SHUTDOWN_EVENTS_GRACE` seconds: the rest are dropped with a warning, as
        client-go's recorder drops what its broadcaster still holds when it shuts down."""
        status = self.status
        status.hold_events()
        try:
            await asyncio.wait_for(status.flush(), timeout=_SHUTDOWN_STEP_TIMEOUT)
        except TimeoutError:
            log.error("status_flush_timeout", seconds=_SHUTDOWN_STEP_TIMEOUT)
        status.hold_events(False)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(status.flush(), timeout=_SHUTDOWN_EVENTS_GRACE)
        if status.events_waiting:
            log.warning("events_dropped", count=status.events_waiting, reason="shutting down")

    def _serve_http(self) -> None:
        """Spawn the plain endpoint and, with --secure-listen-address, the secure /metrics one."""
        settings = self.settings.metrics
        secure = settings.secure_listen_address
        self.spawn(
            "metrics-server",
            serve(self.metrics, settings.listen_address, ready=self.ready, with_metrics=secure is None),
        )
        if secure is not None:
            files = None
            if settings.tls_cert_file is not None and settings.tls_key_file is not None:
                files = TlsFiles(settings.tls_cert_file, settings.tls_key_file)
            reviewer = AccessReviewer(self.client)
            self.spawn("secure-metrics-server", serve_secure(self.metrics, secure, reviewer=reviewer, files=files))

    async def _wait_tasks(self, names: Iterable[str]) -> None:
        pending = [self.tasks[name] for name in names if not self.tasks[name].done()]
        if not pending:
            return
        _, stuck = await asyncio.wait(pending, timeout=_SHUTDOWN_STEP_TIMEOUT)
        for task in stuck:
            log.error("task_stuck_at_shutdown", task=task.get_name())
            task.cancel()

    # The loop -------------------------------------------------------------------------------------

    async def wait_synced(self) -> bool:
        """Wait until every kind has been listed once; False when stopped first."""
        while not self.store.is_synced:
            self.store.changed.clear()
            if await self._wait_changed(self.settings.watching.list_retry):
                return False
        log.info("cache_synced", objects=self.store.counts())
        gc.freeze()  # what the first listing brought lives long: keep it out of every collection
        return True

    async def _wait_changed(self, seconds: float) -> bool:
        """Wait for a store change, `seconds` or a stop; return whether stopped."""
        await wait_any(self.store.changed, self.stop, timeout=seconds)
        return self.stop.is_set()

    async def loop(self) -> None:
        """Run cycles every `schedule_period` while leading, until stopped or `cycles` are done.

        A cycle is skipped when nothing it reads changed since the last one began (the store's
        generation, the configuration) and no status write failed: it would decide exactly what the
        last one did, which is applied or in flight. An idle cluster of 50,000 pods then costs no CPU
        instead of a 2 s cycle every period. Bounded runs (`cycles`) never skip.

        New pending work (the store's `work_arrived`: an unbound pod of ours, a changed PodGroup) starts
        the next cycle `min_cycle_gap` after the last one began instead of a period after, as
        kube-scheduler takes a pod up as soon as it is queued; a burst then runs cycles back to back.

        A bounded run ends a whole period after its last cycle ended (its binds observed), so /metrics
        shows the last cycle for one period before the process stops, however long the cycle took. Bounded runs
        always wait the whole period (scenario replays count on one cycle per period). With a metrics
        source, node usage is polled once between the first listing and the first cycle, so the first
        cycle reads it (the poller's own first round may come before the nodes are listed).
        """
        if not await self.wait_synced():
            return
        period, limit = self.settings.cycle.schedule_period, self.settings.cycle.cycles
        metrics = self.conf.current().metrics
        if metrics.collects:
            await self.node_usage.poll(metrics)
        gap = period if limit is not None else self.settings.cycle.min_cycle_gap
        while not self.stop.is_set() and (limit is None or self.cycles_run < limit):
            started = time.monotonic()
            self.store.clear_work()
            if self.is_leader() and (limit is not None or self._cycle_due()):
                await self.ensure_default_queue()
                outcome = await self.guarded_cycle(self.cycles_run)
                self.cycles_run += 1
                if limit is not None and outcome is not None:
                    await self.wait_observed(*outcome)
                if limit is not None and self.cycles_run >= limit:
                    started = time.monotonic()  # the last cycle stays on /metrics a whole period, however long it took
            if await self._wait_next(started + gap, started + period):
                break
        if limit is not None and self.cycles_run >= limit:
            log.info("cycles_done", cycles=self.cycles_run)
            self.stop.set()

    async def _wait_next(self, earliest: float, latest: float) -> bool:
        """Wait until `earliest` (monotonic), then until new work arrives or `latest`; return whether stopped.

        Meanwhile each pod that arrives goes to the fast path (`_place_arrivals`): work it places whole
        starts no cycle."""
        store = self.store
        while not self.stop.is_set():
            now = time.monotonic()
            if store.pods_arrived.is_set() and now < latest:
                store.pods_arrived.clear()
                await self._place_arrivals()
                continue  # pods that arrived meanwhile go first
            working = store.work_arrived.is_set()
            remaining = (earliest if working else latest) - now
            if remaining <= 0:
                break
            events = (store.pods_arrived, self.stop) if working else (store.pods_arrived, store.work_arrived, self.stop)
            await wait_any(*events, timeout=remaining)
        return self.stop.is_set()

    async def _place_arrivals(self) -> None:
        """Place the pods that arrived since the last snapshot in the kept session (`actions.arrivals`) and
        send their binds; they are new work for the next cycle only when the fast path leaves some. Pods
        another shard instance bound meanwhile are counted in the session first, and arrivals another
        instance owns are counted and left to it. A kept session that no longer holds (a change it cannot
        see, another configuration, an arrival or a bind elsewhere only a cycle takes, the Lease lost) is
        ended instead, and the arrivals wait for the cycle."""
        kept = self.kept
        if kept is None:
            self.store.drop_arrivals()
            return
        jobs, others = self.store.take_arrivals()
        bound, strangers = self.store.take_bound_elsewhere()
        if others or strangers or kept.outside != self.store.outside_changes or kept.conf is not self.conf.current():
            reason = "a change the session cannot see"
            if others or strangers:
                reason = "arrivals only a cycle takes" if others else "a bind elsewhere only a cycle takes"
            self._end_kept(reason)
            return
        if not jobs and not bound:
            return
        if not self.is_leader():
            self._end_kept("not leading")
            return
        if not self.store.group_work:
            self.store.work_arrived.clear()  # these arrivals are the fast path's now; what it leaves is not
        began, session = time.perf_counter(), kept.session
        stream = DecisionStream(self.binder, asyncio.get_running_loop())
        session.on_binds, placed = stream.put, len(session.binds)
        try:
            with collector_paused():
                leave = self._other_shards_arrivals(jobs)
                if len(jobs) + len(bound) <= _INLINE_ARRIVALS:
                    left = _fast_path_turn(session, bound, jobs, leave)
                else:
                    left = await asyncio.to_thread(_fast_path_turn, session, bound, jobs, leave)
        except Exception as exc:  # as a failed cycle: logged, the arrivals left to the next cycle
            log.exception("fast_path_failed", reason=f"{type(exc).__name__}: {exc}")
            left = jobs
            self._end_kept()
        finally:  # what committed before a failure is sent too
            sending = stream.close(())
            self.in_flight.add(sending)
            sending.add_done_callback(self.in_flight.discard)
        if left is None:
            self._end_kept("a bind elsewhere the session cannot take in")
            left = jobs
        self.metrics.observe_fast_path(session.binds[placed:])
        if left:
            self.store.work_arrived.set()
        seconds = time.perf_counter() - began
        log.debug("fast_path", jobs=len(jobs), left=len(left), duration_ms=round(seconds * 1000, 2))

    def _end_kept(self, reason: str = "") -> None:
        """Close the kept session, if any (before the next snapshot: it shares the store's built nodes);
        `reason` is logged when the fast path gives it up before the next cycle."""
        if self.kept is not None:
            end_session(self.kept.session)
            self.kept = None
            if reason:
                log.debug("fast_path_ended", reason=reason)

    def _cycle_due(self) -> bool:
        """Return whether anything a cycle reads changed since the last cycle's snapshot, a status write
        failed (only a cycle's submit writes it again), the last cycle decided by the time, or a job it
        left out (backed off, or left to another shard instance) may be tried now."""
        return (
            self.status.unwritten
            or self._reads_clock
            or self._last_input != (self.store.generation, id(self.conf.current()))
            or self.backoff.due()
            or (self.pending_shares is not None and self.pending_shares.due())
        )

    async def guarded_cycle(self, number: int) -> tuple[CycleResult, asyncio.Task[ApplyReport]] | None:
        """Run one cycle; a cycle that raises is logged and the loop goes on (None)."""
        try:
            return await self.cycle(number)
        except Exception as exc:  # one cycle never kills the loop (a plugin bug, an unforeseen object)
            log.exception("cycle_failed", cycle=number, reason=f"{type(exc).__name__}: {exc}")
            return None

    async def cycle(self, number: int) -> tuple[CycleResult, asyncio.Task[ApplyReport]]:
        """Snapshot, run one cycle, record its decisions and submit them; return the result and the
        task that sends them."""
        conf = self.conf.current()
        self._last_input = (self.store.generation, id(conf))
        backed_off, others = self._backed_off(conf), self._other_shards_jobs()
        skip = backed_off | others
        self._end_kept()
        keep = functools.partial(self._keep, outside=self.store.outside_changes) if self._fast_path() else None
        with collector_paused():
            sharing = shares_backlog(conf)  # docs/semantics.md, "Backoff of unschedulable jobs", "Settled jobs"
            with self.store.held():  # the loop goes on meanwhile: probes answered, binds sent
                snapshot, snapshot_cpu = await in_thread(
                    _thread_cpu,
                    self.store.snapshot,
                    backlog=skip if sharing else frozenset(),
                    token=conf,
                    settle=sharing,
                )
            settled, nodes = len(snapshot.settled), len(snapshot.nodes)
            jobs = len(snapshot.jobs) + settled  # settled jobs are in the snapshot, out of the session
            began = time.perf_counter()
            stream = DecisionStream(self.binder, asyncio.get_running_loop())  # binds leave as statements commit
            try:
                result, cycle_cpu = await asyncio.to_thread(
                    _thread_cpu,
                    run_cycle,
                    snapshot,
                    conf,
                    self.registry,
                    cycle=number,
                    now=self.wall_clock(),
                    memory=self.memory,
                    skip=skip,
                    on_binds=stream.put,
                    nodes_to_find=NodesToFind(*self.settings.cycle.nodes_to_find),
                    keep=keep,
                )
            except BaseException:  # the binds committed before the failure are sent: see them through
                leftover = stream.close(())
                self.in_flight.add(leftover)
                leftover.add_done_callback(self.in_flight.discard)
                raise
            kept = self.kept is not None  # the fast path may end it before the line below is logged
            self.backoff.record(result.unschedulable_jobs, result.pod_groups.keys())
            self._reads_clock = result.reads_clock
            seconds = time.perf_counter() - began
            self.store.record_phases(_phases(result))
            sending = stream.close(result.evictions)  # the rest, sent while the metrics are taken
            self.in_flight.add(sending)
            sending.add_done_callback(lambda task: self._applied(number, task))
            await asyncio.to_thread(self.metrics.observe_cycle, result, seconds, snapshot)
            if self.is_leader():  # the Lease may have gone while the cycle ran: then a standby writes nothing
                self.status.submit(result)
            del snapshot  # freed here, by reference counting, before the collector resumes
        log.info(
            "cycle_done",
            cycle=number,
            jobs=jobs,
            settled=settled,
            nodes=nodes,
            binds=len(result.binds),
            evictions=len(result.evictions),
            pipelined=len(result.pipelined),
            backed_off=len(backed_off),
            other_shards=len(others),
            kept=kept,
            duration_ms=round(seconds * 1000, 2),
            cycle_cpu_ms=round(cycle_cpu * 1000, 2),
            snapshot_cpu_ms=round(snapshot_cpu * 1000, 2),
        )
        return result, sending

    def _fast_path(self) -> bool:
        """Whether a cycle keeps its session for the fast path: on, unbounded, leading."""
        return self.settings.cycle.fast_path and self.settings.cycle.cycles is None and self.is_leader()

    def _keep(self, session: Session, *, outside: int) -> None:
        """Keep the cycle's open session (`run_cycle`'s `keep`), valid while the store's count of changes
        it cannot see stays `outside` (its value when the snapshot was taken)."""
        self.kept = KeptSession(session, session.conf, outside)

    def _other_shards_jobs(self) -> frozenset[JobID]:
        """Return the pending jobs another shard instance places for now (none without hard sharding)."""
        if self.pending_shares is None:
            return frozenset()
        return self.pending_shares.others(self.store.pending_jobs(), self.store.shard_peers)

    def _other_shards_arrivals(self, jobs: Iterable[JobInfo]) -> frozenset[JobID]:
        """Return the arrivals another shard instance owns (none without hard sharding), their takeover
        clocks started: the fast path counts them and leaves them to it; a cycle takes them over if they
        wait too long."""
        shares = self.pending_shares
        if shares is None:
            return frozenset()
        peers = self.store.shard_peers
        others = frozenset(job.uid for job in jobs if not shares.mine(job.uid, peers))
        shares.note(others)
        return others

    def _backed_off(self, conf: SchedulerConf) -> frozenset[JobID]:
        """Wake the backed-off jobs what changed since the last cycle could help; return those still out."""
        changes = self.store.take_changes()
        if id(conf) != self._backoff_conf:
            self._backoff_conf = id(conf)
            self.backoff.wake_all()
        self.backoff.wake(changes, preempting=bool({"preempt", "reclaim"} & set(conf.actions)))
        return self.backoff.skipped()

    def _applied(self, number: int, task: asyncio.Task[ApplyReport]) -> None:
        """Log what became of cycle `number`'s decisions once every call is answered."""
        self.in_flight.discard(task)
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            log.error("decisions_failed", cycle=number, reason=f"{type(error).__name__}: {error}")
            return
        report = task.result()
        if not (report.bound or report.bind_errors or report.not_sent or report.evictions):
            return
        evictions = list(report.evictions.values())  # outcomes: success, blocked, error
        log.info(
            "decisions_applied",
            cycle=number,
            binds=len(report.bound),
            bind_errors=len(report.bind_errors),
            not_sent=len(report.not_sent),
            evictions=evictions.count("success"),
            evictions_blocked=evictions.count("blocked"),
        )

    async def wait_observed(self, result: CycleResult, sending: asyncio.Task[ApplyReport]) -> None:
        """Wait until this cycle's calls are answered and the store shows their binds and evictions
        (bounded runs only)."""
        report = await sending
        evicted = [key for key, outcome in report.evictions.items() if outcome == "success"]
        deadline = time.monotonic() + self.settings.cycle.observe_timeout

        def missing() -> list[str]:
            return [k for k in report.bound if not self.store.bind_observed(k)] + [
                k for k in evicted if not self.store.eviction_observed(k)
            ]

        while missing():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                log.warning("decisions_not_observed", tasks=missing(), seconds=self.settings.cycle.observe_timeout)
                return
            self.store.changed.clear()
            if not missing():
                return
            if await self._wait_changed(min(remaining, 1.0)):
                return

    async def ensure_default_queue(self) -> None:
        """Create the `default` Queue (weight 1, reclaimable) when the cluster has none."""
        if self.store.has(QUEUES, DEFAULT_QUEUE):
            return
        body = {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": DEFAULT_QUEUE},
            "spec": {"weight": 1, "reclaimable": True},
        }
        try:
            status, answer = await self.client.request("POST", QUEUES.list_path, body=body)
        except ApiError as exc:
            log.error("default_queue_create_failed", queue=DEFAULT_QUEUE, reason=str(exc))
            return
        if status == 201:
            log.info("default_queue_created", queue=DEFAULT_QUEUE)
        elif status != 409 and not self._queue_missing_logged:
            self._queue_missing_logged = True
            log.error("default_queue_create_failed", queue=DEFAULT_QUEUE, status=status, reason=str(answer)[:300])


def _thread_cpu(fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> tuple[T, float]:
    """Call `fn`; return its result and the CPU seconds this thread spent in it (a cycle's wall time also
    holds the waits for the interpreter lock while the event loop reads watches and sends binds)."""
    began = time.thread_time()
    return fn(*args, **kwargs), time.thread_time() - began


def _fast_path_turn(
    session: Session, bound: list[tuple[JobInfo, str]], jobs: list[JobInfo], leave: frozenset[JobID]
) -> list[JobInfo] | None:
    """Count the binds made elsewhere in the kept session, then place the arrivals (`actions.arrivals`);
    return the jobs left for the next cycle, None when a bind elsewhere could not be counted (nothing
    placed: the session must end)."""
    if not take_in_binds(session, bound):
        return None
    return place_arrivals(session, jobs, leave=leave)


def _phases(result: CycleResult) -> dict[JobID, tuple[PodGroupPhase, bool]]:
    return {job: (status.phase, status.shadow) for job, status in result.pod_groups.items()}


async def run(settings: Settings) -> int:
    """Connect and run until stopped; ConfigError (exit 2) for an unusable configuration or kubeconfig."""
    _, middle, old = gc.get_threshold()
    gc.set_threshold(_GC_YOUNG_THRESHOLD, middle, old)
    registry = default_registry()
    conf = ConfFile(settings.cycle.scheduler_conf, registry)
    client = await ApiClient.connect(
        kubeconfig=settings.kubeconfig,
        concurrency=settings.binding.concurrency + _SPARE_CONNECTIONS,
        timeout=settings.binding.request_timeout,
    )
    try:
        return await Runner(settings, client, conf, registry=registry).run()
    finally:
        await client.close()
