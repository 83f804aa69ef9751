"""StatusWriter: tell the cluster what a cycle decided (PodGroup and Queue status, pod conditions, events).

The scheduling loop calls `submit` once per cycle with the cycle's result, which carries every status,
condition and reason to write (the framework decides them); the writer diffs it against what it last
wrote (`status_diff`), queues only the changes, and returns. `run` drains the queue in the background with
bounded concurrency, one write per object in flight; a later submit supersedes a queued, unsent write of the
same object. Status writes are merge patches on status subresources, or on the object itself where the CRD has none
(Volcano's PodGroup CRD): `run` asks discovery first, and again when a status path turns out not to be
served (a 404 that names no object) or a status written on the object is ignored (the CRD has gained
the subresource); pod conditions are strategic merge patches of
`PodScheduled`, so the pod's other conditions stay; events are events.k8s.io/v1 and best effort. A
pod's FailedScheduling event follows its condition: queued once the condition is written.

A failed call never raises into the loop: a 404 means the object is gone, a 409 or 422 is logged with
the object, and any other failure forgets what was queued so the next submit writes it again. After
a restart nothing is known to be written, so every PodGroup and Queue is written once.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog

from py_volcano.api import (
    SCHEDULED,
    UNSCHEDULABLE,
    CycleResult,
    JobID,
    PodGroupStatus,
    PodWait,
    SettledFollower,
    TaskID,
    TaskInfo,
)
from py_volcano.cache import status_diff
from py_volcano.cache.annotations import AnnotationPatch, AnnotationRecords
from py_volcano.cache.client import status_message
from py_volcano.cache.event_series import EventSeries, Series
from py_volcano.cache.store import resource_version
from py_volcano.errors import ApiError

if TYPE_CHECKING:
    from py_volcano.cache.client import ApiClient

__all__ = ["StatusWriter"]

log = structlog.get_logger(__name__)

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
_GROUP, _VERSION = "scheduling.volcano.sh", "v1beta1"
_GROUPS = f"/apis/{_GROUP}/{_VERSION}"
#: Answers that retrying the same write cannot change.
_REJECTED = frozenset({409, 422})
#: The suffix of a queued annotation's kind (`("Queue annotation", name)`), beside its status write.
_ANNOTATION = " annotation"


@dataclass(slots=True)
class _StatusPatch:
    """A merge patch of a PodGroup's or Queue's status, and the record it wrote (forgotten if it fails);
    `path` is the object's, the status suffix is added when sent."""

    kind: str
    name: str
    path: str
    body: dict[str, Any]
    record: object


@dataclass(slots=True, frozen=True)
class _GroupRecord:
    """A PodGroup's status as last queued, and the object and cycle state it was diffed for."""

    uid: str
    state: status_diff.GroupState
    status: dict[str, Any]
    decided: PodGroupStatus | None = None
    """The cycle's status object diffed; a later cycle handing the same object on needs no new diff."""


@dataclass(slots=True, frozen=True)
class _PodRecord:
    """The PodScheduled=False queued for a pod, since when it is False; queued as is, patched when sent."""

    uid: TaskID
    namespace: str
    name: str
    reason: str
    message: str
    since: str


@dataclass(slots=True, frozen=True)
class _Event:
    """An event to create, built when sent: regarding (apiVersion, kind, namespace, name, uid), why, when."""

    regarding: tuple[str, str, str, str, str]
    type: str
    reason: str
    action: str
    note: str
    at: float


_Queued = _StatusPatch | _PodRecord | Series[_Event] | AnnotationPatch


def _series_key(event: _Event) -> tuple[object, ...]:
    """What makes two events one series (client-go's key: what it regards, reason, action; and type)."""
    return (event.regarding, event.type, event.reason, event.action)


def _object(key: tuple[str, str]) -> tuple[str, str]:
    """Return the object a queued write's key names: `("Queue annotation", q)` and `("Queue", q)` are one."""
    kind, name = key
    return kind.removesuffix(_ANNOTATION), name


def _compose(first: dict[str, Any], second: Mapping[str, Any]) -> dict[str, Any]:
    """Return one merge patch with the effect of `first` then `second`."""
    result = dict(first)
    for key, value in second.items():
        old = result.get(key)
        result[key] = _compose(old, value) if isinstance(old, dict) and isinstance(value, Mapping) else value
    return result


def _pod_event(task: TaskInfo, type_: str, reason: str, action: str, note: str, at: float) -> _Event:
    return _Event(("v1", "Pod", task.namespace, task.name, task.uid), type_, reason, action, note, at)


def _failed_scheduling(pod: _PodRecord, at: float) -> _Event:
    """The event that goes with a PodScheduled condition once it is written (kube-scheduler's reason)."""
    regarding = ("v1", "Pod", pod.namespace, pod.name, pod.uid)
    return _Event(regarding, "Warning", "FailedScheduling", "Scheduling", pod.message, at)


def _route_missing(answer: object) -> bool:
    """Return whether a 404 says the path is not served at all, rather than that the object is gone."""
    details = answer.get("details") if isinstance(answer, Mapping) else None
    return not (isinstance(details, Mapping) and details.get("name"))


def _status_ignored(body: Mapping[str, Any], answer: object) -> bool:
    """Return whether a status patch sent to the object itself came back without its phase: the CRD has
    gained a status subresource, and the API server ignores status written there."""
    phase = (body.get("status") or {}).get("phase")
    written = answer.get("status") if isinstance(answer, Mapping) else None
    return phase is not None and (written.get("phase") if isinstance(written, Mapping) else None) != phase


def _series_patch(series: Series[_Event]) -> dict[str, Any]:
    """The `series` of an Event that occurred `count` times, last at `last` (a merge patch, or part of a body)."""
    return {"series": {"count": series.count, "lastObservedTime": status_diff.micro_time(series.last)}}


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
        waiting_version: Callable[[str], int | None] | None = None,
    ) -> None:
        """`concurrency` bounds writes in flight; repeated events fold into series (`event_series`), and
        beyond `max_events` distinct series waiting at once a new one is counted as not recorded.
        `waiting_version` gives the resourceVersion of pod `ns/name` as last seen waiting for a node, None
        once it is bound, being bound or gone (`Store.waiting_pod_version`): a PodScheduled=False is sent
        only then, conditioned on that version, so it never lands on a pod bound meanwhile."""
        self._client = client
        self._waiting_version = waiting_version
        #: The resourceVersion each pod had after our last PodScheduled write to it, by uid: newer than
        #: the store's until the store sees the echo.
        self._written: dict[TaskID, int] = {}
        self._controller = scheduler_name
        self._instance = f"{scheduler_name}-{socket.gethostname()}"[:128]
        self._concurrency = concurrency
        self._clock = clock
        self._groups: dict[JobID, _GroupRecord] = {}
        self._settled = SettledFollower()
        self._queues: dict[str, dict[str, Any]] = {}
        self._pods: dict[TaskID, _PodRecord] = {}
        self._overcommitted: dict[str, str] = {}
        self._pending: dict[tuple[str, str], _StatusPatch | _PodRecord | AnnotationPatch] = {}
        self._in_flight: set[tuple[str, str]] = set()
        self._events: EventSeries[_Event] = EventSeries(max_pending=max_events)
        self._event_seq = 0
        self._event_time = (0.0, "")
        self._wakeup = asyncio.Event()
        self._drain_lock = asyncio.Lock()
        #: Whether events wait while status writes go (`hold_events`: at shutdown, statuses first).
        self._events_held = False
        self.unwritten = False
        self._annotations = AnnotationRecords()
        #: Whether the explain and figures annotations are written (off once RBAC refuses them).
        self.annotating = True
        #: Path suffix of each kind's status writes: its status subresource, or "" for the object itself.
        self.status_suffix = {"PodGroup": "/status", "Queue": "/status"}

    # Submitting (synchronous, on the event loop thread) ------------------------------------------

    def submit(self, result: CycleResult) -> None:
        """Queue the writes a cycle's result calls for. `unwritten` is True from a failed or refused-as-stale
        write to the next submit, which writes it again.

        Call it on the event loop thread; it does not wait for any write, and request bodies are built
        only when sent.
        """
        self.unwritten = False
        seconds = self._clock()
        now = status_diff.rfc3339(seconds)
        before = len(self._pending) + len(self._events)
        self._submit_pod_groups(result, now, seconds)
        self._submit_queues(result)
        self._submit_pods(result, now)
        self._submit_nodes(result, seconds)
        if self.annotating:
            for patch in self._annotations.diff(result):
                self._pending[(patch.kind + _ANNOTATION, patch.name)] = patch
        queued = len(self._pending) + len(self._events) - before
        if queued > 0:
            log.debug("status_queued", writes=queued, pending=len(self._pending), events=len(self._events))
            self._wakeup.set()

    def record_bind(self, task: TaskInfo, node: str) -> None:
        """Record a successful bind: a `Scheduled` event on the pod.

        A PodScheduled=False still queued for the pod is dropped: the API server set it True on binding.
        """
        self._drop_pod(task.uid)
        note = f"Successfully assigned {task.key} to {node}"
        self._queue_event(_pod_event(task, "Normal", "Scheduled", "Binding", note, self._clock()))

    def record_eviction(self, task: TaskInfo, reason: str, *, preemptor: str = "") -> None:
        """Record a successful eviction: `Preempted` (with the preemptor `ns/name`) or `Evict` on the pod."""
        if preemptor:
            note = f"Preempted by {preemptor}: {reason}"
            self._queue_event(_pod_event(task, "Normal", "Preempted", "Preempting", note, self._clock()))
        else:
            self._queue_event(_pod_event(task, "Warning", "Evict", "Evicting", reason, self._clock()))

    def _submit_pod_groups(self, result: CycleResult, now: str, seconds: float) -> None:
        """Diff every PodGroup but shadow ones (a pod without a PodGroup has no object to write)."""
        groups, records = result.pod_groups, self._groups
        for gone in self._settled.gone(records, groups, result.settled_update, result.settled):
            del records[gone]  # a settled job's status stands
        for job_id, status in groups.items():
            if status.shadow:
                continue
            record = records.get(job_id)
            if record is not None and record.decided is status:  # a job the cycle left as it was
                continue
            state = status_diff.GroupState(
                phase=status.phase.value,
                running=status.running,
                succeeded=status.succeeded,
                failed=status.failed,
                conditions=status.conditions,
            )
            if record is None or record.uid != status.uid or record.state != state:
                self._diff_pod_group(job_id, status, state, record, now, seconds)

    def _diff_pod_group(
        self,
        job_id: JobID,
        status: PodGroupStatus,
        state: status_diff.GroupState,
        record: _GroupRecord | None,
        now: str,
        seconds: float,
    ) -> None:
        written = record.status if record is not None and record.uid == status.uid else {}
        diff = status_diff.pod_group_diff(written, status.observed_conditions, state, now)
        new = _GroupRecord(status.uid, state, diff.status, status)
        self._groups[job_id] = new
        if diff.patch is None:
            return
        path = f"{_GROUPS}/namespaces/{status.namespace}/podgroups/{status.name}"
        self._queue_patch(_StatusPatch("PodGroup", job_id, path, diff.patch, new))
        regarding = (f"{_GROUP}/{_VERSION}", "PodGroup", status.namespace, status.name, status.uid)
        for update in diff.changed:
            if update.type == UNSCHEDULABLE and update.status == "True":
                event = _Event(regarding, "Warning", update.type, "Scheduling", update.message, seconds)
                self._queue_event(event)
            elif update.type == SCHEDULED:
                event = _Event(regarding, "Normal", update.type, "Scheduling", status_diff.POD_GROUP_READY, seconds)
                self._queue_event(event)

    def _submit_nodes(self, result: CycleResult, seconds: float) -> None:
        """A Warning `Overcommitted` event on each node that became overcommitted (or says so otherwise)."""
        for name, message in result.overcommitted_nodes.items():
            if self._overcommitted.get(name) != message:
                regarding = ("v1", "Node", "", name, "")
                self._queue_event(_Event(regarding, "Warning", "Overcommitted", "Scheduling", message, seconds))
        self._overcommitted = dict(result.overcommitted_nodes)

    def _submit_queues(self, result: CycleResult) -> None:
        records = self._queues
        for gone in records.keys() - result.queue_statuses.keys():
            del records[gone]
        for name, status in result.queue_statuses.items():
            desired: dict[str, Any] = {
                "pending": status.pending,
                "inqueue": status.inqueue,
                "running": status.running,
                "unknown": status.unknown,
                "completed": status.completed,
                "allocated": status.allocated.to_quantities(),
            }
            if not status.state_set:
                desired["state"] = status.state.value
            patch = status_diff.status_patch(records.get(name, {}), desired)
            if patch is not None and "state" in patch["status"] and status.resource_version:
                # Onto the version the cycle read: a close that landed since is not reopened (a 409)
                patch["metadata"] = {"resourceVersion": status.resource_version}
            if patch is not None:
                records[name] = desired
                self._queue_patch(_StatusPatch("Queue", name, f"{_GROUPS}/queues/{name}", patch, desired))

    def _submit_pods(self, result: CycleResult, now: str) -> None:
        """Diff the PodScheduled=False of every pod the result says waits. Records are by uid: the loop
        over thousands of pods formats no names; a pod's record goes once it is no longer pending or
        pipelined. The FailedScheduling event is queued once the condition is written, not here.
        """
        waits = result.pod_waits
        for uid, wait in waits.items():
            self._diff_pod(uid, wait, now)
        for uid in self._pods.keys() - waits.keys():
            if uid not in result.unplaced:
                self._drop_pod(uid)

    def _drop_pod(self, uid: TaskID) -> None:
        """Forget the pod's condition: its record, the version our last write of it returned, its queued write."""
        self._pods.pop(uid, None)
        self._written.pop(uid, None)
        self._pending.pop(("Pod", uid), None)

    def _diff_pod(self, uid: TaskID, wait: PodWait, now: str) -> None:
        record = self._pods.get(uid)
        if record is not None and record.message == wait.message and record.reason == wait.reason:
            return
        since = record.since if record is not None else now
        new = _PodRecord(uid, wait.namespace, wait.name, wait.reason, wait.message, since)
        self._pods[uid] = self._pending[("Pod", uid)] = new

    def _queue_patch(self, patch: _StatusPatch) -> None:
        """Queue a status patch; one still queued for the same object is folded into it."""
        key = (patch.kind, patch.name)
        queued = self._pending.get(key)
        if isinstance(queued, _StatusPatch):
            patch.body = _compose(queued.body, patch.body)
        self._pending[key] = patch

    def _queue_event(self, event: _Event) -> None:
        self._events.add(_series_key(event), event, event.at)
        self._wakeup.set()

    # Draining (async) ----------------------------------------------------------------------------

    async def detect_subresources(self) -> bool:
        """Learn from API discovery whether PodGroups and Queues have a status subresource; return False
        when discovery did not answer (what was known stays)."""
        try:
            code, answer = await self._client.request("GET", _GROUPS)
        except ApiError as exc:
            log.warning("status_subresources_unknown", reason=str(exc))
            return False
        if code != 200 or not isinstance(answer, Mapping):
            log.warning("status_subresources_unknown", status=code, reason=status_message(answer))
            return False
        served = {str(item.get("name")) for item in answer.get("resources") or () if isinstance(item, Mapping)}
        for kind, plural in (("PodGroup", "podgroups"), ("Queue", "queues")):
            self.status_suffix[kind] = "/status" if f"{plural}/status" in served else ""
        log.info(
            "status_subresources",
            podgroups=bool(self.status_suffix["PodGroup"]),
            queues=bool(self.status_suffix["Queue"]),
        )
        return True

    async def run(self) -> None:
        """Learn how status is written, then drain queued writes whenever a submit or a record queues
        some, until cancelled."""
        async with self._drain_lock:  # before any write, and not beside one: `concurrency` bounds it too
            await self.detect_subresources()
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            await self.flush()

    def hold_events(self, held: bool = True) -> None:
        """Send no event until released: the status writes queued go on, and a flush ends once they are
        sent (shutdown sends statuses first, then events as time allows; a burst can leave thousands of
        `Scheduled` events waiting behind its binds)."""
        self._events_held = held

    @property
    def events_waiting(self) -> int:
        """How many event writes (new series or series updates) wait to be sent."""
        return len(self._events)

    async def flush(self) -> None:
        """Send everything queued (and whatever is queued meanwhile), `concurrency` writes at a time."""
        async with self._drain_lock:
            await asyncio.gather(*(self._work() for _ in range(self._concurrency)))
            if self._events.not_recorded:
                log.warning("events_not_recorded", count=self._events.not_recorded, reason="too many series waiting")
                self._events.not_recorded = 0

    def _next(self) -> tuple[tuple[str, str] | None, _Queued] | None:
        """Status writes first, in submit order, each object's one at a time; events after them.

        A write of an object whose previous write is still in flight waits for it: sent beside it, the
        API server could apply the older one last and leave a stale status that looks written. An object's
        status and its annotation are one object here: a Queue's first status, written onto the
        resourceVersion the cycle read, goes before the annotation that would move that version."""
        for key in self._pending:
            written = _object(key)
            if written not in self._in_flight:
                self._in_flight.add(written)
                return written, self._pending.pop(key)
        if self._events_held:
            return None
        event = self._events.pop()
        return None if event is None else (None, event)

    async def _work(self) -> None:
        while (taken := self._next()) is not None:
            key, item = taken
            try:
                await self._send(item)
            except Exception:  # a bug in one write must not stop the others (or the scheduler)
                log.exception("status_write_crashed", object=repr(item))
            finally:
                if key is not None:
                    self._in_flight.discard(key)

    def _request(self, item: _Queued, version: int | None = None) -> tuple[str, str, str, str, dict[str, Any], str]:
        """Return (kind, object, method, path, body, content type) of a queued item; a pod's condition
        conditioned on its resourceVersion `version` when given."""
        if isinstance(item, _StatusPatch):
            return item.kind, item.name, "PATCH", item.path + self.status_suffix[item.kind], item.body, MERGE_PATCH
        if isinstance(item, AnnotationPatch):
            return item.kind, item.name, "PATCH", item.path, item.body(), MERGE_PATCH
        if isinstance(item, _PodRecord):
            path = f"/api/v1/namespaces/{item.namespace}/pods/{item.name}/status"
            body = status_diff.pod_scheduled_patch(
                uid=item.uid, reason=item.reason, message=item.message, since=item.since
            )
            if version is not None:
                body["metadata"]["resourceVersion"] = str(version)
            return "Pod", f"{item.namespace}/{item.name}", "PATCH", path, body, STRATEGIC_MERGE_PATCH
        _, _, namespace, name, _ = item.event.regarding
        path = f"/apis/events.k8s.io/v1/namespaces/{namespace or 'default'}/events"
        if item.name:
            return "Event", f"{namespace}/{name}", "PATCH", f"{path}/{item.name}", _series_patch(item), MERGE_PATCH
        body = self._event_body(item.event)
        item.name = body["metadata"]["name"]
        if item.count > 1:
            body |= _series_patch(item)
        return "Event", f"{namespace}/{name}", "POST", path, body, "application/json"

    def _event_body(self, event: _Event) -> dict[str, Any]:
        api_version, kind, namespace, name, uid = event.regarding
        self._event_seq = max(self._event_seq + 1, int(event.at * 1e9))
        if self._event_time[0] != event.at:
            self._event_time = (event.at, status_diff.micro_time(event.at))
        return status_diff.event_body(
            regarding={
                "apiVersion": api_version,
                "kind": kind,
                "namespace": namespace,
                "name": name,
                "uid": uid,
            },
            type_=event.type,
            reason=event.reason,
            action=event.action,
            note=event.note,
            name=f"{name}.{self._event_seq:x}",
            event_time=self._event_time[1],
            controller=self._controller,
            instance=self._instance,
        )

    async def _send(self, item: _Queued) -> None:
        version = None
        if isinstance(item, _PodRecord) and self._waiting_version is not None:
            version = self._waiting_version(f"{item.namespace}/{item.name}")
            if version is None:  # bound, being bound or gone since the cycle: nothing to say
                self._forget(item)
                log.debug("status_write_dropped", kind="Pod", object=f"{item.namespace}/{item.name}")
                return
            version = max(version, self._written.get(item.uid, 0))
        kind, name, method, path, body, content_type = self._request(item, version)
        try:
            code, answer = await self._client.request(method, path, body=body, content_type=content_type)
        except ApiError as exc:
            self._failed(item, kind, name, None, str(exc))
            return
        on_object = isinstance(item, _StatusPatch) and not path.endswith("/status")
        if code < 300 and on_object and _status_ignored(body, answer):
            self._failed(item, kind, name, code, f"{path}: status written on the object was ignored")
            await self.detect_subresources()
        elif code < 300:
            log.debug("status_written", kind=kind, object=name)
            if isinstance(item, _PodRecord):
                if isinstance(answer, Mapping) and item.uid in self._pods:
                    self._written[item.uid] = resource_version(answer)
                self._queue_event(_failed_scheduling(item, self._clock()))
        elif code == 404 and isinstance(item, _StatusPatch) and _route_missing(answer):
            self._failed(item, kind, name, code, f"{path} is not served: {status_message(answer)}")
            await self.detect_subresources()
        elif code == 409 and isinstance(item, _StatusPatch) and "metadata" in item.body:
            self._forget(item)  # the object changed since the cycle read it: the next cycle writes anew
            self.unwritten = True
            log.info("status_write_stale", kind=kind, object=name, reason=status_message(answer))
        elif code == 409 and isinstance(item, _PodRecord) and version is not None:
            self._forget(item)  # the pod changed since last seen waiting (bound, most often): the next cycle decides
            self.unwritten = True
            log.debug("status_write_stale", kind=kind, object=name, reason=status_message(answer))
        elif code == 404:
            if isinstance(item, Series):
                self._events.failed(item)  # the Event expired (the API server keeps them an hour): start anew
            log.debug("status_object_gone", kind=kind, object=name)
        elif code == 403 and isinstance(item, AnnotationPatch):
            self.annotating = False
            reason = status_message(answer)
            log.warning("annotations_forbidden", kind=kind, object=name, reason=reason, annotation=item.key)
        elif code in _REJECTED:
            reason = status_message(answer)
            log.warning("status_write_rejected", kind=kind, object=name, status=code, reason=reason)
        else:
            self._failed(item, kind, name, code, status_message(answer))

    def _failed(self, item: _Queued, kind: str, name: str, code: int | None, reason: str) -> None:
        """Log a failed call; forget what it wrote (unless a later submit replaced it), to write it again."""
        if isinstance(item, Series):
            self._events.failed(item)
            log.warning("event_failed", object=name, reason_sent=item.event.reason, status=code, reason=reason)
            return
        self._forget(item)
        self.unwritten = True
        log.error("status_write_failed", kind=kind, object=name, status=code, reason=reason)

    def _forget(self, item: _PodRecord | _StatusPatch | AnnotationPatch) -> None:
        """Forget what `item` wrote (unless a later submit replaced it), so the next submit writes it again."""
        if isinstance(item, AnnotationPatch):
            self._annotations.forget(item)
            return
        if isinstance(item, _PodRecord):
            records: dict[Any, Any] = self._pods
            key: object = item.uid
            record: object = item
        else:
            records = self._groups if item.kind == "PodGroup" else self._queues
            key, record = item.name, item.record
        if records.get(key) is record:
            del records[key]
            if isinstance(item, _PodRecord):
                self._written.pop(item.uid, None)
