"""Applying a cycle's decisions: binds through pods/binding, evictions through policy/v1 Eviction.

Every bind is assumed in the store before it is sent and rolled back when it is refused; a failure
after which the Binding may have been written (no answer, 500, 504, a 409 from an unreachable etcd or
for a pod already bound) keeps the assumption until the store sees the pod bound or a later LIST shows
it unbound. A placement that carries pod annotations (deviceshare's devices) PATCHes them onto the pod
first, and a failed PATCH sends no bind. Once a call finds the API server unreachable (no answer, 429,
503) the rest of the batch is not sent (rolled back, retried by the next cycle) and the batch logs one
`api_server_unreachable` line instead of one error per pod.
Every eviction marks its pod Releasing before it is sent and unmarks it when refused.
A PodDisruptionBudget refusing an eviction (429) is not an error: the pod stays, the eviction counts
as blocked, a later cycle may try again. Calls run concurrently, at most `concurrency` at once, and
each checks leadership just before it is sent, so a leader that lost its Lease stops binding at once.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import structlog

from py_volcano.api import TaskInfo
from py_volcano.cache.client import ApiClient, api_failure, never_sent
from py_volcano.cache.status import STRATEGIC_MERGE_PATCH
from py_volcano.cache.store import Store
from py_volcano.errors import ApiError, BindError, EvictError

__all__ = [
    "ApplyReport",
    "Binder",
    "DecisionStream",
    "annotate_pod",
    "bind_outcome",
    "bind_pod",
    "evict_pod",
    "unreachable",
]

log = structlog.get_logger(__name__)

#: Eviction outcomes, as the `result` label of volcano_pod_evictions_total.
SUCCESS, BLOCKED, ERROR = "success", "blocked", "error"


async def bind_pod(client: ApiClient, task: TaskInfo, node: str) -> None:
    """POST a Binding of `task` to `node`; BindError (with status) when the API server does not accept it."""
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": task.name, "namespace": task.namespace, "uid": str(task.uid)},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
    what = f"bind {task.key} to {node}"
    try:
        status, answer = await client.post(f"/api/v1/namespaces/{task.namespace}/pods/{task.name}/binding", body)
    except ApiError as exc:
        raise api_failure(BindError, what, body=str(exc)) from exc
    if status not in (200, 201):
        raise api_failure(BindError, what, status=status, body=answer)


async def annotate_pod(client: ApiClient, task: TaskInfo) -> None:
    """PATCH `task.bind_annotations` onto the pod (a strategic merge of metadata.annotations, its uid as a
    precondition); BindError (with status) when the API server does not accept it."""
    body = {"metadata": {"uid": str(task.uid), "annotations": dict(task.bind_annotations)}}
    what = f"annotate {task.key} before binding"
    try:
        status, answer = await client.request(
            "PATCH",
            f"/api/v1/namespaces/{task.namespace}/pods/{task.name}",
            body=body,
            content_type=STRATEGIC_MERGE_PATCH,
        )
    except ApiError as exc:
        raise api_failure(BindError, what, body=str(exc)) from exc
    if status != 200:
        raise api_failure(BindError, what, status=status, body=answer)


async def evict_pod(client: ApiClient, task: TaskInfo) -> bool:
    """POST an Eviction of `task`; True when accepted (or the pod is already gone), False when a
    PodDisruptionBudget blocks it (429); EvictError otherwise."""
    body = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": task.name, "namespace": task.namespace},
        "deleteOptions": {"preconditions": {"uid": str(task.uid)}},
    }
    what = f"evict {task.key}"
    try:
        status, answer = await client.request(
            "POST", f"/api/v1/namespaces/{task.namespace}/pods/{task.name}/eviction", body=body
        )
    except ApiError as exc:
        raise api_failure(EvictError, what, body=str(exc)) from exc
    if status in (200, 201, 404):
        return True
    if status == 429:
        return False
    raise api_failure(EvictError, what, status=status, body=answer)


#: Answers after which a Binding may have been written anyway (the API server or etcd failed mid-way).
_UNCLEAR_STATUSES = frozenset({500, 504})
#: Words of a 409 that is no refusal: etcd was unreachable (the write may have committed), or the pod is
#: already bound (by an earlier call whose answer was lost, or by another scheduler).
_UNCLEAR_CONFLICTS = ("rpc error", "etcdserver:", "already assigned", "already bound")
#: Answers that say the API server takes no calls now; with no answer at all: the API server is unreachable.
_UNAVAILABLE_STATUSES = frozenset({429, 503})


def _outcome(error: ApiError) -> bool | None:
    """False when the call certainly failed (an answer, or no connection), None when it may have worked."""
    return False if error.status is not None or never_sent(error) else None


def bind_outcome(error: BindError) -> bool | None:
    """False when the Binding was certainly not written (a definite refusal, 429, 503, or no connection),
    None when it may have been (no answer, 500, 504, an etcd-unavailable or already-bound 409)."""
    if error.status is None:
        return False if never_sent(error) else None
    if error.status in _UNCLEAR_STATUSES:
        return None
    message = str(error)
    return None if error.status == 409 and any(word in message for word in _UNCLEAR_CONFLICTS) else False


def unreachable(error: ApiError) -> bool:
    """Return whether a failed call says the API server cannot take calls now (no answer, 429, 503)."""
    return error.status is None or error.status in _UNAVAILABLE_STATUSES


@dataclass(slots=True)
class ApplyReport:
    """What happened to one cycle's decisions: pods bound, binds failed (with why), calls not sent
    (leadership gone, or the API server found unreachable), each eviction's outcome (`success`,
    `blocked`, `error`), and the calls that found the API server unreachable (with why, first first)."""

    bound: list[str] = field(default_factory=list)
    bind_errors: dict[str, str] = field(default_factory=dict)
    not_sent: list[str] = field(default_factory=list)
    evictions: dict[str, str] = field(default_factory=dict)
    unreachable: dict[str, str] = field(default_factory=dict)


def log_unreachable(report: ApplyReport) -> None:
    """Log, once for a report, that the API server was found unreachable and what was not sent."""
    if report.unreachable:
        log.error(
            "api_server_unreachable",
            failed=len(report.unreachable),
            not_sent=len(report.not_sent),
            reason=next(iter(report.unreachable.values())),
        )


class DecisionStream:
    """One cycle's decisions sent as they come, under one report: each statement's binds as it commits
    (`put`, from the cycle's thread: Volcano binds as a statement commits, not when the cycle ends),
    the evictions when the cycle is over (`close`)."""

    def __init__(self, binder: Binder, loop: asyncio.AbstractEventLoop) -> None:
        self.binder, self.loop = binder, loop
        self.report = ApplyReport()
        self._queue: deque[list[tuple[TaskInfo, str]]] = deque()
        self._sent: list[asyncio.Task[ApplyReport]] = []
        self._woken = False

    def put(self, binds: Sequence[tuple[TaskInfo, str]]) -> None:
        """Take a committed statement's binds (any thread); the event loop sends them next, with any
        taken meanwhile (one wake-up of the loop for all of them)."""
        self._queue.append(list(binds))
        if not self._woken:
            self._woken = True
            self.loop.call_soon_threadsafe(self.drain)

    def drain(self) -> None:
        """Send the binds taken so far, as one batch (on the event loop)."""
        self._woken = False
        batch: list[tuple[TaskInfo, str]] = []
        while self._queue:
            batch.extend(self._queue.popleft())
        if batch:
            self._sent.append(self.binder.submit(batch, (), self.report))

    def close(self, evictions: Sequence[tuple[TaskInfo, str]]) -> asyncio.Task[ApplyReport]:
        """Send what is left and the cycle's `evictions`; the task ends with every call answered."""
        self.drain()
        if evictions:
            self._sent.append(self.binder.submit((), evictions, self.report))
        return asyncio.create_task(self._answered(), name="apply-decisions")

    async def _answered(self) -> ApplyReport:
        await asyncio.gather(*self._sent)
        log_unreachable(self.report)
        return self.report


class Binder:
    """Send binds and evictions with bounded concurrency, keeping the store's overlays right."""

    def __init__(
        self,
        client: ApiClient,
        store: Store,
        *,
        concurrency: int,
        is_leader: Callable[[], bool],
        on_bind: Callable[[bool, float | None], None] = lambda ok, latency: None,
        on_eviction: Callable[[str], None] = lambda result: None,
        after_bind: Callable[[TaskInfo, str], None] = lambda task, node: None,
        after_eviction: Callable[[TaskInfo, str], None] = lambda task, reason: None,
    ) -> None:
        self.client = client
        self.store = store
        self.is_leader = is_leader
        self.on_bind = on_bind
        self.on_eviction = on_eviction
        self.after_bind = after_bind
        self.after_eviction = after_eviction
        self._semaphore = asyncio.Semaphore(concurrency)

    def submit(
        self,
        binds: Sequence[tuple[TaskInfo, str]],
        evictions: Sequence[tuple[TaskInfo, str]],
        report: ApplyReport | None = None,
    ) -> asyncio.Task[ApplyReport]:
        """Hold every decision in the store's overlays now and send them in the background.

        The overlays are in place when this returns, so the next snapshot already sees the pods on
        their nodes (or Releasing) however long the calls take; the task's result is the report.
        `report` is one to add to (a `DecisionStream`'s, which then says when the API server was
        unreachable); none: a report of these decisions alone.
        """
        for task, _ in evictions:
            self.store.mark_releasing(task.key)
        for task, node in binds:
            self.store.assume(task.key, node, task.bind_annotations)
        own = report is None
        return asyncio.create_task(
            self._send(binds, evictions, report or ApplyReport(), own), name="apply-decisions"
        )

    async def _send(
        self,
        binds: Sequence[tuple[TaskInfo, str]],
        evictions: Sequence[tuple[TaskInfo, str]],
        report: ApplyReport,
        own: bool,
    ) -> ApplyReport:
        await asyncio.gather(
            *(self._evict(task, reason, report) for task, reason in evictions),
            *(self._bind(task, node, report) for task, node in binds),
        )
        if own:
            log_unreachable(report)
        return report

    async def _bind(self, task: TaskInfo, node: str, report: ApplyReport) -> None:
        async with self._semaphore:
            if report.unreachable or not self.is_leader():
                self.store.bind_settled(task.key, ok=False)
                report.not_sent.append(task.key)
                return
            step = "annotate"
            try:
                if task.bind_annotations:
                    await annotate_pod(self.client, task)
                step = "bind"
                await bind_pod(self.client, task, node)
            except BindError as exc:
                # A failed PATCH sent no bind: the pod is certainly unbound and is retried next cycle.
                ok = False if step == "annotate" else bind_outcome(exc)
                self.store.bind_settled(task.key, ok=ok)
                report.bind_errors[task.key] = str(exc)
                self.on_bind(False, None)
                if unreachable(exc):
                    report.unreachable[task.key] = str(exc)
                    log.debug("bind_failed", task=task.key, node=node, status=exc.status, reason=str(exc))
                else:
                    settled = "refused" if ok is False else "unclear"
                    log.error(
                        "bind_failed", task=task.key, node=node, status=exc.status, reason=str(exc), settled=settled
                    )
                return
        self.store.bind_settled(task.key, ok=True)
        report.bound.append(task.key)
        self.on_bind(True, time.time() - task.creation if task.creation else None)
        self.after_bind(task, node)
        log.debug("task_bound", task=task.key, node=node)

    async def _evict(self, task: TaskInfo, reason: str, report: ApplyReport) -> None:
        async with self._semaphore:
            if report.unreachable or not self.is_leader():
                self.store.eviction_settled(task.key, ok=False)
                report.not_sent.append(task.key)
                return
            try:
                accepted = await evict_pod(self.client, task)
            except EvictError as exc:
                self.store.eviction_settled(task.key, ok=_outcome(exc))
                report.evictions[task.key] = ERROR
                self.on_eviction(ERROR)
                if unreachable(exc):
                    report.unreachable[task.key] = str(exc)
                    log.debug("eviction_failed", task=task.key, status=exc.status, reason=str(exc))
                else:
                    log.error("eviction_failed", task=task.key, status=exc.status, reason=str(exc))
                return
        self.store.eviction_settled(task.key, ok=accepted)
        result = SUCCESS if accepted else BLOCKED
        report.evictions[task.key] = result
        self.on_eviction(result)
        if accepted:
            self.after_eviction(task, reason)
            log.info("task_evicted", task=task.key, node=task.node_name, reason=reason)
        else:
            log.info("eviction_blocked", task=task.key, node=task.node_name, reason="PodDisruptionBudget")
