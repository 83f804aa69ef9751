"""StatusWriter: tell the cluster what a cycle decided (PodGroup and Queue status, pod conditions, events).

The scheduling loop calls `submit` once per cycle; it diffs the cycle against what was last written
(`status_diff`), queues only the changes, and returns. `run` drains the queue in the background with
bounded concurrency; a later submit supersedes a queued, unsent write of the same object. Status
writes are merge patches on status subresources; pod conditions are strategic merge patches of
`PodScheduled`, so the pod's other conditions stay; events are events.k8s.io/v1 and best effort.

A failed call never raises into the loop: a 404 means the object is gone, a 409 or 422 is logged with
the object, and any other failure forgets what was queued so the next submit writes it again. After
a restart nothing is known to be written, so every PodGroup and Queue is written once.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from scheduler.api import (
    ClusterInfo,
    JobID,
    JobInfo,
    PodGroupPhase,
    QueueID,
    Resource,
    TaskID,
    TaskInfo,
    TaskStatus,
)
from scheduler.cache import status_diff
from scheduler.cache.client import status_message
from scheduler.errors import ApiError

if TYPE_CHECKING:
    from scheduler.cache.client import ApiClient

__all__ = ["CycleOutcome", "StatusWriter"]

log = structlog.get_logger(__name__)

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
_GROUPS = "/apis/scheduling.volcano.sh/v1beta1"
_PHASES = (
    PodGroupPhase.PENDING,
    PodGroupPhase.INQUEUE,
    PodGroupPhase.RUNNING,
    PodGroupPhase.UNKNOWN,
    PodGroupPhase.COMPLETED,
)
_PHASE_INDEX = {phase: i for i, phase in enumerate(_PHASES)}
#: Answers that retrying the same write cannot change.
_REJECTED = frozenset({409, 422})


class GroupOutcome(Protocol):
    """What the writer reads of a cycle's PodGroup status (framework `PodGroupStatus`)."""

    @property
    def phase(self) -> PodGroupPhase: ...
    @property
    def running(self) -> int: ...
    @property
    def succeeded(self) -> int: ...
    @property
    def failed(self) -> int: ...
    @property
    def unschedulable(self) -> str: ...
    @property
    def queue(self) -> str: ...
    @property
    def shadow(self) -> bool: ...


class QueueOutcome(Protocol):
    """What the writer reads of a cycle's queue figures (framework `QueueFigures`)."""

    @property
    def allocated(self) -> Resource: ...


class CycleOutcome(Protocol):
    """What the writer reads of a cycle (framework `CycleResult`; the cache may not import the framework)."""

    @property
    def binds(self) -> Sequence[tuple[TaskInfo, str]]: ...
    @property
    def pipelined(self) -> Mapping[str, str]: ...
    @property
    def pod_groups(self) -> Mapping[JobID, GroupOutcome]: ...
    @property
    def queues(self) -> Mapping[str, QueueOutcome]: ...
    @property
    def unschedulable(self) -> Mapping[str, str]: ...


@dataclass(slots=True)
class _Write:
    """One request: a PATCH of a status (with how to forget its record on failure) or a POST of an event."""

    kind: str
    name: str
    path: str
    body: dict[str, Any]
    content_type: str
    forget: Callable[[], None] | None = None

    @property
    def method(self) -> str:
        """Return the HTTP method: events are created, everything else is patched."""
        return "POST" if self.kind == "Event" else "PATCH"


@dataclass(slots=True, frozen=True)
class _GroupRecord:
    """A PodGroup's status as last queued, and the object and cycle state it was diffed for."""

    uid: str
    state: status_diff.GroupState
    status: dict[str, Any]


@dataclass(slots=True, frozen=True)
class _PodRecord:
    """The PodScheduled message last queued for a pod, and since when its status is False."""

    uid: TaskID
    job: JobID | None
    message: str
    since: str


def _gang_ready(job: JobInfo) -> bool:
    """Volcano's gang check at session close: ready tasks (incl. this cycle's) reach every minimum."""
    return job.check_task_ready() and job.is_ready()


def _unschedulable_reason(job: JobInfo) -> str:
    if not job.check_task_valid() or job.valid_task_num() < job.min_available:
        return status_diff.NOT_ENOUGH_PODS
    return status_diff.NOT_ENOUGH_RESOURCES


def _pod_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{namespace}/pods/{name}/status"


def _compose(first: dict[str, Any], second: Mapping[str, Any]) -> dict[str, Any]:
    """Return one merge patch with the effect of `first` then `second`."""
    result = dict(first)
    for key, value in second.items():
        old = result.get(key)
        result[key] = _compose(old, value) if isinstance(old, dict) and isinstance(value, Mapping) else value
    return result


class StatusWriter:
    """Write what changed since the last cycle: PodGroup and Queue status, PodScheduled, events."""

    def __init__(
        self,
        client: ApiClient,
        *,
        scheduler_name: str,
        concurrency: int = 16,
        max_events: int = 10_000,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`concurrency` bounds writes in flight; beyond `max_events` queued events the oldest are dropped."""
        self._client = client
        self._controller = scheduler_name
        self._instance = f"{scheduler_name}-{socket.gethostname()}"[:128]
        self._concurrency = concurrency
        self._clock = clock
        self._groups: dict[JobID, _GroupRecord] = {}
        self._queues: dict[str, dict[str, Any]] = {}
        self._pods: dict[str, _PodRecord] = {}
        self._pending: dict[tuple[str, str], _Write] = {}
        self._events: deque[_Write] = deque(maxlen=max_events)
        self._dropped_events = 0
        self._event_seq = 0
        self._wakeup = asyncio.Event()
        self._drain_lock = asyncio.Lock()

    # Submitting (synchronous, on the event loop thread) ------------------------------------------

    def submit(self, result: CycleOutcome, cluster: ClusterInfo) -> None:
        """Queue the writes a cycle calls for; `cluster` is the snapshot the cycle ran over (and changed).

        Call it on the event loop thread; it does not wait for any write.
        """
        now = status_diff.rfc3339(self._clock())
        before = len(self._pending) + len(self._events)
        counts = self._submit_pod_groups(result, cluster, now)
        self._submit_queues(result, cluster, counts)
        self._submit_pods(result, cluster, now)
        queued = len(self._pending) + len(self._events) - before
        if queued > 0:
            log.debug("status_queued", writes=queued, pending=len(self._pending), events=len(self._events))
            self._wakeup.set()

    def record_bind(self, task: TaskInfo, node: str) -> None:
        """Record a successful bind: a `Scheduled` event on the pod."""
        self._pods.pop(task.key, None)
        self._pod_event(task, "Normal", "Scheduled", "Binding", f"Successfully assigned {task.key} to {node}")

    def record_eviction(self, task: TaskInfo, reason: str, *, preemptor: str = "") -> None:
        """Record a successful eviction: `Preempted` (with the preemptor `ns/name`) or `Evict` on the pod."""
        if preemptor:
            self._pod_event(task, "Normal", "Preempted", "Preempting", f"Preempted by {preemptor}: {reason}")
        else:
            self._pod_event(task, "Warning", "Evict", "Evicting", reason)

    def _submit_pod_groups(
        self, result: CycleOutcome, cluster: ClusterInfo, now: str
    ) -> dict[str, list[int]]:
        """Diff every PodGroup; return the number of groups per queue and phase (shadow groups count)."""
        groups, records = result.pod_groups, self._groups
        for gone in records.keys() - groups.keys():
            del records[gone]
        bound = {task.job for task, _ in result.binds}
        counts: dict[str, list[int]] = {}
        for job_id, status in groups.items():
            tally = counts.get(status.queue)
            if tally is None:
                tally = counts[status.queue] = [0] * len(_PHASES)
            tally[_PHASE_INDEX[status.phase]] += 1
            job = cluster.jobs.get(job_id)
            if status.shadow or job is None:
                continue
            state = status_diff.GroupState(
                phase=status.phase.value,
                running=status.running,
                succeeded=status.succeeded,
                failed=status.failed,
                unschedulable=status.unschedulable,
                reason=_unschedulable_reason(job)
                if status.unschedulable
                else status_diff.NOT_ENOUGH_RESOURCES,
                placed=status.phase is PodGroupPhase.RUNNING or (job_id in bound and _gang_ready(job)),
            )
            record = records.get(job_id)
            if record is None or record.uid != job.pod_group.uid or record.state != state:
                self._diff_pod_group(job, state, record, now)
        return counts

    def _diff_pod_group(
        self, job: JobInfo, state: status_diff.GroupState, record: _GroupRecord | None, now: str
    ) -> None:
        spec = job.pod_group
        written = record.status if record is not None and record.uid == spec.uid else {}
        diff = status_diff.pod_group_diff(written, spec.conditions, state, now)
        new = _GroupRecord(spec.uid, state, diff.status)
        self._groups[job.uid] = new
        if diff.patch is None:
            return
        path = f"{_GROUPS}/namespaces/{spec.namespace}/podgroups/{spec.name}/status"
        self._enqueue(
            _Write(
                "PodGroup", job.uid, path, diff.patch, MERGE_PATCH, self._forget(self._groups, job.uid, new)
            )
        )
        reference = {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "namespace": spec.namespace,
            "name": spec.name,
            "uid": spec.uid,
        }
        for update in diff.changed:
            if update.type == status_diff.UNSCHEDULABLE and update.status == "True":
                self._event(reference, "Warning", status_diff.UNSCHEDULABLE, "Scheduling", update.message)
            elif update.type == status_diff.SCHEDULED:
                self._event(
                    reference, "Normal", status_diff.SCHEDULED, "Scheduling", status_diff.POD_GROUP_READY
                )

    def _submit_queues(
        self, result: CycleOutcome, cluster: ClusterInfo, counts: Mapping[str, list[int]]
    ) -> None:
        records = self._queues
        for gone in records.keys() - result.queues.keys():
            del records[gone]
        for name, figures in result.queues.items():
            queue = cluster.queues.get(QueueID(name))
            if queue is None:
                continue
            tally = counts.get(name) or [0] * len(_PHASES)
            desired: dict[str, Any] = {"state": queue.state.value}
            desired.update((phase.value.lower(), tally[i]) for i, phase in enumerate(_PHASES))
            desired["allocated"] = figures.allocated.to_quantities()
            written = records.get(name, {})
            patch = status_diff.status_patch(written, desired)
            if patch is None:
                continue
            records[name] = desired
            path = f"{_GROUPS}/queues/{name}/status"
            self._enqueue(
                _Write("Queue", name, path, patch, MERGE_PATCH, self._forget(records, name, desired))
            )

    def _desired_pods(self, result: CycleOutcome, cluster: ClusterInfo) -> dict[str, tuple[TaskInfo, str]]:
        """Pending pods of unschedulable groups (their own fit error, else the group's) and pipelined pods."""
        desired: dict[str, tuple[TaskInfo, str]] = {}
        own = result.unschedulable
        for job_id, status in result.pod_groups.items():
            job = cluster.jobs.get(job_id)
            if not status.unschedulable or job is None:
                continue
            for task in job.tasks_with(TaskStatus.PENDING):
                key = task.key
                desired[key] = (task, own.get(key) or status.unschedulable)
        if result.pipelined:
            for job in cluster.jobs.values():
                for task in job.tasks_with(TaskStatus.PIPELINED):
                    desired[task.key] = (task, status_diff.pipelined_message(task.key, task.node_name))
        return desired

    def _submit_pods(self, result: CycleOutcome, cluster: ClusterInfo, now: str) -> None:
        desired = self._desired_pods(result, cluster)
        records = self._pods
        for key, (task, message) in desired.items():
            record = records.get(key)
            same_pod = record is not None and record.uid == task.uid
            if same_pod and record is not None and record.message == message:
                continue
            since = record.since if same_pod and record is not None else now
            new = _PodRecord(uid=task.uid, job=task.job, message=message, since=since)
            records[key] = new
            patch = status_diff.pod_scheduled_patch(uid=task.uid, message=message, since=since)
            path = _pod_path(task.namespace, task.name)
            self._pending[("Pod", key)] = _Write(
                "Pod", key, path, patch, STRATEGIC_MERGE_PATCH, self._forget(records, key, new)
            )
            self._pod_event(task, "Warning", "FailedScheduling", "Scheduling", message)
        for key in records.keys() - desired.keys():
            stale = records[key]
            job = cluster.jobs.get(stale.job) if stale.job else None
            pod = job.tasks.get(stale.uid) if job is not None else None
            if pod is None or pod.status not in (TaskStatus.PENDING, TaskStatus.PIPELINED):
                del records[key]

    # Queueing ------------------------------------------------------------------------------------

    def _forget(self, records: dict[Any, Any], key: Any, record: object) -> Callable[[], None]:
        """Return a callback that forgets `record` (unless a later submit replaced it), to write it again."""

        def forget() -> None:
            if records.get(key) is record:
                del records[key]

        return forget

    def _enqueue(self, write: _Write) -> None:
        """Queue a status patch; one still queued for the same object is folded into it."""
        key = (write.kind, write.name)
        queued = self._pending.get(key)
        if queued is not None:
            write.body = _compose(queued.body, write.body)
        self._pending[key] = write

    def _pod_event(self, task: TaskInfo, type_: str, reason: str, action: str, note: str) -> None:
        reference = {"apiVersion": "v1", "kind": "Pod", "namespace": task.namespace, "name": task.name}
        self._event({**reference, "uid": task.uid}, type_, reason, action, note)

    def _event(self, regarding: Mapping[str, str], type_: str, reason: str, action: str, note: str) -> None:
        seconds = self._clock()
        self._event_seq = max(self._event_seq + 1, int(seconds * 1e9))
        namespace = regarding.get("namespace") or "default"
        body = status_diff.event_body(
            regarding=regarding,
            type_=type_,
            reason=reason,
            action=action,
            note=note,
            name=f"{regarding['name']}.{self._event_seq:x}",
            event_time=status_diff.micro_time(seconds),
            controller=self._controller,
            instance=self._instance,
        )
        if len(self._events) == self._events.maxlen:
            self._dropped_events += 1
        name = f"{namespace}/{regarding['name']}"
        path = f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"
        self._events.append(_Write("Event", name, path, body, "application/json"))
        self._wakeup.set()

    # Draining (async) ----------------------------------------------------------------------------

    async def run(self) -> None:
        """Drain queued writes whenever a submit or a record queues some, until cancelled."""
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            await self.flush()

    async def flush(self) -> None:
        """Send everything queued (and whatever is queued meanwhile), `concurrency` writes at a time."""
        async with self._drain_lock:
            await asyncio.gather(*(self._work() for _ in range(self._concurrency)))
            if self._dropped_events:
                log.warning("events_dropped", count=self._dropped_events, reason="event queue full")
                self._dropped_events = 0

    def _next(self) -> _Write | None:
        if self._pending:
            key = next(iter(self._pending))
            return self._pending.pop(key)
        if self._events:
            return self._events.popleft()
        return None

    async def _work(self) -> None:
        while (write := self._next()) is not None:
            try:
                await self._send(write)
            except Exception:  # a bug in one write must not stop the others (or the scheduler)
                log.exception("status_write_crashed", kind=write.kind, object=write.name)

    async def _send(self, write: _Write) -> None:
        try:
            code, body = await self._client.request(
                write.method, write.path, body=write.body, content_type=write.content_type
            )
        except ApiError as exc:
            self._failed(write, None, str(exc))
            return
        if code < 300:
            log.debug("status_written", kind=write.kind, object=write.name)
        elif code == 404:
            log.debug("status_object_gone", kind=write.kind, object=write.name)
        elif code in _REJECTED:
            reason = status_message(body)
            log.warning(
                "status_write_rejected", kind=write.kind, object=write.name, status=code, reason=reason
            )
        else:
            self._failed(write, code, status_message(body))

    def _failed(self, write: _Write, code: int | None, reason: str) -> None:
        if write.forget is None:
            log.warning("event_failed", object=write.name, status=code, reason=reason)
            return
        write.forget()
        log.error("status_write_failed", kind=write.kind, object=write.name, status=code, reason=reason)
