"""The store: parsed specs of every watched object, plus what the scheduler did but has not yet seen.

Watch events (`watchers.py`) and periodic LISTs (`reconcile`) keep one record per object; `snapshot`
assembles a fresh `ClusterInfo` from them for a cycle. Between a decision and its echo from the watch,
overlays keep the store truthful: a pod we bind is *assumed* on its node at once (so the next cycle
never places it twice or overcommits the node), a pod we evict is *releasing* until it vanishes, and a
PodGroup phase the cycle decided holds until the watch shows it (Volcano's cache does the same:
`UpdateJobStatus` writes the API server and its own copy).

Ordering a LIST against watch events relies on resourceVersions being etcd revisions, integers that
grow with every write, as they are on every etcd-backed API server; an unreadable one sorts as 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Concatenate, ParamSpec, Protocol

import structlog

from py_volcano.api import (
    DEFAULT_QUEUE,
    POD_SCHEDULER_ERROR,
    BuiltJob,
    BuiltJobs,
    BuiltNodes,
    ClusterInfo,
    HyperNodeSpec,
    HyperNodeTopology,
    JobID,
    JobInfo,
    NodeSpec,
    NodeUsage,
    ParsedPod,
    PdbSpec,
    PodGroupPhase,
    PodGroupSpec,
    PodTemplates,
    PriorityClassSpec,
    QueueID,
    QueueInfo,
    Resource,
    ResourceQuotaSpec,
    Settled,
    SkippedPod,
    TaskStatus,
    parse_hyper_node,
    parse_node,
    parse_numatopology,
    parse_object,
    parse_pdb,
    parse_pod,
    parse_pod_group,
    parse_priority_class,
    parse_queue,
    parse_resource_quota,
    shadow_group_name,
    whole_resource,
)
from py_volcano.cache.backlog_jobs import BacklogKeeper
from py_volcano.cache.json_codec import loads
from py_volcano.cache.pod_order import PodOrder, Since
from py_volcano.cache.pod_text import encode_pod
from py_volcano.cache.shown import Shown
from py_volcano.errors import ObjectError

__all__ = ["HYPER_NODES", "KINDS", "NUMATOPOLOGIES", "Changes", "Kind", "Listing", "PodGrouping", "Store"]

log = structlog.get_logger(__name__)

P = ParamSpec("P")


def _held_back(method: Callable[Concatenate[Store, P], None]) -> Callable[Concatenate[Store, P], None]:
    """Make a change of the store wait while the store is held (`Store.held`)."""

    @functools.wraps(method)
    def change(store: Store, /, *args: P.args, **kwargs: P.kwargs) -> None:
        store.run_or_hold(functools.partial(method, store, *args, **kwargs))

    return change


@dataclass(slots=True, frozen=True)
class Kind:
    """One watched resource: where it is served and whether it is namespaced."""

    name: str
    group: str
    version: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        """Return `group/version`, or `version` for the core group."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_path(self) -> str:
        """Return the cluster-wide collection path."""
        prefix = f"/apis/{self.group}" if self.group else "/api"
        return f"{prefix}/{self.version}/{self.plural}"


PODS = Kind("Pod", "", "v1", "pods", True)
NODES = Kind("Node", "", "v1", "nodes", False)
QUEUES = Kind("Queue", "scheduling.volcano.sh", "v1beta1", "queues", False)
POD_GROUPS = Kind("PodGroup", "scheduling.volcano.sh", "v1beta1", "podgroups", True)
PRIORITY_CLASSES = Kind("PriorityClass", "scheduling.k8s.io", "v1", "priorityclasses", False)
PDBS = Kind("PodDisruptionBudget", "policy", "v1", "poddisruptionbudgets", True)
RESOURCE_QUOTAS = Kind("ResourceQuota", "", "v1", "resourcequotas", True)
HYPER_NODES = Kind("HyperNode", "topology.volcano.sh", "v1alpha1", "hypernodes", False)
NUMATOPOLOGIES = Kind("Numatopology", "nodeinfo.volcano.sh", "v1alpha1", "numatopologies", False)

#: Every kind the scheduler watches; priority classes first so pods parse with their classes.
KINDS: tuple[Kind, ...] = (
    PRIORITY_CLASSES,
    NODES,
    QUEUES,
    POD_GROUPS,
    PDBS,
    RESOURCE_QUOTAS,
    HYPER_NODES,
    NUMATOPOLOGIES,
    PODS,
)


def _metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if type(meta) is dict or isinstance(meta, Mapping) else {}


def resource_version(obj: Mapping[str, Any]) -> int:
    """Return an object's resourceVersion as an integer (0 when absent or not a number)."""
    text = _metadata(obj).get("resourceVersion")
    try:
        return int(str(text))
    except (TypeError, ValueError):
        return 0


def object_key(obj: Mapping[str, Any], kind: Kind) -> str:
    """Return `ns/name` for namespaced kinds, `name` otherwise."""
    meta = _metadata(obj)
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}" if kind.namespaced else str(meta.get("name"))


class PodGrouping(Protocol):
    """The PodGroup controller as the store sees it (the runner wires it in; None without one)."""

    def observe_pod(self, key: str, pod: ParsedPod | None) -> None:
        """Take pod `key` as parsed now; None when it is gone or unusable."""

    def holds(self, pod: ParsedPod) -> bool:
        """Return whether an unbound pod without a group annotation must wait for its PodGroup."""


@dataclass(slots=True)
class Changes:
    """What changed in the store since the runner last took the changes (`Store.take_changes`), told as
    what it could help: the runner's `Backoff` wakes the jobs waiting for it."""

    everything: bool = False
    """A Queue, PriorityClass or PodDisruptionBudget changed: any job may now be placed differently."""
    freed: bool = False
    """Resources may have been freed: a pod deleted, finished or releasing, a node added or changed, a
    bind rolled back, a PodGroup our cycle moved out of Inqueue (its enqueue reservation returned)."""
    placed: bool = False
    """A pod got a node: a possible victim for preempt and reclaim."""
    jobs: set[JobID] = field(default_factory=set)
    """Jobs whose pods or PodGroup changed."""


@dataclass(slots=True)
class Record:
    """One object as last seen: its resourceVersion, uid and parsed spec (None when unusable)."""

    version: int
    uid: str
    spec: Any
    raw: bytes | None = None
    """A pod's trimmed manifest (`pod_text.encode_pod`) as compact JSON: a fifth of the memory of the decoded
    maps, and compared as bytes to tell whether anything the scheduler reads changed."""
    error: str = ""

    def manifest(self) -> dict[str, Any] | None:
        """Return the trimmed manifest decoded, or None when none is kept (not a pod)."""
        return loads(self.raw) if self.raw is not None else None


@dataclass(slots=True)
class Pending:
    """A bind or eviction sent (or being sent) whose echo has not been seen; `settled` when the call ended,
    `unanswered` when it ended without an answer (it may or may not have happened)."""

    node: str = ""
    started: float = field(default_factory=time.monotonic)
    settled: float | None = None
    unanswered: bool = False
    annotations: Mapping[str, str] = field(default_factory=dict)
    """Pod annotations the bind writes first (deviceshare's devices), shown on the assumed pod meanwhile."""


class Store:
    """Records per kind, the overlays of our own decisions, and which kinds finished their first listing."""

    def __init__(self, *, scheduler_name: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.scheduler_name = scheduler_name
        self.clock = clock
        self.records: dict[str, dict[str, Record]] = {kind.name: {} for kind in KINDS}
        #: Per kind, the keys of the records that could not be parsed (each snapshot reads their errors).
        self.unusable: dict[str, dict[str, None]] = {kind.name: {} for kind in KINDS}
        self.tombstones: dict[str, dict[str, int]] = {kind.name: {} for kind in KINDS}
        self.synced: set[str] = set()
        self.watched: dict[str, asyncio.Event] = {kind.name: asyncio.Event() for kind in KINDS}  # kopf's first events
        self.assumed: dict[str, Pending] = {}
        #: The pods as a bind or eviction in flight shows them, by key.
        self._shown_pods: Shown[ParsedPod, Pending] = Shown()
        self.releasing: dict[str, Pending] = {}
        self.phases: dict[JobID, PodGroupPhase] = {}
        #: The PodGroups as a decided phase not yet echoed shows them, by key.
        self._phased: Shown[PodGroupSpec, PodGroupPhase] = Shown()
        self.shadow_phases: dict[JobID, PodGroupPhase] = {}
        self.changed = asyncio.Event()
        self.generation = 0
        self.work_arrived = asyncio.Event()
        #: Whether a changed PodGroup set `work_arrived` since `clear_work` (the fast path takes pods only).
        self.group_work = False
        #: Pods of this scheduler that arrived unbound since the last snapshot (`take_arrivals`), by key;
        #: `pods_arrived` is set as each comes.
        self.arrivals: dict[str, None] = {}
        self.pods_arrived = asyncio.Event()
        #: Pods of this scheduler without a PodGroup that someone else bound since the last snapshot
        #: (`take_bound_elsewhere`: another shard instance's binds, which a kept session takes in), by key.
        self.bound_elsewhere: dict[str, None] = {}
        #: Changes a session kept open since the last snapshot does not see (`_note_outside`), counted.
        self.outside_changes = 0
        #: Per PodGroup, how many pods name it (a new group that no pod names changes no queue's figures).
        self._named: dict[JobID, int] = {}
        self.grouping: PodGrouping | None = None
        self.changes = Changes()
        self.backlog = BacklogKeeper()
        self.settled = Settled()
        #: The jobs whose objects or overlays changed since the last snapshot (`everything_dirty`: all of
        #: them): a settled job not among them is carried into the next snapshot unlooked at.
        self.dirty: set[JobID] = set()
        self.everything_dirty = False
        #: Whether a pod or PodGroup requesting a fraction (`api.settled.whole_resource`) arrived since.
        self.fractional = False
        self.built_nodes = BuiltNodes()  # the last snapshot's nodes, taken into the next while unchanged
        self.built_jobs = BuiltJobs()  # and its jobs
        self.pod_order = PodOrder()  # the usable pods in snapshot order
        self.pod_templates = PodTemplates()  # pods' spec parts by template, parsed once
        self._priority_classes: dict[str, PriorityClassSpec] | None = None  # by name, until one changes
        #: Until the pods' first listing ends or the first snapshot: pod changes are noted in bulk.
        self._pods_in_bulk = True
        #: The PodGroup keys the last snapshot looked at (all but its carried jobs', `_excluding`), and
        #: those whose record was put or dropped since.
        self._groups_shown: dict[str, None] = {}
        self._groups_excluding: object = None
        self._groups_touched: set[str] = set()
        self.node_usage: dict[str, NodeUsage] = {}
        """Measured load per node name, written by the metrics poller (cache/node_usage.py)."""
        self.shard_nodes: frozenset[str] | None = None
        """The nodes of this instance's NodeShard, written by the shard poller (cache/shards.py); None: all."""
        self.shard_peers: tuple[str, ...] = ()
        """Every NodeShard's name, sorted, written by the shard poller: the instances sharing the pending jobs."""
        self._hyper_nodes: HyperNodeTopology | None = None  # resolved anew once HyperNodes or nodes change
        #: While the store is held (`held`), the changes that came meanwhile, to run when it ends.
        self.held_changes: list[Callable[[], None]] | None = None
        #: Set while the store is not held: a watch that can wait stops reading meanwhile (`released`).
        self._not_held = asyncio.Event()
        self._not_held.set()

    # Holding changes --------------------------------------------------------------------------------

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Hold every change for the block: watch events, listings, binds and evictions sent or settled,
        node usage and shards wait, then run when it ends in the order they came, as if they had come
        after it. A snapshot taken meanwhile in another thread (`Runner.cycle`) reads the store as it
        was when the hold began, while the event loop goes on answering probes and sending binds (the
        pod and node watches wait: `released`)."""
        if self.held_changes is not None:
            raise RuntimeError("the store is held already")
        self.held_changes = []
        self._not_held.clear()
        try:
            yield
        finally:
            changes, self.held_changes = self.held_changes, None
            self._not_held.set()
            for change in changes:
                try:
                    change()
                except Exception:  # as if it had failed when it came; the changes after it still run
                    name = getattr(getattr(change, "func", change), "__qualname__", repr(change))
                    log.exception("held_change_failed", change=name)

    async def released(self) -> None:
        """Return once the store is not held: the pod and node watches wait here rather than read events
        only to hold them, so a snapshot in another thread shares the interpreter with nothing but the
        probes (the events wait in the connection meanwhile, as they would behind a busy event loop)."""
        if self.held_changes is not None:
            await self._not_held.wait()

    def run_or_hold(self, change: Callable[[], None]) -> None:
        """Run `change` now, or when the hold ends while the store is held."""
        if self.held_changes is None:
            change()
        else:
            self.held_changes.append(change)

    # Watch events and listings --------------------------------------------------------------------

    @property
    def is_synced(self) -> bool:
        """Return whether every kind's first LIST is in."""
        return len(self.synced) == len(KINDS)

    @_held_back
    def apply_event(self, kind: Kind, event_type: str | None, obj: Mapping[str, Any]) -> None:
        """Apply one watch event (`ADDED`, `MODIFIED`, `DELETED`, or None for kopf's initial listing).

        An event whose object is not a map (no API server sends one) is logged and ignored.
        """
        if not isinstance(obj, Mapping):
            log.warning("event_skipped", kind=kind.name, event_type=event_type, reason=f"not an object: {obj!r:.80}")
            return
        key = object_key(obj, kind)
        version = resource_version(obj)
        uid = str(_metadata(obj).get("uid") or "")
        current = self.records[kind.name].get(key)
        if event_type == "DELETED":
            if current is not None and (current.version > version or (uid and current.uid != uid)):
                return  # a newer object of that name is already here
            self.tombstones[kind.name][key] = version
            self._drop(kind, key)
        elif current is None or version >= current.version:
            self._put(kind, key, obj, version, uid)

    @_held_back
    def set_node_usage(self, usage: dict[str, NodeUsage]) -> None:
        """Take every node's measured load (the metrics poller's: cache/node_usage.py)."""
        self.node_usage = usage
        self.touch()

    @_held_back
    def set_shard_nodes(self, nodes: frozenset[str]) -> None:
        """Take the nodes of this instance's NodeShard (the shard poller's: cache/shards.py); a change is
        one a kept session cannot see (its placements are masked to the nodes it opened with)."""
        if nodes != self.shard_nodes:
            self.outside_changes += 1
        self.shard_nodes = nodes
        self.touch()

    @_held_back
    def set_shard_peers(self, peers: tuple[str, ...]) -> None:
        """Take the name of every NodeShard (the shard poller's)."""
        self.shard_peers = peers

    def listing(self, kind: Kind, *, started: float) -> Listing:
        """Begin reconciling `kind` with a full LIST sent at `started`; feed it pages as they come."""
        return Listing(self, kind, started)

    def pending_jobs(self) -> set[JobID]:
        """Return the jobs with a pod of this scheduler waiting for a node."""
        ours = self.scheduler_name
        return {
            record.spec.job_id
            for record in self.records[PODS.name].values()
            if record.spec is not None and not record.spec.task.node_name and record.spec.scheduler_name == ours
        }

    def _unbound_pods(self) -> set[str]:
        return {
            key
            for key, record in self.records[PODS.name].items()
            if record.spec is not None and not record.spec.task.node_name
        }

    def clear_work(self) -> None:
        """Note that a cycle takes up the new work so far (`work_arrived`, `group_work`)."""
        self.work_arrived.clear()
        self.group_work = False

    def touch(self) -> None:
        """Record that something a cycle reads changed: a new generation, and `changed` wakes waiters."""
        self.generation += 1
        self.changed.set()

    def take_changes(self) -> Changes:
        """Return what changed since the last call (for the runner's `Backoff`), and start afresh."""
        changes, self.changes = self.changes, Changes()
        return changes

    def _note_change(self, kind: Kind, previous: Any, current: Any) -> None:
        """Note for the backoff what a change of one object (parsed before and after; None: absent or
        unusable) could help: its job, freed resources, a placed pod, or every job."""
        if kind is NODES or kind is HYPER_NODES:
            self._hyper_nodes = None
        if kind is PODS:
            self.dirty.update(pod.job_id for pod in (previous, current) if pod is not None)
            self.fractional = self.fractional or (current is not None and not whole_resource(current.task.resreq))
        elif kind is POD_GROUPS:
            self.dirty.update(group.key for group in (previous, current) if group is not None)
            fraction = current is not None and current.min_resources is not None
            self.fractional = self.fractional or (fraction and not whole_resource(current.min_resources))
        changes = self.changes
        if kind is NODES:
            changes.freed = changes.freed or current is not None
        elif kind is PODS:
            for pod in (previous, current):
                if pod is not None:
                    changes.jobs.add(pod.job_id)
            was = previous.task if previous is not None else None
            now = current.task if current is not None else None
            if was is not None and (now is None or (now.status in _FREEING and was.status not in _FREEING)):
                changes.freed = True
            if now is not None and now.node_name and (was is None or not was.node_name):
                changes.placed = True
            if was is None and now is not None and not now.node_name and current.scheduler_name == self.scheduler_name:
                self.work_arrived.set()
        elif kind is POD_GROUPS:
            if _fingerprint(previous) != _fingerprint(current):
                changes.jobs.update(group.key for group in (previous, current) if group is not None)
                self.work_arrived.set()
                self.group_work = True
        elif kind is not QUEUES or _fingerprint(previous) != _fingerprint(current):
            changes.everything = True
        if len(changes.jobs) > _MAX_NOTED_JOBS:  # nobody took the changes for long (a standby): wake all
            changes.jobs.clear()
            changes.everything = True

    def _put(self, kind: Kind, key: str, obj: Mapping[str, Any], version: int, uid: str) -> None:
        raw, template = encode_pod(obj) if kind is PODS else (None, None)
        if kind is PRIORITY_CLASSES:
            self._priority_classes = None
        previous = self.records[kind.name].get(key)
        if raw is not None and previous is not None and previous.uid == uid and previous.raw == raw:
            previous.version = version  # only what the scheduler does not read changed (conditions, IPs)
            return
        record = Record(version=version, uid=uid, spec=None, raw=raw)
        self.records[kind.name][key] = record
        if kind is POD_GROUPS:
            self._groups_touched.add(key)
        self._parse(kind, key, record, obj, previous.error if previous else "", template)
        if kind is PODS:
            self._reorder(key, previous.spec if previous is not None else None, record.spec)
        if kind is NODES and previous is not None and _same_node(previous.spec, record.spec):
            return  # a heartbeat: only what the scheduler does not read changed
        self.touch()
        before = previous.spec if previous is not None else None
        if kind is PODS and self._pods_in_bulk:
            self._note_pod_in_bulk(before, record.spec)
        else:
            self._note_change(kind, before, record.spec)
            self._note_outside(kind, key, before, record.spec)
        if kind is PRIORITY_CLASSES:
            self._reparse_pods()
        elif kind is PODS:
            self._observe_pod(key, record)
            if self.grouping is not None:
                self.grouping.observe_pod(key, record.spec)

        elif (
            kind is POD_GROUPS
            and isinstance(record.spec, PodGroupSpec)
            and self.phases.get(record.spec.key) == record.spec.phase
        ):
            del self.phases[record.spec.key]

    def _parse(
        self, kind: Kind, key: str, record: Record, obj: Mapping[str, Any], previous_error: str, template: bytes | None
    ) -> None:
        """Parse under `parse_object`'s guard: any failure costs this object, never the watch feeding every
        object. A pod's spec parts come from `pod_templates` by its `template` key (`pod_text`)."""
        try:
            record.spec = parse_object(kind.name, obj, self._parser(kind, template))
            record.error = ""
            self.unusable[kind.name].pop(key, None)
        except ObjectError as exc:
            self._skip(kind, key, record, str(exc), previous_error)
            self.unusable[kind.name][key] = None

    @staticmethod
    def _skip(kind: Kind, key: str, record: Record, error: str, previous_error: str) -> None:
        record.spec = None
        record.error = error
        if error != previous_error:
            log.warning("object_skipped", kind=kind.name, object=key, reason=error)

    def _parser(self, kind: Kind, template: bytes | None) -> Callable[[Mapping[str, Any]], Any]:
        if kind is PODS:
            classes, spec_parts = self.priority_classes(), functools.partial(self.pod_templates.parts, template)
            return lambda obj: parse_pod(obj, priority_classes=classes, spec_parts=spec_parts)
        parsers: dict[str, Callable[[Mapping[str, Any]], Any]] = {
            NODES.name: parse_node,
            QUEUES.name: parse_queue,
            POD_GROUPS.name: parse_pod_group,
            PRIORITY_CLASSES.name: parse_priority_class,
            PDBS.name: parse_pdb,
            RESOURCE_QUOTAS.name: parse_resource_quota,
            HYPER_NODES.name: parse_hyper_node,
            NUMATOPOLOGIES.name: parse_numatopology,
        }
        return parsers[kind.name]

    def _reparse_pods(self) -> None:
        """Re-read every pod: a pod without spec.priority takes its value from its PriorityClass."""
        self.everything_dirty = True
        records = self.records[PODS.name]
        for key, record in records.items():
            manifest = record.manifest()
            if manifest is not None:
                self._parse(PODS, key, record, manifest, record.error, encode_pod(manifest)[1])
        self.pod_order.reset(
            (record.spec.order, key, self._task_of(record.spec))
            for key, record in records.items()
            if record.spec is not None
        )

    def _task_of(self, pod: ParsedPod) -> str:
        """The job a usable pod is a task of, "" for a pod of another scheduler (`PodOrder`'s entries)."""
        return pod.job_id if pod.scheduler_name == self.scheduler_name else ""

    def _reorder(self, key: str, previous: ParsedPod | None, current: ParsedPod | None) -> None:
        """Keep `pod_order` current for a pod parsed before and after a change (None: absent or unusable)."""
        was = (previous.order, self._task_of(previous)) if previous is not None else None
        now = (current.order, self._task_of(current)) if current is not None else None
        if was == now:
            return
        if was is not None:
            self.pod_order.remove(was[0], key, was[1])
        if now is not None:
            self.pod_order.add(now[0], key, now[1])

    def _drop(self, kind: Kind, key: str) -> None:
        record = self.records[kind.name].pop(key, None)
        if kind is PRIORITY_CLASSES:
            self._priority_classes = None
        self.unusable[kind.name].pop(key, None)
        if kind is POD_GROUPS:
            self._groups_touched.add(key)
        self.touch()
        if kind is PODS and record is not None:
            self._reorder(key, record.spec, None)
        if record is not None:
            self._note_change(kind, record.spec, None)
            self._note_outside(kind, key, record.spec, None)
        if kind is PODS:
            self.assumed.pop(key, None)
            self.releasing.pop(key, None)
            if self.grouping is not None:
                self.grouping.observe_pod(key, None)
            if record is not None and record.spec is not None:
                namespace = key.split("/", 1)[0]
                self.shadow_phases.pop(JobID(f"{namespace}/{shadow_group_name(record.spec.uid)}"), None)
        elif kind is POD_GROUPS:
            self.phases.pop(JobID(key), None)
        elif kind is PRIORITY_CLASSES:
            self._reparse_pods()

    def _note_outside(self, kind: Kind, key: str, previous: Any, current: Any) -> None:
        """Note for the fast path an unbound pod of ours that arrived (`take_arrivals`) and one of ours
        without a PodGroup that someone else bound (`take_bound_elsewhere`), and count the changes a
        session kept open since the last snapshot cannot see: any object but a pod that changed (a Queue only
        in what others write; a PodGroup when that changed and a pod names it, or it was there before), any
        other pod bound by someone else, a waiting pod of ours gone, a pod that moved to another queue's job."""
        if kind is POD_GROUPS:
            named = self._named.get(JobID(key), 0) > 0
            if _fingerprint(previous) != _fingerprint(current) and (named or None not in (previous, current)):
                self.outside_changes += 1
            return
        if kind is QUEUES:
            if _fingerprint(previous) != _fingerprint(current):
                self.outside_changes += 1
            return
        if kind is not PODS:
            if previous is None or current is None or previous != current:  # a resync's copy changes nothing
                self.outside_changes += 1
            return
        self._count_named(previous, current)
        ours = self.scheduler_name
        was = previous.task.node_name if previous is not None else ""
        now = current.task.node_name if current is not None else ""
        if previous is None and current is not None and not now and current.scheduler_name == ours:
            self.arrivals[key] = None
            self.pods_arrived.set()
            return
        moved = previous is not None and current is not None and self._queue_of(previous) != self._queue_of(current)
        if now and not was and key not in self.assumed:  # bound by someone else
            if current.scheduler_name == ours and not current.group and not moved:
                self.bound_elsewhere[key] = None
            else:
                self.outside_changes += 1
        elif moved or (current is None and previous is not None and not was and previous.scheduler_name == ours):
            self.outside_changes += 1

    def _count_named(self, previous: ParsedPod | None, current: ParsedPod | None) -> None:
        """Keep `_named` (how many pods name each PodGroup) through one pod's change."""
        for pod, step in ((previous, -1), (current, 1)):
            if pod is not None and pod.group:
                count = self._named.get(pod.job_id, 0) + step
                if count:
                    self._named[pod.job_id] = count
                else:
                    del self._named[pod.job_id]

    def _note_pod_in_bulk(self, previous: ParsedPod | None, current: ParsedPod | None) -> None:
        """Note a pod's change while the pods' first listing runs, before any snapshot, in bulk (a restart
        lists 150,000 pods): the first snapshot builds every job and takes every pod as it is, so there
        is no job to mark dirty, no backed-off job to single out (every one may change), no kept
        session to tell of arrivals or outside binds. What outlives the first snapshot is kept: the
        counts of pods naming each PodGroup, whether a fraction arrived, and that work did."""
        self._count_named(previous, current)
        self.changes.everything = True
        if current is None:
            return
        if not self.fractional and not whole_resource(current.task.resreq):
            self.fractional = True
        if not current.task.node_name and current.scheduler_name == self.scheduler_name:
            self.work_arrived.set()

    def _queue_of(self, pod: ParsedPod) -> str | None:
        """The queue whose figures count the pod: its own without a PodGroup, else its group's (None: none yet)."""
        if not pod.group:
            return pod.queue
        record = self.records[POD_GROUPS.name].get(pod.job_id)
        group: PodGroupSpec | None = record.spec if record is not None else None
        return str(group.queue) if group is not None else None

    def _observe_pod(self, key: str, record: Record) -> None:
        """Confirm an assumed bind once the pod shows a node (ours or anyone's)."""
        parsed: ParsedPod | None = record.spec
        if parsed is not None and parsed.task.node_name and key in self.assumed:
            del self.assumed[key]

    def _settle_overlays(self, *, listed_unbound: set[str], started: float) -> None:
        """Forget binds and evictions a LIST sent after they ended proves did not happen."""
        for key in [k for k, p in self.assumed.items() if k in listed_unbound and _settled_before(p, started)]:
            log.warning("assumption_expired", task=key, node=self.assumed[key].node)
            del self.assumed[key]
            self._dirty_pod(key)
            self.changes.freed = True
            self.touch()
        pods = self.records[PODS.name]
        for key in [k for k, p in self.releasing.items() if _settled_before(p, started)]:
            record = pods.get(key)
            if record is not None and record.spec is not None and record.spec.task.status != TaskStatus.RELEASING:
                log.warning("eviction_not_observed", task=key)
                del self.releasing[key]
                self._dirty_pod(key)
                self.touch()

    # Overlays of our own decisions -----------------------------------------------------------------

    def _dirty_pod(self, key: str) -> None:
        """Note that the job of pod `key` changed (an overlay of ours on one of its pods came or went)."""
        record = self.records[PODS.name].get(key)
        if record is not None and record.spec is not None:
            self.dirty.add(record.spec.job_id)

    @_held_back
    def assume(self, key: str, node: str, annotations: Mapping[str, str] | None = None) -> None:
        """Hold pod `key` on `node` (with the `annotations` its bind writes) from now on, until the watch
        shows it bound or the bind fails."""
        self.assumed[key] = Pending(node=node, started=self.clock(), annotations=annotations or {})
        self._dirty_pod(key)
        self.touch()

    @_held_back
    def bind_settled(self, key: str, *, ok: bool | None) -> None:
        """Record the end of the bind call: keep the assumption on success, roll it back on a refusal.

        `ok` None means no answer came (the bind may have happened): the assumption stays until the
        watch shows the pod bound or a LIST sent afterwards shows it unbound.
        """
        pending = self.assumed.get(key)
        if pending is None:
            return
        if ok is False:
            del self.assumed[key]
            self._dirty_pod(key)
            self.changes.freed = True
            self.touch()
        else:
            pending.settled, pending.unanswered = self.clock(), ok is None
            self.changed.set()

    @_held_back
    def mark_releasing(self, key: str) -> None:
        """Treat pod `key` as Releasing from now on, until it vanishes or the eviction fails."""
        self.releasing[key] = Pending(started=self.clock())
        self._dirty_pod(key)
        self.touch()

    @_held_back
    def eviction_settled(self, key: str, *, ok: bool | None) -> None:
        """Record the end of the eviction call; unmark the pod when refused (`ok` None: as for binds)."""
        pending = self.releasing.get(key)
        if pending is None:
            return
        if ok is False:
            del self.releasing[key]
            self._dirty_pod(key)
            self.touch()
        else:
            pending.settled, pending.unanswered = self.clock(), ok is None
            self.changed.set()

    def awaiting_list(self, *, older_than: float) -> bool:
        """Return whether a bind or eviction ended without an answer more than `older_than` seconds ago
        and is still not settled by its echo: a LIST sent now tells whether it happened."""
        limit = self.clock() - older_than
        return any(
            pending.unanswered and pending.settled is not None and pending.settled < limit
            for pending in (*self.assumed.values(), *self.releasing.values())
        )

    @_held_back
    def record_phases(self, phases: Mapping[JobID, tuple[PodGroupPhase, bool]]) -> None:
        """Keep the PodGroup phases a cycle decided (`job -> (phase, shadow)`) for the next snapshots."""
        groups = self.records[POD_GROUPS.name]
        for job_id, (phase, shadow) in phases.items():
            if shadow:
                if self.shadow_phases.get(job_id) != phase:
                    self.shadow_phases[job_id] = phase
                    if phase is not PodGroupPhase.RUNNING:  # the built job takes Running as it is (BuiltJob.adopt)
                        self.dirty.add(job_id)
                    self.touch()
                continue
            record = groups.get(job_id)
            if record is None or not isinstance(record.spec, PodGroupSpec):
                continue
            was = self.phases.get(job_id) or record.spec.phase
            if phase == was:
                continue
            if was is PodGroupPhase.INQUEUE:
                # Leaving Inqueue gives back the room enqueue reserved for the job's minResources:
                # a job enqueue refused for want of that room may fit now.
                self.changes.freed = True
            if phase == record.spec.phase:  # back to the PodGroup's own phase before its echo came
                del self.phases[job_id]
            else:
                self.phases[job_id] = phase
            self.dirty.add(job_id)
            self.touch()

    # Reading -----------------------------------------------------------------------------------------

    def specs(self, kind: Kind) -> list[Any]:
        """Return the usable parsed specs of `kind`."""
        return [record.spec for record in self.records[kind.name].values() if record.spec is not None]

    def priority_classes(self) -> Mapping[str, PriorityClassSpec]:
        """Return the priority classes by name (read only: kept until one changes; every pod a listing
        brings reads them)."""
        classes = self._priority_classes
        if classes is None:
            classes = self._priority_classes = {pc.name: pc for pc in self.specs(PRIORITY_CLASSES)}
        return classes

    def has(self, kind: Kind, key: str) -> bool:
        """Return whether an object of `kind` with `key` is in the store (usable or not)."""
        return key in self.records[kind.name]

    def pod(self, key: str) -> ParsedPod | None:
        """Return the parsed pod `ns/name`, or None."""
        record = self.records[PODS.name].get(key)
        return record.spec if record is not None else None

    def waiting_pod_version(self, key: str) -> int | None:
        """Return the resourceVersion of pod `ns/name` as last seen while it waits for a node; None once it is
        bound, a bind of ours is in flight for it, or it is gone (the status writer's `waiting_version`)."""
        record = self.records[PODS.name].get(key)
        if record is None or key in self.assumed or (record.spec is not None and record.spec.task.node_name):
            return None
        return record.version

    def pod_group(self, key: str) -> PodGroupSpec | None:
        """Return the parsed PodGroup `ns/name`, or None (absent or unusable)."""
        record = self.records[POD_GROUPS.name].get(key)
        return record.spec if record is not None else None

    def bind_observed(self, key: str) -> bool:
        """Return whether a bind of `key` is over: seen bound, rolled back, or the pod is gone."""
        return key not in self.assumed

    def eviction_observed(self, key: str) -> bool:
        """Return whether an eviction of `key` is over: the pod is gone, or the eviction was refused."""
        return key not in self.records[PODS.name] or key not in self.releasing

    def _pods(self, carried: Collection[JobID]) -> list[ParsedPod]:
        """The usable pods with our overlays, less this scheduler's pods of `carried` jobs; pods the
        PodGroup controller has yet to group are held back while their owner asks for a gang (no gang
        is placed pod by pod meanwhile)."""
        pods: list[ParsedPod] = []
        holds = self.grouping.holds if self.grouping is not None else None
        records = self.records[PODS.name]
        shown = self._shown_pods
        for key in self.pod_order.ordered(carried, self._since(carried)):
            parsed: ParsedPod = records[key].spec
            assumed = self.assumed.get(key)
            if holds is not None and parsed.owner is not None and assumed is None and holds(parsed):
                continue
            if assumed is not None and not parsed.task.node_name:
                parsed = shown.show(key, parsed, assumed, _binding)
            elif key in self.releasing and parsed.task.status != TaskStatus.RELEASING:
                parsed = shown.show(key, parsed, self.releasing[key], _releasing)
            pods.append(parsed)
        shown.close()
        return pods

    def _since(self, carried: Collection[JobID]) -> Since | None:
        """How `carried` (just carried) differs from the jobs the last snapshot carried, for `PodOrder`:
        the pods of the jobs no longer carried as those jobs were built (`Settled.carry_change`)."""
        change = self.settled.carry_change
        if not carried or change is None:
            return None
        restored = [(pod.order, pod.order[1], pod.job_id) for job in change.left for pod in job.pods]
        return Since(change.previous, change.entered, restored)

    def _group_keys(self, carried: Collection[JobID]) -> Iterable[str]:
        """The keys of the PodGroup records less those of `carried` jobs: the last snapshot's followed
        through the records put or dropped since and how the carried jobs changed
        (`Settled.carry_change`) when it can be, else every record looked at."""
        records = self.records[POD_GROUPS.name]
        touched, self._groups_touched = self._groups_touched, set()
        if not carried:
            self._groups_shown, self._groups_excluding = {}, None
            return records.keys()
        change = self.settled.carry_change
        if change is None or change.previous is not self._groups_excluding:
            shown = {key: None for key in records if key not in carried}
        else:
            shown = self._groups_shown
            for entered in change.entered:
                shown.pop(entered, None)
            for key in [*(entry.job.uid for entry in change.left), *touched]:
                if key in records and key not in carried:
                    shown[key] = None
                else:
                    shown.pop(key, None)
        self._groups_shown, self._groups_excluding = shown, carried
        return shown.keys()

    def _pod_groups(self, carried: Collection[JobID] = ()) -> list[PodGroupSpec]:
        """The usable PodGroups with the phases our cycles decided, less those of `carried` jobs. A group
        whose decided phase has not echoed yet is the very object the last snapshot showed while neither
        its PodGroup nor that phase changed, so that its job is handed on (`BuiltJobs`)."""
        records = self.records[POD_GROUPS.name]
        groups: list[PodGroupSpec] = [
            spec for key in self._group_keys(carried) if (spec := records[key].spec) is not None
        ]
        phases, phased = self.phases, self._phased
        if phases:
            phased.keep(lambda key: key in carried and key in phases)
            groups = [
                spec if (phase := phases.get(spec.key)) is None else phased.show(spec.key, spec, phase, _phased)
                for spec in groups
            ]
        phased.close()
        return groups

    def snapshot(
        self, *, backlog: Collection[JobID] = frozenset(), token: object = None, settle: bool = False
    ) -> ClusterInfo:
        """Assemble a fresh snapshot the cycle owns; unusable objects are listed in its warnings.

        Objects go in creation order (then name), nodes in name order: the order watch events happened
        to arrive in never shows through a cycle (where Volcano iterates Go maps, the simulator lists
        objects in creation order, and so does this).

        `backlog` are the jobs the runner backed off for this cycle, under configuration `token`: those
        whose every task is pending are shared with the snapshots before and after this one while their
        objects do not change (`BacklogKeeper`), instead of being built again. With `settle` (a
        configuration that shares its backlog), the jobs no cycle under `token` can change are left out
        of the snapshot's jobs (`api.Settled`, kept by the store between snapshots).
        """
        self.drop_arrivals()
        self._pods_in_bulk = False
        nodes: list[NodeSpec] = sorted(self.specs(NODES), key=lambda node: node.name)
        queues = self._queues()
        pdbs: list[PdbSpec] = sorted(self.specs(PDBS), key=lambda pdb: pdb.key)
        quotas: list[ResourceQuotaSpec] = sorted(
            self.specs(RESOURCE_QUOTAS), key=lambda quota: (quota.namespace, quota.name)
        )
        if not settle and self.settled.entries:
            self.settled = Settled()
        carried = self._carried(token, nodes, queues) if settle else {}
        pods = self._pods(carried)
        groups = sorted(self._pod_groups(carried), key=lambda group: (group.creation, group.key))
        shared, inputs = self.backlog.prepare(
            backlog, token=token, pods=pods, groups=groups, queues=queues, shadow_phases=self.shadow_phases
        )
        cluster = ClusterInfo.build(
            nodes=nodes,
            pods=pods,
            queues=queues,
            pod_groups=groups,
            priority_classes=self.priority_classes(),
            pdbs=pdbs,
            resource_quotas=quotas,
            scheduler_name=self.scheduler_name,
            shadow_phases=self.shadow_phases,
            skipped_pods=self._skipped_pods(),
            invalid_queues=self._errors(QUEUES),
            invalid_pod_groups=self._errors(POD_GROUPS),
            backlog=shared,
            built_nodes=self.built_nodes,
            built_jobs=self.built_jobs,
            settled=self.settled if settle else None,
            token=token,
            carried=carried,
        )
        self.dirty, self.everything_dirty, self.fractional = set(), False, False
        self.backlog.admit(cluster, inputs)
        numas = {numa.name: numa for numa in self.specs(NUMATOPOLOGIES)}
        for name, node in cluster.nodes.items():  # a node built for an earlier snapshot had earlier figures
            node.numa = numas.get(name)
            node.usage = self.node_usage.get(name)
        cluster.hyper_nodes = self._topology(nodes)
        if cluster.hyper_nodes is not None:
            cluster.warnings.extend(cluster.hyper_nodes.problems)
        cluster.warnings[:0] = [error for kind in KINDS for error in self._errors(kind).values()]
        cluster.shard_nodes = self.shard_nodes
        return cluster

    def take_arrivals(self) -> tuple[list[JobInfo], int]:
        """Take the pods of this scheduler that arrived since the last snapshot (or the last call) and
        still wait for a node (no bind of ours in flight); return the one-pod jobs of those without a
        PodGroup, in creation order, built as a snapshot builds them (the fast path's arrivals:
        `actions.arrivals`), and how many others only a cycle takes (in a PodGroup, or held for the
        PodGroup controller)."""
        keys, self.arrivals = self.arrivals, {}
        pods, others = self._noted_pods(
            keys,
            gone=lambda key, pod: bool(pod.task.node_name) or key in self.assumed,
            cycle_only=lambda pod: bool(pod.group),
        )
        return self._one_pod_jobs(pods), others

    def drop_arrivals(self) -> None:
        """Forget the arrivals and binds elsewhere noted since the last snapshot: no session is kept to take
        them (the next one comes from a later snapshot, which holds them), and a standby, which takes no
        snapshot, would otherwise keep one key for every pod created and bound."""
        self.arrivals, self.bound_elsewhere = {}, {}

    def take_bound_elsewhere(self) -> tuple[list[tuple[JobInfo, str]], int]:
        """Take the pods of this scheduler without a PodGroup that someone else (another shard instance)
        bound since the last snapshot (or the last call) and that still hold their node; return their
        one-pod jobs, built as a snapshot builds them (the task bound), each with its node, in creation
        order, and how many others a kept session cannot take in (held for the PodGroup controller, or
        finished or releasing already)."""
        keys, self.bound_elsewhere = self.bound_elsewhere, {}
        pods, others = self._noted_pods(
            keys,
            gone=lambda _, pod: not pod.task.node_name,  # made anew under that name: the old one only freed room
            cycle_only=lambda pod: pod.task.status in _FREEING,
        )
        nodes = {pod.job_id: pod.task.node_name for pod in pods}
        return [(job, nodes[job.uid]) for job in self._one_pod_jobs(pods)], others

    def _noted_pods(
        self,
        keys: Iterable[str],
        *,
        gone: Callable[[str, ParsedPod], bool],
        cycle_only: Callable[[ParsedPod], bool],
    ) -> tuple[list[ParsedPod], int]:
        """The pods of `keys` the fast path takes: those still in the store and not `gone`; and how many
        others only a cycle takes (`cycle_only`, or held for the PodGroup controller)."""
        records = self.records[PODS.name]
        holds = self.grouping.holds if self.grouping is not None else None
        pods: list[ParsedPod] = []
        others = 0
        for key in keys:
            record = records.get(key)
            parsed: ParsedPod | None = record.spec if record is not None else None
            if parsed is None or gone(key, parsed):
                continue
            if cycle_only(parsed) or (holds is not None and parsed.owner is not None and holds(parsed)):
                others += 1
                continue
            pods.append(parsed)
        return pods, others

    def _one_pod_jobs(self, pods: list[ParsedPod]) -> list[JobInfo]:
        """The one-pod jobs of `pods` (without a PodGroup), in creation order, built as a snapshot builds them."""
        if not pods:
            return []
        pods.sort(key=lambda pod: pod.order)
        cluster = ClusterInfo.build(
            nodes=(),
            pods=pods,
            queues=self._queues(),
            pod_groups=(),
            priority_classes=self.priority_classes(),
            scheduler_name=self.scheduler_name,
            shadow_phases=self.shadow_phases,
        )
        return list(cluster.jobs.values())

    def _queues(self) -> list[QueueInfo]:
        return sorted(self.specs(QUEUES), key=lambda queue: (queue.creation, queue.name))

    def _carried(self, token: object, nodes: list[NodeSpec], queues: list[QueueInfo]) -> dict[JobID, BuiltJob]:
        """The settled jobs of the last snapshot the next one takes as they are, their pods and PodGroups
        unread: none of their objects or our overlays on them changed (`dirty`), nor a PriorityClass,
        the configuration or any node spec (their pods sit where they sat), their queues exist, and no
        job requests a fraction (`api.Settled`)."""
        settled = self.settled
        if (
            not settled.entries
            or settled.token is not token
            or settled.fractional
            or self.fractional
            or self.everything_dirty
            or not self.built_nodes.covers(nodes)
        ):
            return {}
        names = {queue.uid for queue in queues}
        names.add(QueueID(DEFAULT_QUEUE))
        if not names.issuperset(settled.queues()):
            return {}
        return settled.carry(self.dirty)

    def _topology(self, nodes: list[NodeSpec]) -> HyperNodeTopology | None:
        """The HyperNode tree over `nodes` (the snapshot's, in its order), resolved once per change of a
        HyperNode or a node; None when there is no HyperNode."""
        if not self.records[HYPER_NODES.name]:
            return None
        if self._hyper_nodes is None:
            specs: list[HyperNodeSpec] = self.specs(HYPER_NODES)
            self._hyper_nodes = HyperNodeTopology.resolve(specs, nodes)
        return self._hyper_nodes

    def _errors(self, kind: Kind) -> dict[str, str]:
        """Return the parse errors of `kind`'s unusable objects, by key."""
        records = self.records[kind.name]
        return {key: records[key].error for key in self.unusable[kind.name]}

    def _skipped_pods(self) -> list[SkippedPod]:
        """Return this scheduler's unbound pods that could not be parsed, each with its error."""
        skipped = []
        records = self.records[PODS.name]
        for key in self.unusable[PODS.name]:
            record = records[key]
            manifest = record.manifest()
            spec = manifest.get("spec") if manifest is not None else None
            ours = isinstance(spec, Mapping) and spec.get("schedulerName") == self.scheduler_name
            if ours and isinstance(spec, Mapping) and not spec.get("nodeName"):
                namespace, _, name = key.partition("/")
                message = f"{self.scheduler_name} cannot read this pod and leaves it aside: {record.error}"
                skipped.append(SkippedPod(namespace, name, record.uid or name, message, POD_SCHEDULER_ERROR))
        return skipped

    def counts(self) -> dict[str, int]:
        """Return the number of records per kind (for logs)."""
        return {kind: len(records) for kind, records in self.records.items()}


class Listing:
    """One full LIST of a kind being reconciled with the store, page by page.

    A listed object is taken unless a newer one or a newer deletion was seen. At `finish`, a record the
    LIST lacked is dropped unless it is newer than the LIST (a missed DELETE leaves a ghost that would
    hold capacity forever). `started` is when the LIST was sent, which settles stale overlays.
    """

    def __init__(self, store: Store, kind: Kind, started: float) -> None:
        self.store = store
        self.kind = kind
        self.started = started
        self.listed: set[str] = set()

    def add(self, items: Iterable[Mapping[str, Any]]) -> None:
        """Take one page of listed objects (when the store's hold ends, while it is held)."""
        self.store.run_or_hold(functools.partial(self._add, list(items)))

    def _add(self, items: list[Mapping[str, Any]]) -> None:
        store, kind = self.store, self.kind
        records = store.records[kind.name]
        tombstones = store.tombstones[kind.name]
        for obj in items:
            if not isinstance(obj, Mapping):
                log.warning("listed_object_skipped", kind=kind.name, reason=f"not an object: {obj!r:.80}")
                continue
            key = object_key(obj, kind)
            self.listed.add(key)
            obj_version = resource_version(obj)
            current = records.get(key)
            if current is not None and current.version >= obj_version:
                continue
            if tombstones.get(key, -1) > obj_version:
                continue
            store._put(kind, key, obj, obj_version, str((obj.get("metadata") or {}).get("uid") or ""))

    def finish(self, *, version: int) -> None:
        """End the LIST taken at resourceVersion `version`: drop ghosts, settle overlays, mark synced (when
        the store's hold ends, while it is held)."""
        self.store.run_or_hold(functools.partial(self._finish, version))

    def _finish(self, version: int) -> None:
        store, kind = self.store, self.kind
        records = store.records[kind.name]
        for key in [key for key, record in records.items() if key not in self.listed and record.version <= version]:
            log.info("ghost_dropped", kind=kind.name, object=key)
            store._drop(kind, key)
        store.tombstones[kind.name] = {key: v for key, v in store.tombstones[kind.name].items() if v > version}
        if kind is PODS:
            store._pods_in_bulk = False
            store._settle_overlays(listed_unbound=store._unbound_pods(), started=self.started)
        if kind.name not in store.synced:
            store.synced.add(kind.name)
            log.info("kind_synced", kind=kind.name, objects=len(records))
            store.touch()
        store.changed.set()


#: Fields of QueueInfo and PodGroupSpec the scheduler's own writes change, and the prefix of its annotations.
_WRITTEN_FIELDS = frozenset({"annotations", "state_set", "resource_version", "conditions", "phase"})
_OWN_ANNOTATIONS = "scheduling.py-volcano.io/"
#: Jobs noted as changed beyond which the store notes "everything" instead (bounds a standby's memory).
_MAX_NOTED_JOBS = 50_000
#: Task statuses that hold nothing, or will not for long: a pod turning one of them frees resources.
_FREEING = frozenset({TaskStatus.SUCCEEDED, TaskStatus.FAILED, TaskStatus.RELEASING})


def _fingerprint(spec: QueueInfo | PodGroupSpec | None) -> tuple[object, ...] | None:
    """What of a parsed Queue or PodGroup others may change, comparable (QueueInfo has no equality): what
    the scheduler writes itself (status counts, conditions, that it set a state, the resourceVersion its
    writes move, its own annotations) is left out, so its writes after a cycle wake no job."""
    if spec is None:
        return None
    values = (getattr(spec, f.name) for f in dataclasses.fields(spec) if f.name not in _WRITTEN_FIELDS)
    read = tuple(_resource_key(value) if isinstance(value, Resource) else value for value in values)
    theirs = sorted((k, v) for k, v in spec.annotations.items() if not k.startswith(_OWN_ANNOTATIONS))
    return (*read, tuple(theirs))


def _resource_key(resource: Resource) -> tuple[object, ...]:
    return (resource.milli_cpu, resource.memory, resource.max_task_num, tuple(sorted(resource.scalars.items())))


def _same_node(before: NodeSpec | None, after: NodeSpec | None) -> bool:
    """Whether two parsed nodes agree on everything a cycle reads (a kubelet heartbeat changes none of it)."""
    if before is None or after is None:
        return before is after
    return (
        before.labels == after.labels
        and before.taints == after.taints
        and (before.unschedulable, before.ready) == (after.unschedulable, after.ready)
        and _same_resource(before.allocatable, after.allocatable)
        and _same_resource(before.capacity, after.capacity)
    )


def _same_resource(a: Resource, b: Resource) -> bool:
    return (a.milli_cpu, a.memory, a.max_task_num, a.scalars) == (b.milli_cpu, b.memory, b.max_task_num, b.scalars)


def _settled_before(pending: Pending, started: float) -> bool:
    return pending.settled is not None and pending.settled < started


def _binding(pod: ParsedPod, bind: Pending) -> ParsedPod:
    """The pod on the node of its bind in flight (Binding), with the annotations the bind writes."""
    task = pod.task.clone()
    task.node_name, task.status = bind.node, TaskStatus.BINDING
    if bind.annotations:
        task.annotations = {**task.annotations, **bind.annotations}
    return dataclasses.replace(pod, task=task)


def _releasing(pod: ParsedPod, _eviction: Pending) -> ParsedPod:
    """The pod as its eviction in flight shows it: Releasing."""
    task = pod.task.clone()
    task.status = TaskStatus.RELEASING
    return dataclasses.replace(pod, task=task)


def _phased(group: PodGroupSpec, phase: PodGroupPhase) -> PodGroupSpec:
    """The PodGroup with the phase a cycle decided for it."""
    return dataclasses.replace(group, phase=phase)
