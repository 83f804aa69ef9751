"""PodGroupController: Volcano's podgroup controller, run by `py-volcano run` beside the scheduler.

Pods come from the scheduler's own pod informer: the store calls `observe_pod` for every pod event (a
second pod watch through kopf would cost ~0.4 ms of Python per event, see cache/informer.py). Owners
come from kopf: `register` adds event handlers for Jobs, ReplicaSets, StatefulSets and DaemonSets to
the registry the runner's kopf runs (event handlers only: no finalizers, no annotations on them).

Work is per PodGroup (`ns/podgroup-<uid>`). A group is queued when one of its pods waits to be grouped,
when its owner appears or its annotations change, and when its ReplicaSet or StatefulSet is scaled to 0.
`run` reconciles the queued groups: delete the PodGroup of an owner scaled to 0; create it when the
store has none; patch it when it differs from what its owner asks; then annotate its waiting pods with
its name, which makes them one job for the scheduler. A failed group is tried again with backoff.

Leader election: only the Lease holder writes, and only once the store is synced (the PodGroups it
reads are all listed). A standby keeps its index and queue current and, on becoming leader, queues
every group it knows, so nothing that changed while it stood by is missed. Every write is idempotent
(a create that finds the group succeeds, so does a delete that finds none; patches set values), so a
write a former leader sends in its last moments is harmless.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import kopf
import structlog

from py_volcano.aio import wait_any
from py_volcano.api import (
    GROUP_NAME_ANNOTATION,
    OwnerRef,
    ParsedPod,
    PodGroupSpec,
    TaskStatus,
)
from py_volcano.cache.client import ApiClient, api_failure, status_message
from py_volcano.cache.status_diff import event_body, micro_time
from py_volcano.controller.owners import WATCHED, Owner, OwnerIndex, OwnerKind, parse_owner, watched_kind
from py_volcano.controller.podgroups import (
    API_VERSION,
    GROUP_PREFIX,
    DesiredGroup,
    desired_group,
    group_name,
    parse_min_member,
    update_patch,
)
from py_volcano.errors import ApiError

__all__ = ["ClusterView", "PodGroupController"]

log = structlog.get_logger(__name__)

MERGE_PATCH = "application/merge-patch+json"
#: Pods in these states are never grouped: finished, or on their way out.
_SETTLED = frozenset({TaskStatus.SUCCEEDED, TaskStatus.FAILED, TaskStatus.RELEASING})
#: Seconds between two looks at leadership and the store while idle.
_IDLE = 1.0
_MAX_BACKOFF = 60.0


class ClusterView(Protocol):
    """What the controller reads of the scheduler's store (the runner passes the store itself)."""

    @property
    def is_synced(self) -> bool:
        """Return whether every kind's first LIST is in."""

    def pod_group(self, key: str) -> PodGroupSpec | None:
        """Return the PodGroup `ns/name` as last seen, None when absent."""

    def touch(self) -> None:
        """Record that something a cycle reads changed."""


class PodGroupController:
    """One PodGroup per workload: the owner index, the queue of groups to reconcile, the writes."""

    def __init__(
        self,
        client: ApiClient,
        view: ClusterView,
        *,
        scheduler_name: str,
        is_leader: Callable[[], bool],
        concurrency: int = 8,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`concurrency` bounds the groups reconciled at once (and each group's pod patches in flight)."""
        self._client = client
        self._view = view
        self.scheduler_name = scheduler_name
        self._is_leader = is_leader
        self._concurrency = concurrency
        self._clock = clock
        self._instance = f"{scheduler_name}-{socket.gethostname()}"[:128]
        self.owners = OwnerIndex(view.touch)
        self._refs: dict[str, ParsedPod] = {}
        self._ref_of: dict[str, str] = {}
        self._waiting: dict[str, dict[str, ParsedPod]] = {}
        self._waiting_in: dict[str, str] = {}
        self._due: dict[str, float] = {}
        self._forced: set[str] = set()
        self._failures: dict[str, int] = {}
        self._reported: dict[str, str] = {}
        self._leading = False
        self._wakeup = asyncio.Event()

    @property
    def queued(self) -> list[str]:
        """Return the groups waiting to be reconciled, sorted."""
        return sorted(self._due)

    # What the store and kopf tell it (synchronous, on the event loop thread) --------------------------

    def holds(self, pod: ParsedPod) -> bool:
        """Return whether the scheduler must leave `pod` alone until it is grouped (see `OwnerIndex.holds`)."""
        return pod.scheduler_name == self.scheduler_name and self.owners.holds(pod)

    def observe_pod(self, key: str, pod: ParsedPod | None) -> None:
        """Take a pod as the store parsed it now (None: gone): remember it as its group's template, and
        queue its group when it waits to be grouped."""
        waited_in = self._waiting_in.pop(key, None)
        if waited_in is not None:
            self._waiting.get(waited_in, {}).pop(key, None)
        if pod is None or pod.scheduler_name != self.scheduler_name:
            self._forget_template(key)
            return
        name = group_name(pod)
        group = f"{pod.task.namespace}/{name}"
        if pod.group and pod.group != name:
            return  # a PodGroup of someone else's making: not ours to keep
        self._refs[group] = pod
        self._ref_of[key] = group
        if pod.group or pod.task.status in _SETTLED:
            return
        self._waiting.setdefault(group, {})[key] = pod
        self._waiting_in[key] = group
        self._queue(group)

    def _forget_template(self, key: str) -> None:
        """Drop a gone pod's template unless its owner is watched (an annotation change still needs one)."""
        group = self._ref_of.pop(key, None)
        if group is None:
            return
        ref = self._refs.get(group)
        if ref is not None and ref.task.key == key and (ref.owner is None or watched_kind(ref.owner) is None):
            del self._refs[group]

    def on_owner_event(self, kind: OwnerKind, event_type: str | None, obj: Mapping[str, Any]) -> None:
        """Take a watch event of an owner: index it, and queue its group when it was scaled to 0, when it
        is new here or its annotations changed (the group is then patched even if the store looks right)."""
        owner = parse_owner(kind, obj)
        if owner is None:
            return
        group = f"{owner.namespace}/{GROUP_PREFIX}{owner.uid}"
        if event_type == "DELETED":
            self.owners.drop(owner.uid)
            self._refs.pop(group, None)
            self._due.pop(group, None)
            self._forced.discard(group)
            self._reported.pop(owner.uid, None)
            return
        previous = self.owners.put(owner)
        if owner.scaled_to_zero:
            if self._view.pod_group(group) is not None:
                self._queue(group)
        elif group in self._refs and (previous is None or previous.annotations != owner.annotations):
            self._queue(group, force=previous is not None)

    def register(self, registry: kopf.OperatorRegistry) -> None:
        """Add the owners' watches to a kopf registry."""
        for kind in WATCHED:
            kopf.on.event(
                group=kind.group,
                version=kind.version,
                plural=kind.plural,
                registry=registry,
                id=f"podgroup-owners-{kind.plural}",
            )(self._owner_handler(kind))

    def _owner_handler(self, kind: OwnerKind) -> Callable[..., Any]:
        async def on_event(event: kopf.RawEvent, **_: Any) -> None:
            self.on_owner_event(kind, event.get("type"), event["object"])

        return on_event

    def _queue(self, group: str, *, force: bool = False) -> None:
        self._due.setdefault(group, self._clock())
        if force:
            self._forced.add(group)
        self._wakeup.set()

    # The loop ----------------------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Reconcile queued groups while leading and synced, until `stop` is set."""
        while not stop.is_set():
            self._wakeup.clear()
            leading = self._is_leader() and self._view.is_synced
            if leading and not self._leading:
                self._queue_all()
                log.info("podgroup_controller_leading", groups=len(self._due), owners=len(self.owners))
            self._leading = leading
            if leading:
                await self._work_due()
            await wait_any(self._wakeup, stop, timeout=self._next_wait(leading))

    def _queue_all(self) -> None:
        for group in self._refs:
            self._queue(group)
        for owner in self.owners.owners():
            group = f"{owner.namespace}/{GROUP_PREFIX}{owner.uid}"
            if owner.scaled_to_zero and self._view.pod_group(group) is not None:
                self._queue(group)

    def _next_wait(self, leading: bool) -> float:
        if not leading or not self._due:
            return _IDLE
        return min(max(min(self._due.values()) - self._clock(), 0.0), _IDLE)

    async def _work_due(self) -> None:
        now = self._clock()
        due = [group for group, at in self._due.items() if at <= now]
        if not due:
            return
        for group in due:
            del self._due[group]
        limit = asyncio.Semaphore(self._concurrency)

        async def one(group: str) -> str:
            async with limit:
                return await self._guarded(group)

        outcomes = await asyncio.gather(*(one(group) for group in due))
        counts = {outcome: outcomes.count(outcome) for outcome in set(outcomes) if outcome}
        if counts:
            log.info("podgroups_reconciled", **counts)

    async def _guarded(self, group: str) -> str:
        """Reconcile one group; on failure queue it again after a backoff (1 s doubling to 60 s)."""
        forced = group in self._forced
        self._forced.discard(group)
        try:
            outcome = await self._reconcile(group, forced=forced)
        except Exception as exc:  # one group never stops the others; ApiError or a bug alike, it is retried
            failures = self._failures.get(group, 0) + 1
            self._failures[group] = failures
            delay = min(2.0 ** (failures - 1), _MAX_BACKOFF)
            self._due[group] = min(self._due.get(group, float("inf")), self._clock() + delay)
            if forced:
                self._forced.add(group)
            log.error("podgroup_reconcile_failed", job=group, retry_in=delay, reason=f"{type(exc).__name__}: {exc}")
            return "failed"
        self._failures.pop(group, None)
        return outcome

    # One group -------------------------------------------------------------------------------------

    async def _reconcile(self, group: str, *, forced: bool) -> str:
        """Bring one group to what its owner asks; return what was done ('' for nothing)."""
        namespace, name = group.split("/", 1)
        owner = self.owners.get(name.removeprefix(GROUP_PREFIX))
        current = self._view.pod_group(group)
        if owner is not None and owner.scaled_to_zero:
            self._waiting.pop(group, None)
            return "deleted" if current is not None and await self._delete(namespace, name) else ""
        ref = self._refs.get(group)
        if ref is None:
            return ""
        desired = await self._desired(ref)
        outcome = ""
        if current is None:
            outcome = "created" if await self._create(desired) else ""
        elif (forced or _drifted(current, desired)) and await self._update(desired):
            outcome = "updated"
        grouped = await self._annotate(group)
        return outcome or ("grouped" if grouped else "")

    async def _desired(self, ref: ParsedPod) -> DesiredGroup:
        annotations: Mapping[str, str] = {}
        owner: Owner | None = None
        if ref.owner is not None and (kind := watched_kind(ref.owner)) is not None:
            owner = self.owners.get(ref.owner.uid) or await self._read_owner(kind, ref.task.namespace, ref.owner)
            annotations = owner.annotations
        minimum = parse_min_member(annotations)
        if owner is not None and minimum.error and self._reported.get(owner.uid) != minimum.error:
            self._reported[owner.uid] = minimum.error
            await self._report(owner, minimum.error)
        return desired_group(ref, annotations, minimum.value)

    async def _read_owner(self, kind: OwnerKind, namespace: str, ref: OwnerRef) -> Owner:
        """GET an owner the watch has not shown yet; one that is gone or may not be read counts as
        asking for nothing (its pods are not held)."""
        status, body = await self._client.request("GET", kind.path(namespace, ref.name))
        owner = parse_owner(kind, body) if status == 200 and isinstance(body, Mapping) else None
        if owner is None or owner.uid != ref.uid:
            if status not in (200, 403, 404):
                raise api_failure(ApiError, f"get {kind.kind} {namespace}/{ref.name}", status=status, body=body)
            log.warning("podgroup_owner_unreadable", owner=f"{namespace}/{ref.name}", kind=kind.kind, status=status)
            owner = Owner(kind=kind, namespace=namespace, name=ref.name, uid=ref.uid)
        self.owners.put(owner)
        return owner

    async def _create(self, desired: DesiredGroup) -> bool:
        path = f"/apis/{API_VERSION}/namespaces/{desired.namespace}/podgroups"
        status, body = await self._client.request("POST", path, body=desired.body())
        if status == 201:
            log.debug("podgroup_created", job=desired.key, min_member=desired.spec["minMember"])
            return True
        if status != 409:
            raise api_failure(ApiError, f"create PodGroup {desired.key}", status=status, body=body)
        return False

    async def _update(self, desired: DesiredGroup) -> bool:
        path = f"/apis/{API_VERSION}/namespaces/{desired.namespace}/podgroups/{desired.name}"
        status, current = await self._client.request("GET", path)
        if status == 404:
            return False
        if status != 200 or not isinstance(current, Mapping):
            raise api_failure(ApiError, f"get PodGroup {desired.key}", status=status, body=current)
        patch = update_patch(current, desired)
        if patch is None:
            return False
        status, body = await self._client.request("PATCH", path, body=patch, content_type=MERGE_PATCH)
        if status == 404:
            return False
        if status != 200:
            raise api_failure(ApiError, f"patch PodGroup {desired.key}", status=status, body=body)
        log.info("podgroup_updated", job=desired.key, min_member=desired.spec["minMember"])
        return True

    async def _delete(self, namespace: str, name: str) -> bool:
        path = f"/apis/{API_VERSION}/namespaces/{namespace}/podgroups/{name}"
        status, body = await self._client.request("DELETE", path)
        if status == 404:
            return False
        if status not in (200, 202):
            raise api_failure(ApiError, f"delete PodGroup {namespace}/{name}", status=status, body=body)
        log.info("podgroup_deleted", job=f"{namespace}/{name}", reason="owner scaled to 0")
        return True

    async def _annotate(self, group: str) -> int:
        """Write the group's name on each of its waiting pods; return how many were written. A pod that
        fails stays waiting (and the group is tried again)."""
        waiting = self._waiting.get(group)
        if not waiting:
            return 0
        name = group.split("/", 1)[1]
        pods = list(waiting.items())
        limit = asyncio.Semaphore(self._concurrency)

        async def one(pod: ParsedPod) -> ApiError | None:
            patch = {"metadata": {"uid": pod.uid, "annotations": {GROUP_NAME_ANNOTATION: name}}}
            path = f"/api/v1/namespaces/{pod.task.namespace}/pods/{pod.task.name}"
            async with limit:
                try:
                    status, body = await self._client.request("PATCH", path, body=patch, content_type=MERGE_PATCH)
                except ApiError as exc:
                    return exc
            if status in (200, 404, 409):  # annotated, gone, or replaced by a namesake
                return None
            return api_failure(ApiError, f"annotate Pod {pod.task.key}", status=status, body=body)

        errors = await asyncio.gather(*(one(pod) for _, pod in pods))
        for (key, _), error in zip(pods, errors, strict=True):
            if error is None and waiting.pop(key, None) is not None:
                self._waiting_in.pop(key, None)
        if not waiting:
            self._waiting.pop(group, None)
        failed = [error for error in errors if error is not None]
        if failed:
            raise failed[0]
        return len(pods)

    async def _report(self, owner: Owner, error: str) -> None:
        """Log and post a Warning event on an owner whose annotation cannot be used (once per value)."""
        log.warning(
            "group_min_member_invalid", owner=f"{owner.namespace}/{owner.name}", kind=owner.kind.kind, reason=error
        )
        at = time.time()
        body = event_body(
            regarding=owner.reference,
            type_="Warning",
            reason="InvalidGroupMinMember",
            action="GroupPods",
            note=error,
            name=f"{owner.name}.{time.time_ns():x}",
            event_time=micro_time(at),
            controller=self.scheduler_name,
            instance=self._instance,
        )
        try:
            status, answer = await self._client.request(
                "POST", f"/apis/events.k8s.io/v1/namespaces/{owner.namespace}/events", body=body
            )
        except ApiError as exc:
            log.warning("event_failed", object=f"{owner.namespace}/{owner.name}", reason=str(exc))
            return
        if status >= 300:
            log.warning(
                "event_failed", object=f"{owner.namespace}/{owner.name}", status=status, reason=status_message(answer)
            )


def _drifted(current: PodGroupSpec, desired: DesiredGroup) -> bool:
    """Return whether the PodGroup in the store differs from `desired` in what the scheduler reads of it."""
    spec = desired.spec
    return (
        current.min_member != spec["minMember"]
        or current.queue != spec["queue"]
        or current.priority_class_name != (spec["priorityClassName"] or "")
    )
