"""Statement: an operation log over the session that mutates now, commits in order, discards in reverse.

Evict marks a victim Releasing; pipeline reserves a node's future idle resources for a task;
allocate places a task on idle resources. Commit turns allocations into binds and evictions into
eviction decisions on the session; discard restores exactly the state before each operation.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from py_volcano.api import TaskInfo, TaskStatus
from py_volcano.framework.session import Session

__all__ = ["Operation", "Statement"]


class Operation(Enum):
    """The kinds of statement operation."""

    EVICT = "evict"
    PIPELINE = "pipeline"
    ALLOCATE = "allocate"


@dataclass(slots=True, frozen=True)
class _Op:
    kind: Operation
    task: TaskInfo
    node: str
    previous: TaskStatus
    reason: str = ""


class Statement:
    """A transaction over one session."""

    __slots__ = ("operations", "ssn")

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.operations: list[_Op] = []

    def _set_status(self, task: TaskInfo, status: TaskStatus) -> None:
        job = self.ssn.jobs.get(task.job) if task.job else None
        if job is not None:
            job.update_task_status(task, status)
        else:
            task.status = status

    def _notify(self, task: TaskInfo, *, allocate: bool) -> None:
        for handler in self.ssn.event_handlers:
            fn = handler.allocate if allocate else handler.deallocate
            if fn is not None:
                fn(task)

    def evict(self, task: TaskInfo, reason: str) -> None:
        """Mark a running task Releasing on its node; `task` may be the job's, the node's or a clone."""
        previous = task.status
        node = self.ssn.nodes.get(task.node_name)
        if node is not None:
            node.remove_task(task)
        self._set_status(task, TaskStatus.RELEASING)
        if node is not None:
            node.add_task(task)
        self._notify(task, allocate=False)
        self.operations.append(_Op(Operation.EVICT, task, task.node_name, previous, reason))

    def pipeline(self, task: TaskInfo, node_name: str) -> None:
        """Reserve `node_name`'s future idle resources for a pending task."""
        self._place(task, node_name, Operation.PIPELINE, TaskStatus.PIPELINED)

    def allocate(self, task: TaskInfo, node_name: str) -> None:
        """Place a pending task on `node_name`'s idle resources."""
        self._place(task, node_name, Operation.ALLOCATE, TaskStatus.ALLOCATED)

    def take_in(self, task: TaskInfo, node_name: str) -> None:
        """Count a pending task Bound on `node_name`, where someone else bound it: the node and every
        plugin see it there as after an allocation, and nothing is logged to commit (no bind) or discard."""
        self._put(task, node_name, TaskStatus.BOUND)

    def _place(self, task: TaskInfo, node_name: str, kind: Operation, status: TaskStatus) -> None:
        previous = task.status
        self._put(task, node_name, status)
        self.operations.append(_Op(kind, task, node_name, previous))

    def _put(self, task: TaskInfo, node_name: str, status: TaskStatus) -> None:
        self._set_status(task, status)
        task.node_name = node_name
        self._own(task).node_name = node_name
        self.ssn.nodes[node_name].add_task(task)
        self._notify(task, allocate=True)

    def _own(self, task: TaskInfo) -> TaskInfo:
        job = self.ssn.jobs.get(task.job) if task.job else None
        return job.tasks.get(task.uid, task) if job is not None else task

    def merge(self, other: Statement) -> None:
        """Take over `other`'s operations after this statement's own, leaving `other` empty (Volcano's Merge).

        Actions try a node in a statement of its own and merge it only when the attempt succeeds.
        """
        self.operations.extend(other.operations)
        other.operations = []

    def commit(self) -> None:
        """Record every operation as a decision on the session, in order; hand the binds to the
        session's `on_binds` at once."""
        binds: list[tuple[TaskInfo, str]] = []
        for op in self.operations:
            if op.kind is Operation.EVICT:
                self.ssn.evictions.append((op.task, op.reason))
            elif op.kind is Operation.ALLOCATE:
                binds.append((op.task, op.node))
        self.operations = []
        if binds:
            self.ssn.binds.extend(binds)
            if self.ssn.on_binds is not None:
                self.ssn.on_binds(binds)

    def discard(self) -> None:
        """Undo every operation, last first, restoring the state before each."""
        for op in reversed(self.operations):
            if op.kind is Operation.EVICT:
                node = self.ssn.nodes.get(op.node)
                if node is not None:
                    node.remove_task(op.task)
                self._set_status(op.task, op.previous)
                if node is not None:
                    node.add_task(op.task)
                self._notify(op.task, allocate=True)
            else:
                node = self.ssn.nodes.get(op.node)
                if node is not None:
                    node.remove_task(op.task)
                self._set_status(op.task, op.previous)
                # Handlers still see the node, as Volcano's unallocate calls them before clearing it.
                self._notify(op.task, allocate=False)
                op.task.node_name = ""
                self._own(op.task).node_name = ""
        self.operations = []
