"""gangreclaim: a starving gang of a queue below its share takes room back from other queues, a whole bundle
at a time (Volcano's gangreclaim action).

Queues in queue order, an overused queue reclaiming nothing; in each, its starving jobs in job order.
A job reclaims only when `ssn.preemptive` lets its queue take its whole pending demand. The running
preemptable tasks of jobs in other, reclaimable queues, whose PodGroup does not say
`volcano.sh/preemptable: "false"`, are bundled per job, offered to `ssn.unified_evictable`, ranked
(safe first, queues first in victim-queue order first, best return first), and the shortest ranked
prefix that lets the gang be pipelined is evicted (gangpreempt's bundles and plan); the statement is
committed only when the job is then pipelined.
"""

from __future__ import annotations

from py_volcano.actions.gangpreempt import GangEvictionArgs
from py_volcano.actions.gangpreempt import bundles as bundling
from py_volcano.actions.gangpreempt.action import eligible_job, select_bundles, serve_starving_jobs
from py_volcano.actions.gangpreempt.plan import gang_pending, plan_eviction
from py_volcano.api import JobID, JobInfo, QueueInfo, Resource, TaskID, TaskInfo, TaskStatus
from py_volcano.framework import EvictionContext, EvictionKind, Session, Statement

__all__ = ["NAME", "GangReclaimAction", "new"]

NAME = "gangreclaim"


class GangReclaimAction:
    """Whole-gang reclaim across queues."""

    name = NAME

    def __init__(self, args: GangEvictionArgs) -> None:
        self.args = args

    def execute(self, ssn: Session) -> None:
        """For each queue that is not overused, its starving jobs in order: plan, commit when pipelined."""
        serve_starving_jobs(ssn, action=NAME, plan=self._reclaim_for, skip_queue=ssn.overused)

    def _reclaim_for(self, ssn: Session, queue: QueueInfo, job: JobInfo) -> Statement | None:
        """The plan that gets the job pipelined by evicting other queues' ranked bundles, or None."""
        pending = gang_pending(ssn, job)
        if not pending or not ssn.preemptive(queue, _demand(job, pending)):
            return None
        need = Resource()
        for task in pending:
            need.add(task.init_resreq)
        preemptor_queue = ssn.queues.get(job.queue)

        def queue_less(l: QueueInfo, r: QueueInfo) -> bool:
            if preemptor_queue is None:
                return ssn.queue_order_fn(l, r)
            return ssn.victim_queue_order_fn(l, r, preemptor_queue)

        def rank(bundles: list[bundling.Bundle]) -> list[bundling.Bundle]:
            return bundling.sort_for_reclaim(bundles, need, queue_less, ssn.queues)

        context = EvictionContext(EvictionKind.GANG_RECLAIM, job)
        chosen = select_bundles(ssn, context, _candidates(ssn, job), rank)
        if not self.args.allow_whole_bundle:
            chosen = [bundle for bundle in chosen if bundle.kind is bundling.BundleKind.SAFE]
        return plan_eviction(ssn, queue, job, chosen, reason=NAME) if chosen else None


def _demand(job: JobInfo, pending: list[TaskInfo]) -> TaskInfo:
    """The gang's pending tasks as one task holding their summed requests.

    Volcano's preemptive check takes the pending tasks and sums their requests; py-volcano's takes one
    task, so it is asked about this stand-in (it is in no job's task list and is never placed).
    """
    resreq = Resource()
    for task in pending:
        resreq.add(task.resreq)
    first = pending[0]
    return TaskInfo(
        uid=TaskID(f"{job.uid}/pending"),
        name=job.name,
        namespace=job.namespace,
        resreq=resreq,
        job=job.uid,
        priority=first.priority,
        priority_class_name=first.priority_class_name,
    )


def _candidates(ssn: Session, reclaimer: JobInfo) -> dict[JobID, list[TaskInfo]]:
    """Per victim job: its running preemptable tasks, for jobs of other, reclaimable queues."""
    found: dict[JobID, list[TaskInfo]] = {}
    for node in ssn.node_list:
        for held in node.tasks.values():
            if held.status is not TaskStatus.RUNNING or not held.preemptable or held.job is None:
                continue
            victim = ssn.jobs.get(held.job)
            if victim is None or victim.queue == reclaimer.queue or not eligible_job(victim):
                continue
            victim_queue = ssn.queues.get(victim.queue)
            task = victim.tasks.get(held.uid)
            if victim_queue is not None and victim_queue.reclaimable and task is not None:
                found.setdefault(victim.uid, []).append(task)
    return found


def new(args: GangEvictionArgs) -> GangReclaimAction:
    """Build the action."""
    return GangReclaimAction(args)
