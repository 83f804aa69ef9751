"""shuffle: evict the running tasks the plugins choose with no preemptor in view (Volcano's shuffle).

Every running task of the session's jobs is offered to `ssn.victim_tasks`, where plugins choose
victims by their own rules (rescheduling's strategies, tdm's closed revocable zones); each victim is
evicted with the reason `shuffle`, and its pods leave through the cycle's evictions like any other
(docs/plugins.md, "shuffle").
"""

from __future__ import annotations

import time

import structlog

from py_volcano.api import TaskStatus
from py_volcano.framework import NoArgs, Session, Statement

__all__ = ["NAME", "ShuffleAction", "new"]

NAME = "shuffle"
log = structlog.get_logger(__name__)


class ShuffleAction:
    """Evict what the victim-tasks plugins choose."""

    name = NAME

    def __init__(self, args: NoArgs) -> None:
        self.args = args

    def execute(self, ssn: Session) -> None:
        """Offer the running tasks, evict the chosen ones and commit."""
        started = time.perf_counter()
        running = [task for job in ssn.jobs.values() for task in job.tasks_with(TaskStatus.RUNNING)]
        victims = ssn.victim_tasks(running)
        stmt = Statement(ssn)
        for victim in victims:
            log.debug("victim_chosen", action=NAME, task=victim.key, job=victim.job, node=victim.node_name)
            stmt.evict(victim, NAME)
        stmt.commit()
        log.info(
            "shuffle_done",
            cycle=ssn.cycle,
            action=NAME,
            evictions=len(victims),
            duration_ms=round((time.perf_counter() - started) * 1000, 3),
        )


def new(args: NoArgs) -> ShuffleAction:
    """Build the action."""
    return ShuffleAction(args)
