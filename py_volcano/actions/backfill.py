"""backfill: place pending best-effort tasks (requesting nothing) on any node that passes the predicates."""

from __future__ import annotations

from py_volcano.api import JobInfo, TaskStatus
from py_volcano.framework import CycleState, NoArgs, Session, Statement, ordered

__all__ = ["NAME", "BackfillAction", "new"]

NAME = "backfill"


class BackfillAction:
    """Best-effort tasks of admitted, valid jobs, in queue, job and task order."""

    name = NAME

    def __init__(self, args: NoArgs) -> None:
        self.args = args

    def execute(self, ssn: Session) -> None:
        """Allocate each job's best-effort tasks; commit when the job is ready."""
        for job in _jobs_in_order(ssn):
            stmt = Statement(ssn)
            best_effort = (task for task in job.tasks_with(TaskStatus.PENDING) if task.best_effort)
            for task in ordered(ssn.task_order_fn, list(best_effort)):
                failure = ssn.pre_predicate(task, CycleState())
                if failure:
                    job.job_fit_error = failure
                    continue
                node = ssn.best_node(task, ssn.search_nodes(ssn.predicate_mask(task) & ssn.fit_idle(task)))
                if node is None:
                    job.fit_errors[task.uid] = ssn.explain(task)
                    continue
                stmt.allocate(task, node.name)
            if ssn.job_ready(job):
                stmt.commit()
            elif not ssn.job_pipelined(job):
                stmt.discard()


def _jobs_in_order(ssn: Session) -> list[JobInfo]:
    jobs = [
        job
        for job in ssn.jobs.values()
        if TaskStatus.PENDING in job.task_status_index
        and not job.is_pending()
        and not ssn.is_backed_off(job)
        and job.queue in ssn.queues
        and any(task.best_effort for task in job.tasks_with(TaskStatus.PENDING))
        and ssn.job_valid(job) is None
    ]
    by_queue = ordered(ssn.queue_order_fn, list({job.queue: ssn.queues[job.queue] for job in jobs}.values()))
    rank = {queue.uid: position for position, queue in enumerate(by_queue)}
    return sorted(ordered(ssn.job_order_fn, jobs), key=lambda job: rank[job.queue])


def new(args: NoArgs) -> BackfillAction:
    """Build the action."""
    return BackfillAction(args)
