"""preempt: starving jobs take resources from lower-priority work of their own queue.

Queue by queue (docs/semantics.md, "Preempt phases"): phase 1 lets starving jobs, best first, preempt
other jobs of the queue, one Statement per job, committed only when the job is then pipelined; phase 2
lets the pending tasks of those jobs preempt lower-priority tasks of the same job. Preempt never binds:
the preemptor is only pipelined and binds in a later cycle, once its victims are gone
(docs/semantics.md, "Preempt").

Queues come in queue order and phase 2 covers the queue's own starving jobs, as in Volcano.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from py_volcano.actions.preempt import normal, topology
from py_volcano.actions.preempt.disruption import DisruptionBudgets
from py_volcano.actions.preempt.preemptees import PreempteeIndex, Scope
from py_volcano.api import JobInfo, NodeInfo, QueueID, QueueInfo, TaskInfo, TaskStatus, is_preemptable_status
from py_volcano.framework import Arguments, CycleState, PriorityQueue, Session, Statement, ordered

__all__ = ["NAME", "PreemptAction", "PreemptArgs", "new"]

NAME = "preempt"
log = structlog.get_logger(__name__)


@dataclass(slots=True, frozen=True)
class PreemptArgs:
    """The `configurations` arguments of preempt, with Volcano's defaults.

    Their meaning: docs/semantics.md, "Topology-aware preemption".
    """

    enable_topology_aware_preemption: bool = False
    """`enableTopologyAwarePreemption`: pick victims node by node with dry runs instead of the normal walk."""
    min_candidate_nodes_percentage: int = 10
    """`minCandidateNodesPercentage`: share of the nodes, in percent, topology-aware preemption tries."""
    min_candidate_nodes_absolute: int = 1
    """`minCandidateNodesAbsolute`: at least this many candidate nodes."""
    max_candidate_nodes_absolute: int = 100
    """`maxCandidateNodesAbsolute`: at most this many candidate nodes."""

    @classmethod
    def parse(cls, args: Arguments) -> PreemptArgs:
        """Read the arguments; ConfigError on a value of the wrong type."""
        return cls(
            enable_topology_aware_preemption=args.get_bool("enableTopologyAwarePreemption", False),
            min_candidate_nodes_percentage=args.get_int("minCandidateNodesPercentage", 10),
            min_candidate_nodes_absolute=args.get_int("minCandidateNodesAbsolute", 1),
            max_candidate_nodes_absolute=args.get_int("maxCandidateNodesAbsolute", 100),
        )


class PreemptAction:
    """Preemption between jobs of a queue, then between tasks of a job."""

    name = NAME

    def __init__(self, args: PreemptArgs) -> None:
        self.args = args

    def execute(self, ssn: Session) -> None:
        """For each queue with starving jobs: preempt between its jobs, then within each of them."""
        started = time.perf_counter()
        evictions = len(ssn.evictions)
        budgets = DisruptionBudgets.build(ssn)
        for queue, jobs in _starving_jobs(ssn):
            self._between_jobs(ssn, queue, jobs, budgets)
            self._within_jobs(ssn, jobs, budgets)
        log.info(
            "preempt_done",
            cycle=ssn.cycle,
            action=NAME,
            evictions=len(ssn.evictions) - evictions,
            duration_ms=round((time.perf_counter() - started) * 1000, 3),
        )

    def _between_jobs(self, ssn: Session, queue: QueueInfo, jobs: list[JobInfo], budgets: DisruptionBudgets) -> None:
        """Phase 1: a Statement per preemptor job, committed only if the job ends up pipelined; each job has
        one turn, its tasks in task order while it is starving."""
        in_queue = [job for job in ssn.jobs.values() if job.queue == queue.uid]
        index = PreempteeIndex(ssn, _in_queue(ssn, queue.uid), _hosts(ssn, in_queue))
        preemptors = PriorityQueue(ssn.job_order_fn, jobs)
        tasks = {job.uid: _preemptor_tasks(ssn, job) for job in jobs}
        while not preemptors.empty():
            job = preemptors.pop()
            stmt = Statement(ssn)
            while ssn.job_starving(job) and not tasks[job.uid].empty():
                preemptor = tasks[job.uid].pop()
                self._preempt(ssn, stmt, preemptor, queue, Scope(index, _other_job(preemptor), budgets))
            if ssn.job_pipelined(job):
                stmt.commit()
            else:
                log.debug("preempt_discarded", job=job.uid, queue=queue.name, evictions=len(stmt.operations))
                index.touch_statement(stmt)
                stmt.discard()

    def _within_jobs(self, ssn: Session, jobs: list[JobInfo], budgets: DisruptionBudgets) -> None:
        """Phase 2: each pending task may preempt its own job's tasks, a Statement each, committed when it
        found room; the job stops at the first task that found none."""
        for job in jobs:
            index = PreempteeIndex(ssn, _in_job(job), _hosts(ssn, [job]))
            queue = ssn.queues[job.queue]
            tasks = _preemptor_tasks(ssn, job)
            while not tasks.empty():
                preemptor = tasks.pop()
                stmt = Statement(ssn)
                scope = Scope(index, _best_effort_rule(preemptor), budgets)
                if not self._preempt(ssn, stmt, preemptor, queue, scope):
                    stmt.discard()
                    break
                stmt.commit()

    def _preempt(self, ssn: Session, stmt: Statement, preemptor: TaskInfo, queue: QueueInfo, scope: Scope) -> bool:
        """Find room for one preemptor by the configured path; False when it may not or cannot preempt."""
        if preemptor.preemption_never:
            return False
        state = CycleState()
        if ssn.pre_predicate(preemptor, state):
            return False
        mask = ssn.predicate_mask(preemptor, for_preempt=True)
        if not self.args.enable_topology_aware_preemption:
            return normal.preempt(ssn, stmt, preemptor, queue, scope, mask)
        wanted = topology.calculate_num_candidates(
            int(mask.sum()),
            percentage=self.args.min_candidate_nodes_percentage,
            minimum=self.args.min_candidate_nodes_absolute,
            maximum=self.args.max_candidate_nodes_absolute,
        )
        return topology.preempt(ssn, stmt, preemptor, queue, scope, mask, state=state, wanted=wanted)


def _starving_jobs(ssn: Session) -> list[tuple[QueueInfo, list[JobInfo]]]:
    """Admitted, valid, starving jobs grouped by queue, queues in queue order."""
    by_queue: dict[QueueID, list[JobInfo]] = {}
    for job in ssn.jobs.values():
        if job.is_pending() or job.queue not in ssn.queues or ssn.is_backed_off(job):
            continue
        verdict = ssn.job_valid(job)
        if verdict is not None:
            log.debug("preempt_job_skipped", job=job.uid, queue=job.queue, reason=verdict.reason)
            continue
        if ssn.job_starving(job):
            by_queue.setdefault(job.queue, []).append(job)
    queues = ordered(ssn.queue_order_fn, [ssn.queues[uid] for uid in by_queue])
    return [(queue, by_queue[queue.uid]) for queue in queues]


def _hosts(ssn: Session, jobs: list[JobInfo]) -> list[NodeInfo]:
    """The nodes the jobs' tasks are on: the only ones an index over those jobs needs to read."""
    names = {task.node_name for job in jobs for task in job.tasks.values() if task.node_name}
    return [ssn.nodes[name] for name in names if name in ssn.nodes]


def _preemptor_tasks(ssn: Session, job: JobInfo) -> PriorityQueue[TaskInfo]:
    return PriorityQueue(ssn.task_order_fn, job.tasks_with(TaskStatus.PENDING))


def _in_queue(ssn: Session, queue: QueueID) -> Callable[[TaskInfo], bool]:
    """Base filter of phase 1: preemptable tasks of jobs in `queue` (docs/semantics.md, "Preempt": own queue only)."""

    def owner(task: TaskInfo) -> bool:
        if not (is_preemptable_status(task.status) and task.preemptable and task.job is not None):
            return False
        job = ssn.jobs.get(task.job)
        return job is not None and job.queue == queue

    return owner


def _in_job(job: JobInfo) -> Callable[[TaskInfo], bool]:
    """Base filter of phase 2: preemptable tasks of `job`."""
    return lambda task: is_preemptable_status(task.status) and task.preemptable and task.job == job.uid


def _other_job(preemptor: TaskInfo) -> Callable[[TaskInfo], bool]:
    """Phase 1 per preemptor: another job's task; a best-effort preemptor takes only best-effort tasks."""
    return lambda task: task.job != preemptor.job and (task.best_effort or not preemptor.best_effort)


def _best_effort_rule(preemptor: TaskInfo) -> Callable[[TaskInfo], bool]:
    """Phase 2 per preemptor: a best-effort preemptor takes only best-effort tasks."""
    return lambda task: task.best_effort or not preemptor.best_effort


def new(args: PreemptArgs) -> PreemptAction:
    """Build the action from its parsed `configurations` arguments."""
    return PreemptAction(args)
