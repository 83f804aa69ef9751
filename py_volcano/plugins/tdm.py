"""tdm: time-division multiplexing of revocable nodes (Volcano's tdm plugin).

A node labelled `volcano.sh/revocable-zone: <zone>` is revocable: the cluster may use it only while
the zone's daily window (`tdm.revocable-zone.<zone>: "HH:MM-HH:MM"`, in the time zone of the cycle's
clock) is open, and only for pods that may be revoked (`volcano.sh/revocable-zone: "*"` or
`volcano.sh/preemptable: "true"` as pod annotations). While the window is open such pods prefer
revocable nodes; once it closes, the `shuffle` action evicts them, job by job within each job's
disruption budget, at most once every `tdm.evict.period`. Preemptable pods on ordinary nodes make room
for pending pods that are not preemptable (preempt), and jobs that are not preemptable go first.
Rules and differences: docs/plugins.md, "tdm".
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from py_volcano.api import (
    JobID,
    JobInfo,
    MaskArray,
    NodeInfo,
    TaskInfo,
    TaskStatus,
    Vote,
    job_budget,
    job_preemptable,
    node_revocable_zone,
    task_revocable_zone,
)
from py_volcano.framework import Arguments, IndexArray, PredicateStatus, Session

__all__ = ["NAME", "RevocableWindow", "TdmArgs", "TdmMemory", "TdmPlugin", "new"]

NAME = "tdm"
ZONE_PREFIX = "tdm.revocable-zone."
EVICT_PERIOD = "tdm.evict.period"
MAX_NODE_SCORE = 100.0
_DEFAULT_EVICT_NUM = 1
_CLOCK = re.compile(r"([0-9]{1,2}):([0-9]{2})")
_NOT_ALLOWED = "not allow to dispatch to revocable node"


@dataclass(slots=True, frozen=True)
class RevocableWindow:
    """A zone's daily window, in seconds of the day; an end at or before the start ends the next day."""

    start: int
    end: int
    text: str

    @classmethod
    def parse(cls, text: str) -> RevocableWindow | None:
        """Read `HH:MM-HH:MM` (Go's "15:04" layout: 0-23 hours, two-digit minutes); None when it is not one."""
        parts = text.strip().split("-")
        clocks = [_CLOCK.fullmatch(part) for part in parts]
        if len(parts) != 2 or not all(clocks):
            return None
        hours = [int(match.group(1)) for match in clocks if match]
        minutes = [int(match.group(2)) for match in clocks if match]
        if max(hours) > 23 or max(minutes) > 59:
            return None
        return cls(hours[0] * 3600 + minutes[0] * 60, hours[1] * 3600 + minutes[1] * 60, text)

    def is_open(self, now: datetime) -> bool:
        """True from the start to the end, both included, at whole seconds of `now`'s own time zone.

        A window whose end is not after its start runs over midnight (`22:00-06:00`); Volcano opens such
        a window only until midnight (docs/plugins.md, "tdm").
        """
        second = now.hour * 3600 + now.minute * 60 + now.second
        if self.start < self.end:
            return self.start <= second <= self.end
        return second >= self.start or second <= self.end


@dataclass(slots=True, frozen=True)
class TdmArgs:
    """tdm's arguments."""

    zones: Mapping[str, RevocableWindow] = field(default_factory=lambda: MappingProxyType({}))
    """Each `tdm.revocable-zone.<zone>` argument: the zone's daily window."""
    evict_period: float = 60.0
    """`tdm.evict.period` (a Go duration, default 1m): the least time between two evictions of closed zones."""

    @classmethod
    def parse(cls, args: Arguments) -> TdmArgs:
        """Read the arguments; ConfigError on a window that is not `HH:MM-HH:MM` or a period that is not a duration."""
        zones: dict[str, RevocableWindow] = {}
        written = args.keys()
        for key in written:
            if ZONE_PREFIX not in key:  # Volcano matches the prefix anywhere in the key
                continue
            text = args.get_str(key, "")
            window = RevocableWindow.parse(text)
            if window is None:
                raise args.error(key, f"{text!r} is not a window HH:MM-HH:MM")
            zones[key.replace(ZONE_PREFIX, "", 1)] = window
        return cls(zones=MappingProxyType(zones), evict_period=args.get_duration(EVICT_PERIOD, 60.0))


class TdmMemory:
    """What tdm keeps between sessions: when it last chose victims of closed zones."""

    __slots__ = ("last_evict",)

    def __init__(self) -> None:
        self.last_evict: datetime | None = None


class RevocableZones:
    """One session's revocable nodes, which of their zones are open, and tdm's functions over them."""

    __slots__ = ("_open", "args", "ordinary", "revocable", "ssn", "usable", "zone_of")

    def __init__(self, ssn: Session, args: TdmArgs) -> None:
        self.ssn = ssn
        self.args = args
        self.zone_of = [node_revocable_zone(node) for node in ssn.node_list]
        self._open: dict[str, bool] = {}
        self.revocable: MaskArray = np.array([bool(zone) for zone in self.zone_of], dtype=bool)
        self.usable: MaskArray = np.array([not zone or self.is_open(zone) for zone in self.zone_of], dtype=bool)
        self.ordinary: MaskArray = ~self.revocable
        for mask in (self.revocable, self.ordinary, self.usable):
            mask.flags.writeable = False

    def is_open(self, zone: str) -> bool:
        """True when the zone is configured and its window is open at the cycle's time."""
        found = self._open.get(zone)
        if found is None:
            window = self.args.zones.get(zone)
            found = self._open[zone] = window is not None and window.is_open(self.ssn.now)
        return found

    # Placement ------------------------------------------------------------------------------

    def batch_predicate(self, task: TaskInfo, for_preempt: bool) -> MaskArray:
        """Per node: ordinary nodes suit every task; revocable ones only revocable tasks, while open."""
        return self.usable if task_revocable_zone(task) else self.ordinary

    def predicate(self, task: TaskInfo, node: NodeInfo) -> PredicateStatus | None:
        """Say why a revocable node does not suit the task (neither reason is resolved by evicting)."""
        zone = node_revocable_zone(node)
        if not zone:
            return None
        window = self.args.zones.get(zone)
        if window is None:
            return PredicateStatus(f"revocable zone {zone} not support")
        if not self.is_open(zone):
            return PredicateStatus(f"current time beyond revocable zone {zone}:{window.text}")
        return None if task_revocable_zone(task) else PredicateStatus(_NOT_ALLOWED)

    def node_order(self, task: TaskInfo, rows: IndexArray) -> npt.NDArray[np.float64]:
        """Score MaxNodeScore on open revocable nodes for a revocable task, 0 elsewhere."""
        if not task_revocable_zone(task):
            return np.zeros(len(rows))
        return np.where(self.revocable[rows] & self.usable[rows], MAX_NODE_SCORE, 0.0)

    # Victims ----------------------------------------------------------------------------------

    def preemptable(self, preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
        """Offer running preemptable tasks on ordinary nodes, within each job's budget; revocable or
        preemptable preemptors take nothing."""
        if preemptor.preemptable or task_revocable_zone(preemptor):
            return [], Vote.REJECT
        by_job: dict[JobID, list[TaskInfo]] = {}
        for task in preemptees:
            node = self.ssn.nodes.get(task.node_name)
            if not task.preemptable or task.status is not TaskStatus.RUNNING or node is None:
                continue
            if task.job is not None and not node_revocable_zone(node):
                by_job.setdefault(task.job, []).append(task)
        return self._within_budgets(by_job), Vote.PERMIT

    def victim_tasks(self, tasks: list[TaskInfo]) -> list[TaskInfo]:
        """Choose the running preemptable tasks on the nodes of closed zones, within each job's budget, at
        most once every evict period (the tasks shuffle offers are not read, as in Volcano)."""
        memory = self.ssn.memory.recall(NAME, TdmMemory)
        now = self.ssn.now
        if memory.last_evict is not None and memory.last_evict + timedelta(seconds=self.args.evict_period) > now:
            return []
        victims: list[TaskInfo] = []
        for zone in self.args.zones:
            if not self.is_open(zone):
                victims += self._within_budgets(self._preemptable_in(zone))
        memory.last_evict = now
        return victims

    def _preemptable_in(self, zone: str) -> dict[JobID, list[TaskInfo]]:
        """The running preemptable tasks (the jobs' own) on the zone's nodes, by job."""
        by_job: dict[JobID, list[TaskInfo]] = {}
        for node, node_zone in zip(self.ssn.node_list, self.zone_of, strict=True):
            if node_zone != zone:
                continue
            for held in node.tasks.values():
                job = self.ssn.jobs.get(held.job) if held.job else None
                task = job.tasks.get(held.uid) if job is not None else None
                if job is not None and task is not None and task.preemptable and task.status is TaskStatus.RUNNING:
                    by_job.setdefault(job.uid, []).append(task)
        return by_job

    def _within_budgets(self, by_job: dict[JobID, list[TaskInfo]]) -> list[TaskInfo]:
        """The first tasks of each job, as many as its budget lets go (Volcano's maxVictims)."""
        victims: list[TaskInfo] = []
        for job_id, tasks in by_job.items():
            job = self.ssn.jobs.get(job_id)
            if job is not None:
                victims += tasks[: max_evictions(job)]
        return victims


def max_evictions(job: JobInfo) -> int:
    """How many of the job's tasks its budget lets go now (Volcano's getMaxPodEvictNum).

    `jdb-max-unavailable`: that many (of all tasks) less those already unavailable (neither running nor
    finished); `jdb-min-available`: the running tasks above it, else one; no budget: one."""
    total = len(job.tasks)
    running = job.count(TaskStatus.RUNNING)
    budget = job_budget(job)
    if budget.max_unavailable:
        limit = _int_or_percent(budget.max_unavailable, total)
        unavailable = total - job.count(TaskStatus.SUCCEEDED, TaskStatus.FAILED) - running
        return 0 if unavailable >= limit else limit - unavailable
    if budget.min_available:
        minimum = _int_or_percent(budget.min_available, total)
        if running >= minimum:
            return running - minimum
    return _DEFAULT_EVICT_NUM


def _int_or_percent(text: str, total: int) -> int:
    """Kubernetes' IntOrString: an integer, or a percentage of `total` rounded up; 0 when it is neither."""
    try:
        return int(text)
    except ValueError:
        pass
    if text.endswith("%"):
        try:
            return math.ceil(int(text[:-1]) * total / 100)
        except ValueError:
            return 0
    return 0


def job_order(l: JobInfo, r: JobInfo) -> int:
    """Jobs that are not preemptable go first."""
    l_preemptable, r_preemptable = job_preemptable(l), job_preemptable(r)
    if l_preemptable == r_preemptable:
        return 0
    return 1 if l_preemptable else -1


def job_pipelined(job: JobInfo) -> Vote:
    """Permit when waiting, ready and pending best-effort tasks reach minMember; reject otherwise."""
    occupied = job.waiting_task_num() + job.ready_task_num() + job.pending_best_effort_task_num()
    return Vote.PERMIT if occupied >= job.min_available else Vote.REJECT


def job_starving(job: JobInfo) -> bool:
    """A job that is not preemptable starves while it has pending tasks; a preemptable one never does."""
    return not job_preemptable(job) and job.count(TaskStatus.PENDING) > 0


class TdmPlugin:
    """Revocable nodes by time window; preemptable workloads make way."""

    name = NAME

    def __init__(self, args: TdmArgs) -> None:
        self.args = args
        self.zones: RevocableZones | None = None

    def on_session_open(self, ssn: Session) -> None:
        """Build the session's zones and register placement, victims and job functions."""
        self.zones = zones = RevocableZones(ssn, self.args)
        if zones.revocable.any():  # with no revocable node every node suits every task and scores 0
            ssn.add_batch_predicate_fn(NAME, zones.batch_predicate)
            ssn.add_predicate_fn(NAME, zones.predicate)
            ssn.add_batch_node_order_fn(NAME, zones.node_order)
        ssn.add_preemptable_fn(NAME, zones.preemptable)
        ssn.add_victim_tasks_fn(NAME, zones.victim_tasks)
        ssn.add_job_order_fn(NAME, job_order)
        ssn.add_job_pipelined_fn(NAME, job_pipelined)
        ssn.add_job_starving_fn(NAME, job_starving)

    def on_session_close(self, ssn: Session) -> None:
        """Drop the session state."""
        self.zones = None


def new(args: TdmArgs) -> TdmPlugin:
    """Build the plugin."""
    return TdmPlugin(args)
