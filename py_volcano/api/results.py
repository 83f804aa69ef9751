"""What a cycle returns: its decisions and the status it wants on PodGroups, pods and Queues.

The framework builds a `CycleResult` when a session closes; the cache's binder and status writer
apply it, the simulator records it. It lives in `api` so both layers can read it: everything the
writer writes is decided here, the writer only diffs it against what it last wrote.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from py_volcano.api.job_info import TaskInfo
from py_volcano.api.records import hot_record
from py_volcano.api.resource_info import Resource
from py_volcano.api.settled import SettledUpdate
from py_volcano.api.types import JobID, PodGroupPhase, QueueState, TaskID

__all__ = [
    "EXPLAIN_ANNOTATION",
    "GANG_READY",
    "NOT_ENOUGH_PODS",
    "NOT_ENOUGH_RESOURCES",
    "POD_SCHEDULER_ERROR",
    "POD_UNSCHEDULABLE",
    "QUEUE_FIGURES_ANNOTATION",
    "SCHEDULED",
    "UNSCHEDULABLE",
    "ConditionUpdate",
    "CycleResult",
    "JobWait",
    "PodGroupStatus",
    "PodWait",
    "QueueFigures",
    "QueueStatus",
    "WaitReason",
]

#: PodGroup condition types the scheduler owns.
UNSCHEDULABLE = "Unschedulable"
SCHEDULED = "Scheduled"
#: Reasons of a PodGroup's Unschedulable condition (Volcano's).
NOT_ENOUGH_RESOURCES = "NotEnoughResources"
NOT_ENOUGH_PODS = "NotEnoughPods"
#: Volcano's gang plugin writes this sentence as the reason of a group's Scheduled condition.
GANG_READY = "tasks in gang are ready to be scheduled"
#: The reason of a waiting pod's PodScheduled=False condition (kube-scheduler's).
POD_UNSCHEDULABLE = "Unschedulable"
#: kube-scheduler's reason for a pod it cannot take up for an error, not for lack of room: here a pod
#: that cannot be parsed (autoscalers read `Unschedulable` as a call for more nodes; this is not one).
POD_SCHEDULER_ERROR = "SchedulerError"
#: The PodGroup annotation holding a waiting job's `JobWait` (Volcano's status schema has no room for it).
EXPLAIN_ANNOTATION = "scheduling.py-volcano.io/explain"
#: The Queue annotation holding what the queue plugin computed: deserved, capability, share.
QUEUE_FIGURES_ANNOTATION = "scheduling.py-volcano.io/figures"


@dataclass(slots=True, frozen=True)
class ConditionUpdate:
    """The type, status, reason and message a condition should have; times are the writer's business.

    A False status retracts: it is written only over a True condition of the type, never added.
    """

    type: str
    status: str
    reason: str
    message: str = ""


@dataclass(slots=True)
class QueueFigures:
    """A queue's accounting at the end of a cycle, as the queue plugin computed it."""

    weight: int = 1
    allocated: Resource = field(default_factory=Resource)
    request: Resource = field(default_factory=Resource)
    deserved: Resource | None = None
    capability: Resource | None = None
    real_capability: Resource | None = None
    guarantee: Resource | None = None
    inqueue: Resource | None = None
    share: float = 0.0
    overused: bool = False
    parent: str = ""


@dataclass(slots=True, frozen=True)
class QueueStatus:
    """The status the scheduler writes on a Queue after a cycle: state, PodGroups per phase, allocated.

    The counts include the one-pod groups of pods without a PodGroup, as Volcano's PodGroups for them would.
    The state belongs to whoever opens and closes queues (`py-volcano queue`, Volcano's queue controller):
    it is written only while the Queue has none (`state_set` False), and only onto the `resource_version`
    the cycle read, so a close is never undone (not even one that lands while the cycle runs).
    """

    state: QueueState = QueueState.OPEN
    state_set: bool = True
    resource_version: str = ""
    pending: int = 0
    inqueue: int = 0
    running: int = 0
    unknown: int = 0
    completed: int = 0
    allocated: Resource = field(default_factory=Resource)


@hot_record
class PodGroupStatus:
    """The status the scheduler writes on a PodGroup after a cycle, and the object it goes to.

    `unschedulable` is the message of the group's Unschedulable condition ("" when the cycle found no
    reason); `conditions` are the conditions the cycle sets, in order. `observed_conditions` are the
    object's as the snapshot saw them, `observed_explanation` its `EXPLAIN_ANNOTATION` ("" when absent).
    A shadow group (a pod without a PodGroup) is not written.
    """

    phase: PodGroupPhase
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    pending: int = 0
    unschedulable: str = ""
    queue: str = ""
    shadow: bool = False
    conditions: tuple[ConditionUpdate, ...] = ()
    namespace: str = ""
    name: str = ""
    uid: str = ""
    observed_conditions: tuple[Mapping[str, Any], ...] = ()
    observed_explanation: str = ""


class WaitReason(Enum):
    """Why a job the cycle did not place waits, in one CamelCase word."""

    QUEUE_NOT_FOUND = "QueueNotFound"
    QUEUE_CLOSED = "QueueClosed"
    ENQUEUE_REJECTED = "EnqueueRejected"
    JOB_INVALID = "JobInvalid"
    QUEUE_QUOTA = "QueueQuotaExceeded"
    PRE_PREDICATE_FAILED = "PrePredicateFailed"
    NO_NODE_FITS = "NoNodeFits"
    QUEUE_OVERUSED = "QueueOverused"
    PIPELINED = "Pipelined"
    NOT_TAKEN_UP = "NotTakenUp"


@dataclass(slots=True, frozen=True)
class JobWait:
    """Why a job the cycle did not place waits and where it stands: what `py-volcano explain` reads.

    `action` and `plugin` held it back (no plugin: the action's own rule; no action: none took it up).
    The positions count from 1 among the waiting jobs, in the order the cycle took them up (admitted
    jobs first, then those waiting for admission); 0 when no action took this one up. `nodes` counts,
    by reason, the nodes that refused its first pod that fits nowhere. `min_member`, `ready` and
    `valid` are the gang's minimum, its pods running or placed, and its pods that can count towards it.
    `preemption` says whether preempt or reclaim can make room for it, and why.
    """

    reason: WaitReason
    message: str = ""
    action: str = ""
    plugin: str = ""
    queue: str = ""
    queue_position: int = 0
    cluster_position: int = 0
    nodes: tuple[tuple[str, int], ...] = ()
    min_member: int = 0
    ready: int = 0
    valid: int = 0
    preemption: str = ""


@dataclass(slots=True, frozen=True)
class PodWait:
    """Why a pod the cycle did not place waits: its PodScheduled=False reason and message."""

    namespace: str
    name: str
    message: str
    reason: str = POD_UNSCHEDULABLE


@dataclass(slots=True)
class CycleResult:
    """Everything a cycle decided; the cache applies it, the simulator records it.

    `unschedulable` maps a pending task's `ns/name` to its own fit error, `pipelined` a pipelined
    task's to its node. `pod_waits` holds the PodScheduled=False each waiting pod should carry;
    `unplaced` every pod still pending or pipelined, with a wait or not. `job_waits` says why each
    job the cycle did not place waits and where it stands in line. `plugin_durations` is keyed
    by (plugin, "OnSessionOpen" or "OnSessionClose"), in seconds. `preemption_attempts` counts the
    nodes the preempt action tried to free for a preemptor, `preemption_victims` is the number of
    victims the plugins offered on the last node it considered (None: it considered none).
    """

    binds: list[tuple[TaskInfo, str]] = field(default_factory=list)
    evictions: list[tuple[TaskInfo, str]] = field(default_factory=list)
    pipelined: dict[str, str] = field(default_factory=dict)
    pod_groups: dict[JobID, PodGroupStatus] = field(default_factory=dict)
    queues: dict[str, QueueFigures] = field(default_factory=dict)
    queue_statuses: dict[str, QueueStatus] = field(default_factory=dict)
    pod_waits: dict[TaskID, PodWait] = field(default_factory=dict)
    job_waits: dict[JobID, JobWait] = field(default_factory=dict)
    settled: Mapping[JobID, object] = field(default_factory=dict)
    """Jobs the snapshot left out of the cycle because nothing in it could change them (`Settled`): they
    have no entry in `pod_groups`, and the status decided for them before stands."""
    settled_update: SettledUpdate = field(default_factory=SettledUpdate)
    """How the snapshot's update changed the settled jobs (`SettledFollower` reads it)."""
    backed_off: frozenset[JobID] = frozenset()
    """Jobs the cycle left out (backed off by the runner): no wait is said of them; what the last cycle
    that tried one wrote about it stays."""
    unplaced: set[TaskID] = field(default_factory=set)
    unschedulable: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    plugin_durations: dict[tuple[str, str], float] = field(default_factory=dict)
    action_durations: dict[str, float] = field(default_factory=dict)
    preemption_attempts: int = 0
    preemption_victims: int | None = None
    reads_clock: bool = False
    """A plugin decided by the cycle's time (tdm's windows, rescheduling's interval): the next cycle may
    decide otherwise though nothing else changed."""
    unschedulable_jobs: set[JobID] = field(default_factory=set)
    """Jobs the cycle took up and could not place (nothing bound or pipelined, a reason recorded): the
    runner backs them off. Jobs the cycle was told to skip are never among them."""
    overcommitted_nodes: dict[str, str] = field(default_factory=dict)
    """Nodes whose pods use more than they allocate, each with the message saying so."""
