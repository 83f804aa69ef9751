"""extender: delegate extension points to an HTTP server (Volcano's extender plugin).

Each point whose verb is configured calls `<extender.urlPrefix>/<verb>` with a JSON body and reads
the answer, in Volcano's request and answer shapes. An extender is not the API server: it is a
scheduling policy served elsewhere, and the session's rule that decisions leave only through the
cycle's result still holds (the extender is told about allocations, it does not make them).

Calls are kept few: a predicate answer is asked once per task and node in a session and only for the
nodes every earlier predicate accepted; prioritize asks once per placement for all candidate nodes;
after the first failed call the session sends no more (client.py). Volcano's semantics otherwise:
docs/plugins.md, "extender".
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import structlog

from py_volcano.api import JobInfo, NodeInfo, QueueInfo, TaskInfo, Vote, node_revocable_zone
from py_volcano.framework import EventHandler, IndexArray, PredicateStatus, Session
from py_volcano.plugins.extender import wire
from py_volcano.plugins.extender.args import ExtenderArgs
from py_volcano.plugins.extender.client import ExtenderClient

__all__ = ["NAME", "ExtenderPlugin", "new"]

NAME = "extender"
log = structlog.get_logger(__name__)

#: Volcano's status codes an extender's predicate answers with; only Unschedulable can be resolved by evicting.
_UNSCHEDULABLE = 2


class ExtenderPlugin:
    """Extension points served over HTTP."""

    name = NAME

    def __init__(self, args: ExtenderArgs) -> None:
        self.args = args
        self.client = ExtenderClient(args.url_prefix, timeout=args.http_timeout)
        self.ssn: Session | None = None
        self._predicates: dict[tuple[str, str], PredicateStatus | None] = {}

    def on_session_open(self, ssn: Session) -> None:
        """Tell the extender the session opened, then register every point with a verb.

        A failed session-open call registers nothing unless `extender.ignorable`, as in Volcano.
        """
        self.ssn = ssn
        if self.args.on_session_open and self._open_session(ssn) is None and not self.args.ignorable:
            return
        args = self.args
        if args.predicate:
            ssn.add_predicate_fn(NAME, self.predicate)
        if args.prioritize:
            ssn.add_batch_node_order_fn(NAME, self.prioritize)
        if args.preemptable:
            ssn.add_preemptable_fn(NAME, self.preemptable)
        if args.reclaimable:
            ssn.add_reclaimable_fn(NAME, self.reclaimable)
        if args.job_enqueueable:
            ssn.add_job_enqueueable_fn(NAME, self.job_enqueueable)
        if args.job_enqueued:
            ssn.add_job_enqueued_fn(NAME, self.job_enqueued)
        if args.queue_overused:
            ssn.add_overused_fn(NAME, self.overused)
        if args.job_ready:
            ssn.add_job_ready_fn(NAME, self.job_ready)
        ssn.add_event_handler(
            EventHandler(
                allocate=self.allocated if args.allocate_func else None,
                deallocate=self.deallocated if args.deallocate_func else None,
            )
        )

    def on_session_close(self, ssn: Session) -> None:
        """Tell the extender the session closed; log how many calls were made and skipped."""
        if self.args.on_session_close:
            self.client.call(self.args.on_session_close, {}, answer=False)
        self.client.finish()
        log.debug("extender_session_closed", cycle=ssn.cycle, calls=self.client.calls, skipped=self.client.skipped)
        self.ssn = None
        self._predicates.clear()

    def _open_session(self, ssn: Session) -> dict[str, Any] | None:
        nodes = {name: wire.encode_node(node) for name, node in ssn.nodes.items()}
        body = {
            "Jobs": {uid: wire.encode_job(job) for uid, job in ssn.jobs.items()},
            "Nodes": nodes,
            "Queues": {uid: wire.encode_queue(queue) for uid, queue in ssn.queues.items()},
            "NamespaceInfo": {name: {"Name": name} for name in sorted({job.namespace for job in ssn.jobs.values()})},
            "RevocableNodes": {name: nodes[name] for name, node in ssn.nodes.items() if node_revocable_zone(node)},
            "NodeList": None,
        }
        return self.client.call(self.args.on_session_open, body, answer=False)

    def is_interested(self, task: TaskInfo) -> bool:
        """True when the extender manages no resource in particular, or the task asks for one it manages."""
        managed = self.args.managed_resources
        if not managed:
            return True
        return any(name in managed for name in (*task.resreq.names(), *task.init_resreq.names()))

    # Placement --------------------------------------------------------------------------------

    def predicate(self, task: TaskInfo, node: NodeInfo) -> PredicateStatus | None:
        """Ask whether the node suits the task (once per task and node in a session)."""
        if not self.is_interested(task):
            return None
        key = (task.uid, node.name)
        if key not in self._predicates:
            self._predicates[key] = self._ask_predicate(task, node)
        return self._predicates[key]

    def _ask_predicate(self, task: TaskInfo, node: NodeInfo) -> PredicateStatus | None:
        answer = self.client.call(self.args.predicate, {"task": wire.encode_task(task), "node": wire.encode_node(node)})
        if answer is None:
            return None if self.args.ignorable else PredicateStatus(f"extender: {self.client.failure}")
        message = answer.get("status")
        if not isinstance(message, str) or not message:
            return None
        return PredicateStatus(message, resolvable=answer.get("code") == _UNSCHEDULABLE)

    def prioritize(self, task: TaskInfo, rows: IndexArray) -> npt.NDArray[np.float64]:
        """Ask the extender to score the candidate nodes; a node it leaves out, or a failed call, scores 0."""
        assert self.ssn is not None
        nodes = [self.ssn.node_list[int(row)] for row in rows]
        if not self.is_interested(task):
            return np.zeros(len(nodes))
        body = {"task": wire.encode_task(task), "nodes": [wire.encode_node(node) for node in nodes]}
        answer = self.client.call(self.args.prioritize, body)
        scores = answer.get("nodeScore") if answer is not None else None
        if not isinstance(scores, dict) or (answer or {}).get("errorMessage"):
            return np.zeros(len(nodes))
        return np.array([_number(scores.get(node.name)) for node in nodes], dtype=np.float64)

    # Victims ----------------------------------------------------------------------------------

    def preemptable(self, preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
        """Ask which of the preemptees the preemptor may evict."""
        return self._victims(self.args.preemptable, preemptor, preemptees)

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
        """Ask which of the reclaimees the reclaimer may evict."""
        return self._victims(self.args.reclaimable, reclaimer, reclaimees)

    def _victims(self, verb: str, evictor: TaskInfo, evictees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
        """The victims the extender names (by UID, among the evictees) and its vote."""
        if not self.is_interested(evictor):
            return [], Vote.ABSTAIN
        body = {"evictor": wire.encode_task(evictor), "evictees": [wire.encode_task(task) for task in evictees]}
        answer = self.client.call(verb, body)
        if answer is None:
            return [], Vote.PERMIT if self.args.ignorable else Vote.REJECT
        named = {victim.get("UID") for victim in answer.get("victims") or [] if isinstance(victim, dict)}
        return [task for task in evictees if task.uid in named], _vote(answer.get("status"))

    # Jobs and queues --------------------------------------------------------------------------

    def job_enqueueable(self, job: JobInfo) -> Vote:
        """Ask whether the job may be admitted."""
        answer = self.client.call(self.args.job_enqueueable, {"job": wire.encode_job(job)})
        if answer is None:
            return Vote.PERMIT if self.args.ignorable else Vote.REJECT
        return _vote(answer.get("status"))

    def job_enqueued(self, job: JobInfo) -> None:
        """Tell the extender the job was admitted."""
        self.client.call(self.args.job_enqueued, {"job": wire.encode_job(job)})

    def overused(self, queue: QueueInfo) -> bool:
        """Ask whether the queue is overused; a failed call says overused unless ignorable."""
        answer = self.client.call(self.args.queue_overused, {"queue": wire.encode_queue(queue)})
        return not self.args.ignorable if answer is None else answer.get("overused") is True

    def job_ready(self, job: JobInfo) -> bool:
        """Ask whether the job is ready; a failed call says ready when ignorable, not ready otherwise (Volcano
        has it the other way round, see docs/plugins.md, "extender")."""
        answer = self.client.call(self.args.job_ready, {"job": wire.encode_job(job)})
        return self.args.ignorable if answer is None else answer.get("status") is True

    # Events -----------------------------------------------------------------------------------

    def allocated(self, task: TaskInfo) -> None:
        """Tell the extender a task was allocated or pipelined (its error answer is logged, see docs)."""
        self._event(self.args.allocate_func, task)

    def deallocated(self, task: TaskInfo) -> None:
        """Tell the extender a task was evicted or its allocation undone."""
        self._event(self.args.deallocate_func, task)

    def _event(self, verb: str, task: TaskInfo) -> None:
        if not self.is_interested(task):
            return
        answer = self.client.call(verb, {"task": wire.encode_task(task)})
        if answer and answer.get("errorMessage"):
            log.warning("extender_event_refused", verb=verb, task=task.key, reason=str(answer["errorMessage"]))


def _vote(status: object) -> Vote:
    """Volcano's vote integers: 1 permit, 0 abstain, -1 reject (anything else abstains)."""
    if isinstance(status, int) and not isinstance(status, bool) and status in (-1, 0, 1):
        return Vote(status)
    return Vote.ABSTAIN


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def new(args: ExtenderArgs) -> ExtenderPlugin:
    """Build the plugin."""
    return ExtenderPlugin(args)
