"""Registration and dispatch of every extension point a plugin can fill (Volcano's session_plugins.go).

Plugins call `add_<point>_fn(plugin_name, fn)` from `on_session_open`; actions call the dispatch
method of the same name. After every plugin opened, `resolve` groups the functions by tier, keeping
only plugins whose switch for that point is on, so dispatch walks plain lists.

The points that can hold a job back (enqueueable, job valid, allocatable, overused, pre-predicate)
note the first refusal each job (or queue) meets in a cycle: the action running and the plugin
that refused, which the cycle's result reports for `py-volcano explain`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from py_volcano.api import JobID, JobInfo, NodeInfo, QueueID, QueueInfo, TaskInfo, Vote
from py_volcano.framework import dispatch

if TYPE_CHECKING:
    from py_volcano.framework.conf import PluginOption

__all__ = [
    "SWITCHES",
    "CycleState",
    "EventHandler",
    "ExtensionPoints",
    "PredicateStatus",
    "Refusal",
    "ValidateResult",
]


@dataclass(slots=True, frozen=True)
class PredicateStatus:
    """Why a node does not suit a task; `resolvable` when evicting pods could change the answer."""

    reason: str
    resolvable: bool = False


@dataclass(slots=True, frozen=True)
class ValidateResult:
    """A job-valid verdict with its reason and message."""

    passed: bool
    reason: str = ""
    message: str = ""


@dataclass(slots=True, frozen=True)
class Refusal:
    """Where a job was first held back in a cycle: the action running, the extension point, the plugin."""

    action: str
    point: str
    plugin: str


@dataclass(slots=True, frozen=True)
class EventHandler:
    """Callbacks run when a statement allocates (or pipelines) and deallocates (or evicts) a task."""

    allocate: Callable[[TaskInfo], None] | None = None
    deallocate: Callable[[TaskInfo], None] | None = None


class EvictionKind(Enum):
    """Which gang-aware action asks `unified_evictable` for victims."""

    GANG_PREEMPT = "gangpreempt"
    GANG_RECLAIM = "gangreclaim"


@dataclass(slots=True, frozen=True)
class EvictionContext:
    """Who asks for victims at `unified_evictable`: the action's kind and the job it makes room for."""

    kind: EvictionKind
    job: JobInfo


class Cloneable(Protocol):
    """Per-plugin state kept in a CycleState."""

    def clone(self) -> Cloneable: ...


class CycleState:
    """Plugin states for one preemptor, cloned for each candidate node in a dry run."""

    __slots__ = ("_states",)

    def __init__(self) -> None:
        self._states: dict[str, Cloneable] = {}

    def read(self, key: str) -> Any:
        """Return the state stored under `key`, or None."""
        return self._states.get(key)

    def write(self, key: str, state: Cloneable) -> None:
        """Store a plugin's state."""
        self._states[key] = state

    def clone(self) -> CycleState:
        """Return a copy with every state cloned."""
        copy = CycleState()
        copy._states = {key: state.clone() for key, state in self._states.items()}
        return copy


SWITCHES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "job_order": ("job_order",),
        "namespace_order": (),
        "hierarchy": (),
        "job_ready": ("job_ready",),
        "job_pipelined": ("job_pipelined",),
        "task_order": ("task_order",),
        "preemptable": ("preemptable",),
        "reclaimable": ("reclaimable",),
        "preemptive": ("preemptive",),
        "queue_order": ("queue_order", "victim_queue_order"),
        "cluster_order": (),
        "predicate": ("predicate", "batch_predicate", "pre_predicate", "simulate_predicate"),
        "best_node": (),
        "node_order": ("node_order", "batch_node_order"),
        "target_job": (),
        "reserved_nodes": (),
        "job_enqueued": ("job_enqueueable", "job_enqueued"),
        "victim": ("victim_tasks",),
        "job_starving": ("job_starving",),
        "overused": ("overused",),
        "allocatable": ("allocatable", "simulate_allocatable"),
        "hyper_node_order": ("hyper_node_order",),
        "hyper_node_gradient": ("hyper_node_gradient",),
    }
)
"""Volcano's plugin switches (`enabledXxx` / `enableXxx`, unset = on), each with the extension points it
turns off for its plugin. Points no switch names (evictable, unified_evictable, job_valid, simulate
add/remove) are always on, as in Volcano; switches naming no point are accepted and read by plugins
(`hierarchy`) or have nothing to turn off."""

_SWITCH_OF_POINT = {point: switch for switch, points in SWITCHES.items() for point in points}

VictimFn = Callable[[TaskInfo, list[TaskInfo]], tuple[list[TaskInfo], Vote]]
UnifiedVictimFn = Callable[[EvictionContext, list[TaskInfo]], tuple[list[TaskInfo], Vote]]


class ExtensionPoints:
    """The function tables of one session and the dispatch methods over them."""

    def __init__(self, tiers: Sequence[Sequence[PluginOption]]) -> None:
        self.tiers = tiers
        self._fns: dict[str, dict[str, Callable[..., Any]]] = {}
        self._tiered: dict[str, list[list[Callable[..., Any]]]] = {}
        self._names: dict[str, list[list[str]]] = {}
        self._row_keys: dict[str, Callable[[TaskInfo], Hashable | None]] = {}
        self._mask_keys: dict[str, Callable[[TaskInfo], Hashable | None]] = {}
        self.event_handlers: list[EventHandler] = []
        #: The action running (set by the cycle), for the refusals below.
        self.action = ""
        self.job_refusals: dict[JobID, Refusal] = {}
        self.queue_refusals: dict[QueueID, Refusal] = {}

    def release(self) -> None:
        """Drop every registered function and event handler (they hold their plugins, which hold the
        session), so a closed session is freed by reference counting, not by the cyclic collector."""
        self._fns.clear()
        self._tiered.clear()
        self._names.clear()
        self._row_keys.clear()
        self._mask_keys.clear()
        self.event_handlers.clear()

    def _add(self, point: str, plugin: str, fn: Callable[..., Any]) -> None:
        self._fns.setdefault(point, {})[plugin] = fn
        self._tiered.pop(point, None)

    def plugins_at(self, point: str) -> set[str]:
        """Return the names of the enabled plugins that registered a function at `point`."""
        return {name for tier in self._names_at(point) for name in tier}

    def _names_at(self, point: str) -> list[list[str]]:
        self._tier_fns(point)
        return self._names[point]

    def _tier_fns(self, point: str) -> list[list[Callable[..., Any]]]:
        tiered = self._tiered.get(point)
        if tiered is None:
            fns = self._fns.get(point, {})
            switch = _SWITCH_OF_POINT.get(point)
            names = [
                [option.name for option in tier if option.name in fns and (switch is None or option.is_enabled(switch))]
                for tier in self.tiers
            ]
            self._names[point] = [tier for tier in names if tier]
            tiered = self._tiered[point] = [[fns[name] for name in tier] for tier in self._names[point]]
        return tiered

    def _refused(
        self, point: str, at: dispatch.Position, *, job: JobID | None = None, queue: QueueID | None = None
    ) -> None:
        """Note the first refusal of the job (or queue) this cycle: the plugin at `at` among the point's tiers."""
        t, i = at
        refusal = Refusal(self.action, point, self._names[point][t][i])
        if job is not None:
            self.job_refusals.setdefault(job, refusal)
        if queue is not None:
            self.queue_refusals.setdefault(queue, refusal)

    # Registration ---------------------------------------------------------------------------

    def add_job_order_fn(self, plugin: str, fn: Callable[[JobInfo, JobInfo], int]) -> None:
        """Register a job ordering: negative when `l` goes first."""
        self._add("job_order", plugin, fn)

    def add_queue_order_fn(self, plugin: str, fn: Callable[[QueueInfo, QueueInfo], int]) -> None:
        """Register a queue ordering."""
        self._add("queue_order", plugin, fn)

    def add_victim_queue_order_fn(self, plugin: str, fn: Callable[[QueueInfo, QueueInfo, QueueInfo], int]) -> None:
        """Register an ordering of victim queues (third argument: the preemptor's queue)."""
        self._add("victim_queue_order", plugin, fn)

    def add_task_order_fn(self, plugin: str, fn: Callable[[TaskInfo, TaskInfo], int]) -> None:
        """Register a task ordering."""
        self._add("task_order", plugin, fn)

    def add_predicate_fn(self, plugin: str, fn: Callable[[TaskInfo, NodeInfo], PredicateStatus | None]) -> None:
        """Register a per-node filter; None means the node suits the task."""
        self._add("predicate", plugin, fn)

    def add_batch_predicate_fn(
        self,
        plugin: str,
        fn: Callable[[TaskInfo, bool], Any],
        mask_key: Callable[[TaskInfo], Hashable | None] | None = None,
    ) -> None:
        """Register a vectorised filter: `fn(task, for_preempt)` returns a bool mask over `ssn.node_list`.

        `mask_key(task)`, when given, returns a key such that `fn(task, False)` is the same mask for every
        task of that key until a node's tasks change (a write to the node arrays), or None
        (`framework.node_picks`).
        """
        self._add("batch_predicate", plugin, fn)
        _keep(self._mask_keys, plugin, mask_key)

    def add_pre_predicate_fn(self, plugin: str, fn: Callable[[TaskInfo, CycleState], str | None]) -> None:
        """Register a per-task check run before filtering nodes (may store state for simulations)."""
        self._add("pre_predicate", plugin, fn)

    def add_node_order_fn(self, plugin: str, fn: Callable[[TaskInfo, NodeInfo], float]) -> None:
        """Register a per-node score."""
        self._add("node_order", plugin, fn)

    def add_batch_node_order_fn(
        self,
        plugin: str,
        fn: Callable[[TaskInfo, Any], Any],
        row_key: Callable[[TaskInfo], Hashable | None] | None = None,
    ) -> None:
        """Register a vectorised score: (task, node row indices) -> scores for those rows.

        `row_key(task)`, when given, returns a key such that the task's score at a node depends on that
        key and that node's state alone, or None when it depends on more (`framework.node_scores`).
        """
        self._add("batch_node_order", plugin, fn)
        _keep(self._row_keys, plugin, row_key)

    def score_key(self, task: TaskInfo) -> tuple[Hashable, ...] | None:
        """The key of the task's summed node scores when every enabled batch score gives one for it and no
        per-node score is registered (`framework.node_scores`); None otherwise."""
        if self._tier_fns("node_order"):
            return None
        keys = []
        for tier in self._names_at("batch_node_order"):
            for name in tier:
                row_key = self._row_keys.get(name)
                key = row_key(task) if row_key is not None else None
                if key is None:
                    return None
                keys.append(key)
        return tuple(keys)

    def add_overused_fn(self, plugin: str, fn: Callable[[QueueInfo], bool]) -> None:
        """Register a queue-overused check."""
        self._add("overused", plugin, fn)

    def add_allocatable_fn(self, plugin: str, fn: Callable[[QueueInfo, TaskInfo], bool]) -> None:
        """Register a queue quota check for one more task."""
        self._add("allocatable", plugin, fn)

    def add_preemptive_fn(self, plugin: str, fn: Callable[[QueueInfo, TaskInfo], bool]) -> None:
        """Register whether a queue may reclaim for a task."""
        self._add("preemptive", plugin, fn)

    def add_preemptable_fn(self, plugin: str, fn: VictimFn) -> None:
        """Register a victim filter for preempt."""
        self._add("preemptable", plugin, fn)

    def add_reclaimable_fn(self, plugin: str, fn: VictimFn) -> None:
        """Register a victim filter for reclaim."""
        self._add("reclaimable", plugin, fn)

    def add_evictable_fn(self, plugin: str, fn: Callable[[TaskInfo], bool]) -> None:
        """Register a hard victim filter: a task it refuses is never offered to preemptable or reclaimable fns.

        Tier rules can let a later tier pick victims an earlier one refused; a hard filter holds whatever
        the tiers decide (conformance uses it so that critical pods are never evicted).
        """
        self._add("evictable", plugin, fn)

    def add_unified_evictable_fn(self, plugin: str, fn: UnifiedVictimFn) -> None:
        """Register a victim filter for the gang-aware actions (gangpreempt, gangreclaim)."""
        self._add("unified_evictable", plugin, fn)

    def add_victim_tasks_fn(self, plugin: str, fn: Callable[[list[TaskInfo]], list[TaskInfo]]) -> None:
        """Register a chooser of tasks to evict with no preemptor (shuffle): running tasks in, victims out."""
        self._add("victim_tasks", plugin, fn)

    def add_job_valid_fn(self, plugin: str, fn: Callable[[JobInfo], ValidateResult | None]) -> None:
        """Register a job validity check."""
        self._add("job_valid", plugin, fn)

    def add_job_ready_fn(self, plugin: str, fn: Callable[[JobInfo], bool]) -> None:
        """Register a job-ready check."""
        self._add("job_ready", plugin, fn)

    def add_job_pipelined_fn(self, plugin: str, fn: Callable[[JobInfo], Vote]) -> None:
        """Register a job-pipelined vote."""
        self._add("job_pipelined", plugin, fn)

    def add_job_starving_fn(self, plugin: str, fn: Callable[[JobInfo], bool]) -> None:
        """Register a job-starving check."""
        self._add("job_starving", plugin, fn)

    def add_job_enqueueable_fn(self, plugin: str, fn: Callable[[JobInfo], Vote]) -> None:
        """Register an enqueue admission vote."""
        self._add("job_enqueueable", plugin, fn)

    def add_job_enqueued_fn(self, plugin: str, fn: Callable[[JobInfo], None]) -> None:
        """Register a callback run when a job is admitted."""
        self._add("job_enqueued", plugin, fn)

    def add_simulate_add_task_fn(
        self, plugin: str, fn: Callable[[CycleState, TaskInfo, TaskInfo, NodeInfo], None]
    ) -> None:
        """Register a dry-run hook: (state, task to schedule, task added back, node)."""
        self._add("simulate_add_task", plugin, fn)

    def add_simulate_remove_task_fn(
        self, plugin: str, fn: Callable[[CycleState, TaskInfo, TaskInfo, NodeInfo], None]
    ) -> None:
        """Register a dry-run hook: (state, task to schedule, task removed, node)."""
        self._add("simulate_remove_task", plugin, fn)

    def add_simulate_allocatable_fn(self, plugin: str, fn: Callable[[CycleState, QueueInfo, TaskInfo], bool]) -> None:
        """Register a dry-run quota check."""
        self._add("simulate_allocatable", plugin, fn)

    def add_simulate_predicate_fn(
        self, plugin: str, fn: Callable[[CycleState, TaskInfo, NodeInfo], PredicateStatus | None]
    ) -> None:
        """Register a dry-run node filter."""
        self._add("simulate_predicate", plugin, fn)

    def add_hyper_node_order_fn(self, plugin: str, fn: Callable[[JobInfo, list[int]], list[float]]) -> None:
        """Register a hypernode score: (job, candidate hypernodes of `ssn.hyper_nodes`) -> one score each."""
        self._add("hyper_node_order", plugin, fn)

    def add_hyper_node_gradient_fn(self, plugin: str, fn: Callable[[JobInfo, int], list[list[int]]]) -> None:
        """Register a hypernode search: (job, root hypernode) -> the hypernodes to try, in groups tried in turn."""
        self._add("hyper_node_gradient", plugin, fn)

    def add_event_handler(self, handler: EventHandler) -> None:
        """Register allocate/deallocate callbacks."""
        self.event_handlers.append(handler)

    # Dispatch -------------------------------------------------------------------------------

    def job_order_compare(self, l: JobInfo, r: JobInfo) -> int:
        """The job order plugins' first non-zero answer (negative when `l` goes first); 0 when they tie."""
        return dispatch.first_nonzero(self._tier_fns("job_order"), l, r)

    def job_order_fn(self, l: JobInfo, r: JobInfo) -> bool:
        """True when `l` goes before `r`; ties by creation time, then id."""
        result = self.job_order_compare(l, r)
        if result != 0:
            return result < 0
        return (l.creation, l.uid) < (r.creation, r.uid)

    def queue_order_fn(self, l: QueueInfo, r: QueueInfo) -> bool:
        """True when queue `l` goes before `r`; ties by creation time, then name."""
        result = dispatch.first_nonzero(self._tier_fns("queue_order"), l, r)
        if result != 0:
            return result < 0
        return (l.creation, l.name) < (r.creation, r.name)

    def victim_queue_order_fn(self, l: QueueInfo, r: QueueInfo, preemptor: QueueInfo) -> bool:
        """True when victims are taken from `l` before `r`: by default the reverse of queue order."""
        result = dispatch.first_nonzero(self._tier_fns("victim_queue_order"), l, r, preemptor)
        if result != 0:
            return result < 0
        return self.queue_order_fn(r, l)

    def task_order_fn(self, l: TaskInfo, r: TaskInfo) -> bool:
        """True when task `l` goes before `r`; ties as Volcano's CompareTask: by name index, creation time, id."""
        result = dispatch.first_nonzero(self._tier_fns("task_order"), l, r)
        if result != 0:
            return result < 0
        if l.index is not None and r.index is not None and l.index != r.index:
            return l.index < r.index
        return (l.creation, l.uid) < (r.creation, r.uid)

    def overused(self, queue: QueueInfo) -> bool:
        """True when some plugin finds the queue overused."""
        at = dispatch.first_true(self._tier_fns("overused"), queue)
        if at is None:
            return False
        self._refused("overused", at, queue=queue.uid)
        return True

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """True unless some plugin's quota refuses one more task."""
        at = dispatch.first_false(self._tier_fns("allocatable"), queue, task)
        if at is None:
            return True
        self._refused("allocatable", at, job=task.job)
        return False

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """True unless some plugin refuses that the queue reclaims for the task."""
        return dispatch.all_pass(self._tier_fns("preemptive"), queue, task)

    def _evictable(self, tasks: list[TaskInfo]) -> list[TaskInfo]:
        filters = [fn for tier in self._tier_fns("evictable") for fn in tier]
        if not filters:
            return tasks
        return [task for task in tasks if all(fn(task) for fn in filters)]

    def preemptable(self, preemptor: TaskInfo, preemptees: list[TaskInfo]) -> list[TaskInfo]:
        """Return the victims the plugins agree on (hard filters, then tiered intersection)."""
        candidates = self._evictable(preemptees)
        return dispatch.tiered_victims(self._tier_fns("preemptable"), preemptor, candidates) if candidates else []

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> list[TaskInfo]:
        """Return the reclaim victims the plugins agree on (hard filters, then tiered intersection)."""
        candidates = self._evictable(reclaimees)
        return dispatch.tiered_victims(self._tier_fns("reclaimable"), reclaimer, candidates) if candidates else []

    def unified_evictable(self, context: EvictionContext, candidates: list[TaskInfo]) -> list[TaskInfo]:
        """Return the gang-aware victims the plugins agree on (hard filters, then tiered intersection)."""
        allowed = self._evictable(candidates)
        return dispatch.tiered_victims(self._tier_fns("unified_evictable"), context, allowed) if allowed else []

    def victim_tasks(self, tasks: list[TaskInfo]) -> list[TaskInfo]:
        """Return the tasks to evict: the union over a tier's plugins, a tier choosing none deferring to the
        next; the hard filters hold here too (Volcano applies none)."""
        return self._evictable(dispatch.tiered_union(self._tier_fns("victim_tasks"), tasks))

    def job_valid(self, job: JobInfo) -> ValidateResult | None:
        """Return the first failing verdict, or None when the job is valid."""
        for t, tier in enumerate(self._tier_fns("job_valid")):
            for i, fn in enumerate(tier):
                result = fn(job)
                if result is not None and not result.passed:
                    self._refused("job_valid", (t, i), job=job.uid)
                    return result  # type: ignore[no-any-return]
        return None

    def job_ready(self, job: JobInfo) -> bool:
        """True unless some plugin says not ready (true when none implements it)."""
        return dispatch.all_pass(self._tier_fns("job_ready"), job)

    def job_pipelined(self, job: JobInfo) -> bool:
        """Tiered vote; true when no plugin implements it."""
        return dispatch.tiered_vote(self._tier_fns("job_pipelined"), job)

    def job_starving(self, job: JobInfo) -> bool:
        """Tiered check; false when no plugin implements it."""
        return dispatch.tiered_starving(self._tier_fns("job_starving"), job)

    def job_enqueueable(self, job: JobInfo) -> bool:
        """Tiered admission vote; true when every plugin abstains."""
        at = dispatch.tiered_veto(self._tier_fns("job_enqueueable"), job)
        if at is None:
            return True
        self._refused("job_enqueueable", at, job=job.uid)
        return False

    def job_enqueued(self, job: JobInfo) -> None:
        """Tell every plugin the job was admitted."""
        for tier in self._tier_fns("job_enqueued"):
            for fn in tier:
                fn(job)

    def pre_predicate(self, task: TaskInfo, state: CycleState) -> str | None:
        """Run every pre-predicate; return the first failure."""
        for t, tier in enumerate(self._tier_fns("pre_predicate")):
            for i, fn in enumerate(tier):
                failure = fn(task, state)
                if failure:
                    self._refused("pre_predicate", (t, i), job=task.job)
                    return failure  # type: ignore[no-any-return]
        return None

    def predicate(self, task: TaskInfo, node: NodeInfo) -> PredicateStatus | None:
        """Return the first failing per-node filter, or None."""
        for tier in self._tier_fns("predicate"):
            for fn in tier:
                status = fn(task, node)
                if status is not None:
                    return status  # type: ignore[no-any-return]
        return None

    def hyper_node_gradients(self, job: JobInfo, root: int) -> list[list[int]]:
        """The first plugin's hypernode groups for the job under `root`; `[[root]]` when none registered one."""
        for tier in self._tier_fns("hyper_node_gradient"):
            for fn in tier:
                return fn(job, root)  # type: ignore[no-any-return]
        return [[root]]

    def hyper_node_order(self, job: JobInfo, candidates: list[int]) -> list[float]:
        """Sum, per candidate hypernode, every enabled plugin's score (0 when none scores)."""
        scores = [0.0] * len(candidates)
        for tier in self._tier_fns("hyper_node_order"):
            for fn in tier:
                scores = [total + score for total, score in zip(scores, fn(job, candidates), strict=True)]
        return scores

    def simulate_remove_task(self, state: CycleState, task: TaskInfo, removed: TaskInfo, node: NodeInfo) -> None:
        """Run the dry-run removal hooks."""
        for tier in self._tier_fns("simulate_remove_task"):
            for fn in tier:
                fn(state, task, removed, node)

    def simulate_add_task(self, state: CycleState, task: TaskInfo, added: TaskInfo, node: NodeInfo) -> None:
        """Run the dry-run add-back hooks."""
        for tier in self._tier_fns("simulate_add_task"):
            for fn in tier:
                fn(state, task, added, node)

    def simulate_allocatable(self, state: CycleState, queue: QueueInfo, task: TaskInfo) -> bool:
        """True unless a dry-run quota check refuses."""
        return dispatch.all_pass(self._tier_fns("simulate_allocatable"), state, queue, task)

    def simulate_predicate(self, state: CycleState, task: TaskInfo, node: NodeInfo) -> PredicateStatus | None:
        """Return the first failing dry-run filter, or None."""
        for tier in self._tier_fns("simulate_predicate"):
            for fn in tier:
                status = fn(state, task, node)
                if status is not None:
                    return status  # type: ignore[no-any-return]
        return None


def _keep(
    keys: dict[str, Callable[[TaskInfo], Hashable | None]],
    plugin: str,
    key_of: Callable[[TaskInfo], Hashable | None] | None,
) -> None:
    """Keep `plugin`'s key function in `keys`, or drop the one it had when it registers without."""
    if key_of is None:
        keys.pop(plugin, None)
    else:
        keys[plugin] = key_of
