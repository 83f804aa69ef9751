"""Fault probes: etcd SIGKILLed, the kube-apiserver stopped or restarted, the leading scheduler SIGKILLed,
each while a burst of pods is being scheduled by `py-volcano run` processes; then the cluster is audited
(`e2e/fault_audit.py`) and the recovery timed from the schedulers' logs.

Played small with assertions by `e2e/test_faults.py`, big by `python -m bench faults`. Nothing here
imports pytest's failure helpers: a probe that cannot go on raises :class:`FaultError`, and damage is
reported in the :class:`Outcome`, for the caller to assert or print.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from e2e.controlplane import ControlPlane
from e2e.fault_audit import Audit, audit, binds_logged, epoch, refused_binds
from e2e.harness import Rest, Scheduler, pod, pod_group, token

__all__ = [
    "TAKEOVER_S",
    "Burst",
    "FaultError",
    "Load",
    "Outcome",
    "Probe",
    "apiserver_restart",
    "apiserver_stop",
    "etcd_kill",
    "leader_kill",
]

T = TypeVar("T")

#: Seconds a standby waits for a SIGKILLed leader's Lease to expire (py-volcano's lease duration, 15 s),
#: plus its polling.
TAKEOVER_S = 17.0


class FaultError(RuntimeError):
    """A probe could not be played (a step timed out, an object could not be created)."""


def wait(what: str, fn: Callable[[], T | None], timeout: float, interval: float = 0.2) -> T:
    """Poll `fn` until it returns something truthy; FaultError naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise FaultError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


@dataclass(frozen=True, slots=True)
class Load:
    """A burst: `singles` one-pod jobs and `gangs` PodGroups of `gang_size` pods (minMember: all), each pod
    asking `cpu` and `memory`; plus `unfit` pods no node can hold, which must stay pending and must not
    count as pods that fit. With `node_selector` ((label, value) pairs), every pod is kept to the
    probe's nodes (on a cluster other tests share)."""

    singles: int
    gangs: int = 0
    gang_size: int = 8
    cpu: str = "250m"
    memory: str = "100Mi"
    unfit: int = 2
    node_selector: tuple[tuple[str, str], ...] = ()

    @property
    def fitting(self) -> int:
        """Return how many pods must end bound."""
        return self.singles + self.gangs * self.gang_size

    def objects(self, namespace: str, scheduler: str) -> list[dict[str, Any]]:
        """Return the PodGroups, then the pods, gang members and singles interleaved."""
        groups = [pod_group(f"g-{g}", namespace, min_member=self.gang_size) for g in range(self.gangs)]
        members = [
            pod(f"g-{g}-{i}", namespace, scheduler=scheduler, cpu=self.cpu, memory=self.memory, group=f"g-{g}")
            for i in range(self.gang_size)
            for g in range(self.gangs)
        ]
        singles = [
            pod(f"p-{i}", namespace, scheduler=scheduler, cpu=self.cpu, memory=self.memory) for i in range(self.singles)
        ]
        pods = [p for pair in zip(members, singles, strict=False) for p in pair]
        shorter = min(len(members), len(singles))
        pods += members[shorter:] + singles[shorter:]
        pods += [pod(f"huge-{i}", namespace, scheduler=scheduler, cpu="1000") for i in range(self.unfit)]
        if self.node_selector:
            for manifest in pods:
                manifest["spec"]["nodeSelector"] = dict(self.node_selector)
        return groups + pods


class Burst:
    """Create objects from a pool of threads, each POST retried until the API server takes it (201) or
    already has it (409, when an earlier answer was lost), so that a control plane going away delays
    pods but loses none; with `per_s`, the creations are spread at that rate."""

    def __init__(
        self,
        rest: Rest,
        objects: Sequence[dict[str, Any]],
        *,
        per_s: float | None = None,
        workers: int = 8,
        timeout: float = 300.0,
    ) -> None:
        self.rest = rest
        self.objects = list(objects)
        self.per_s = per_s
        self.workers = workers
        self.timeout = timeout
        self.failed: list[str] = []
        self.retries = 0
        self.ended = 0.0  # time.time() when the last object was created
        self._began = 0.0
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="burst", daemon=True)

    def start(self) -> Burst:
        """Begin creating in the background."""
        self._began = time.monotonic()
        self._thread.start()
        return self

    def join(self) -> None:
        """Wait until every object was created; FaultError naming those that could not be."""
        self._thread.join(self.timeout + 60)
        if self._thread.is_alive() or self.failed:
            raise FaultError(f"burst incomplete: {len(self.failed)} objects not created, e.g. {self.failed[:3]}")

    def _run(self) -> None:
        with ThreadPoolExecutor(self.workers) as pool:
            list(pool.map(self._create, range(len(self.objects))))
        self.ended = time.time()

    def _create(self, index: int) -> None:
        obj = self.objects[index]
        if self.per_s:
            time.sleep(max(0.0, self._began + index / self.per_s - time.monotonic()))
        meta = obj["metadata"]
        path = Rest.path(obj["kind"], meta.get("namespace"))
        deadline = time.monotonic() + self.timeout
        last: object = None
        while time.monotonic() < deadline:
            try:
                status, last = self.rest.request("POST", path, obj)
            except Exception as exc:  # the API server is away: connection refused or reset
                status, last = 0, exc
            if status in (201, 409):
                return
            with self._lock:
                self.retries += 1
            time.sleep(0.5)
        self.failed.append(f"{meta['name']}: {last}")


@dataclass(slots=True)
class Outcome:
    """One fault played: when the component went down and when it was started again (the new leader
    elected, for a scheduler), epoch seconds; the seconds from then to the first bind and to the last
    one; the audit, schedulers that died, and per-fault details (`ready_s`: start to health check
    passed; the kube-apiserver serves requests a few seconds before its /readyz passes)."""

    fault: str
    down_at: float
    back_at: float
    first_bind_s: float | None
    all_bound_s: float | None
    audit: Audit
    exited: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def problems(self) -> list[str]:
        """Return what went wrong (empty when nothing did)."""
        return self.audit.problems() + [f"scheduler died: {line}" for line in self.exited]

    def summary(self) -> dict[str, Any]:
        """Return the figures as plain JSON values."""
        return {
            "fault": self.fault,
            "down_s": round(self.back_at - self.down_at, 2),
            "first_bind_after_back_s": _round(self.first_bind_s),
            "all_bound_after_back_s": _round(self.all_bound_s),
            **self.audit.counts(),
            "schedulers_died": len(self.exited),
            **self.details,
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


@dataclass(slots=True)
class Probe:
    """Where a fault is played: the control plane, a namespace of its own, a scheduler name of its own, the
    nodes to audit; every `py-volcano run` started is kept so that its log counts."""

    plane: ControlPlane
    rest: Rest
    namespace: str
    scheduler: str
    nodes: Sequence[str]
    timeout: float = 120.0
    schedulers: list[Scheduler] = field(default_factory=list)

    def start_scheduler(self, *args: str, name: str = "fault") -> Scheduler:
        """Start `py-volcano run` for this probe's scheduler name, logging every bind; wait until synced.

        The PodGroup controller is off (one-pod jobs need no PodGroup object): what is timed is the
        scheduler's recovery, not the controller creating a PodGroup per pod on a loaded machine.
        """
        process = Scheduler(
            self.plane.kubeconfig,
            f"--scheduler-name={self.scheduler}",
            "--log-level=debug",
            "--schedule-period=0.5",
            "--no-podgroup-controller",
            *args,
            name=name,
        )
        self.schedulers.append(process)
        wait(f"{name} cache synced", lambda: _running(process) and process.events("cache_synced"), self.timeout)
        return process

    def first_bind(self, process: Scheduler, since: float = 0.0) -> float:
        """Wait until `process` logs a bind at or after `since` (epoch); return its time."""
        return wait(
            f"a bind by {process.log_path.name}",
            lambda: (
                _running(process)
                and next((epoch(line) for line in process.events("task_bound") if epoch(line) >= since), None)
            ),
            self.timeout,
        )

    def bound(self) -> int:
        """Return how many pods of the namespace have a node."""
        return sum(1 for p in self.objects("Pod", self.namespace) if (p.get("spec") or {}).get("nodeName"))

    def objects(self, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        """LIST `kind`; FaultError on an error answer."""
        status, answer = self.rest.request("GET", Rest.path(kind, namespace))
        if status != 200:
            raise FaultError(f"LIST {kind}: HTTP {status}: {str(answer)[:300]}")
        return list(answer["items"])

    def settle(self, fault: str, load: Load, down_at: float, back_at: float, **details: Any) -> Outcome:
        """Wait (up to the timeout) until every pod that fits is bound, stop the schedulers, audit, time."""
        deadline = time.monotonic() + self.timeout
        while self.bound() < load.fitting and time.monotonic() < deadline:
            time.sleep(0.5)
        exited = [f"{s.log_path.name}: exit {s.proc.returncode}\n{s.tail(10)}" for s in self._gone()]
        for process in self.schedulers:
            if process.proc.poll() is None:
                process.proc.send_signal(signal.SIGTERM)
                try:
                    process.proc.wait(30)
                except subprocess.TimeoutExpired:
                    exited.append(f"{process.log_path.name}: still running 30 s after SIGTERM")
                    process.kill()
        logs = [process.log_path for process in self.schedulers]
        binds = binds_logged(logs)
        names = set(self.nodes)
        result = audit(
            self.objects("Pod"),
            [node for node in self.objects("Node") if node["metadata"]["name"] in names],
            [bind for bind in binds if bind.pod.startswith(f"{self.namespace}/")],
            scheduler=self.scheduler,
            namespace=self.namespace,
            refused=refused_binds(logs),
        )
        after = [bind.at for bind in binds if bind.at >= back_at]
        return Outcome(
            fault=fault,
            down_at=down_at,
            back_at=back_at,
            first_bind_s=after[0] - back_at if after else None,
            all_bound_s=after[-1] - back_at if after else None,
            audit=result,
            exited=exited,
            details=details,
        )

    def _gone(self) -> list[Scheduler]:
        """Schedulers that exited on their own (not those killed by the probe)."""
        return [s for s in self.schedulers if s.proc.poll() is not None and s.proc.returncode != -signal.SIGKILL]


def _created(burst: Burst, back_at: float) -> dict[str, Any]:
    """Return when the burst's last object was created (seconds after `back_at`; the last bind cannot
    come sooner) and how many creations were retried."""
    return {"created_all_after_back_s": round(burst.ended - back_at, 2), "create_retries": burst.retries}


def _running(process: Scheduler) -> bool:
    """Return True while `process` runs; FaultError with its log's end once it exited."""
    if process.proc.poll() is not None:
        raise FaultError(f"{process.log_path.name} exited {process.proc.returncode}:\n{process.tail()}")
    return True


def etcd_kill(probe: Probe, load: Load, *, downtime: float = 3.0) -> Outcome:
    """SIGKILL etcd once the burst's first pod is bound, start it again `downtime` s later on the same data."""
    process = probe.start_scheduler("--no-leader-elect")
    burst = Burst(probe.rest, load.objects(probe.namespace, probe.scheduler)).start()
    probe.first_bind(process)
    down_at = probe.plane.stop_component("etcd", kill=True)
    time.sleep(downtime)
    back_at = time.time()
    ready = probe.plane.start_component("etcd", timeout=probe.timeout) - back_at
    burst.join()
    return probe.settle("etcd SIGKILL", load, down_at, back_at, ready_s=round(ready, 2), **_created(burst, back_at))


def apiserver_stop(probe: Probe, load: Load, *, downtime: float = 20.0) -> Outcome:
    """Stop the kube-apiserver with the whole burst pending, keep it down `downtime` s, start it again.

    The scheduler is frozen (SIGSTOP) while the burst is created and until the API server is gone, so
    that every pod is still pending when it goes; it runs on through the outage.
    """
    process = probe.start_scheduler("--no-leader-elect")
    os.kill(process.proc.pid, signal.SIGSTOP)
    try:
        Burst(probe.rest, load.objects(probe.namespace, probe.scheduler)).start().join()
        down_at = probe.plane.stop_component("kube-apiserver", grace_period=3.0)
    finally:
        os.kill(process.proc.pid, signal.SIGCONT)
    time.sleep(downtime)
    back_at = time.time()
    ready = probe.plane.start_component("kube-apiserver", timeout=probe.timeout) - back_at
    return probe.settle("kube-apiserver stopped", load, down_at, back_at, ready_s=round(ready, 2))


def apiserver_restart(probe: Probe, load: Load) -> Outcome:
    """Restart the kube-apiserver (SIGTERM, SIGKILL after 3 s, start) while the burst is being scheduled."""
    process = probe.start_scheduler("--no-leader-elect")
    burst = Burst(probe.rest, load.objects(probe.namespace, probe.scheduler)).start()
    probe.first_bind(process)
    down_at = probe.plane.stop_component("kube-apiserver", grace_period=3.0)
    back_at = time.time()
    ready = probe.plane.start_component("kube-apiserver", timeout=probe.timeout) - back_at
    burst.join()
    return probe.settle(
        "kube-apiserver restart under load",
        load,
        down_at,
        back_at,
        ready_s=round(ready, 2),
        **_created(burst, back_at),
    )


def leader_kill(probe: Probe, load: Load, *, kills: int = 3) -> Outcome:
    """Two replicas under leader election; SIGKILL the leader `kills` times, each time once it has bound
    a pod, starting a fresh standby in its place. The burst is spread over the takeovers so that every
    new leader has pods to bind. Recovery counts from the last takeover; each kill's takeover (kill to
    `leader_elected`) and first bind are in the details."""
    lease = (f"--leader-elect-namespace={probe.namespace}", f"--leader-elect-lease-name={token('lease')}")
    replicas = [probe.start_scheduler(*lease, name=f"replica-{i}") for i in range(2)]
    leader = wait("a leader", lambda: next((r for r in replicas if r.events("leader_elected")), None), probe.timeout)
    per_s = load.fitting / (kills * (TAKEOVER_S + 2.0) + 10.0)  # outlasts the takeovers, slow first binds too
    burst = Burst(probe.rest, load.objects(probe.namespace, probe.scheduler), per_s=per_s).start()
    rounds = []
    elected_at = epoch(leader.events("leader_elected")[-1])
    down_at = back_at = elected_at
    for k in range(kills):
        probe.first_bind(leader, since=elected_at)
        leader.kill()
        down_at = time.time()
        replicas = [r for r in replicas if r is not leader]
        replicas.append(probe.start_scheduler(*lease, name=f"replica-{k + 2}"))

        def successor(killed: float = down_at, live: list[Scheduler] = replicas) -> tuple[Scheduler, float] | None:
            for replica in live:
                times = [epoch(line) for line in replica.events("leader_elected") if epoch(line) >= killed]
                if times:
                    return replica, times[0]
            return None

        leader, elected_at = wait("a new leader", successor, TAKEOVER_S + probe.timeout)
        first = probe.first_bind(leader, since=elected_at)
        back_at = elected_at
        rounds.append({"takeover_s": round(elected_at - down_at, 2), "first_bind_s": round(first - elected_at, 2)})
    burst.join()
    return probe.settle("leader SIGKILL", load, down_at, back_at, kills=rounds, **_created(burst, back_at))
