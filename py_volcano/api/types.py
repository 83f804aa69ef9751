"""Statuses, votes, phases and typed ids shared by every layer (docs/semantics.md, "Task statuses")."""

from __future__ import annotations

from enum import Enum, IntEnum
from typing import NewType

__all__ = [
    "TERMINATED",
    "JobID",
    "PodGroupPhase",
    "QueueID",
    "QueueState",
    "TaskID",
    "TaskStatus",
    "Vote",
    "is_allocated_status",
    "is_preemptable_status",
]

JobID = NewType("JobID", str)
TaskID = NewType("TaskID", str)
QueueID = NewType("QueueID", str)


class TaskStatus(Enum):
    """Where a task (pod) stands in the scheduler's eyes."""

    PENDING = "Pending"
    ALLOCATED = "Allocated"
    PIPELINED = "Pipelined"
    BINDING = "Binding"
    BOUND = "Bound"
    RUNNING = "Running"
    RELEASING = "Releasing"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"

    #: Members are singletons compared by identity, so the identity hash agrees with equality; Enum's own
    #: hashes the name in Python, and a cycle looks statuses up millions of times (indexes, sets).
    __hash__ = object.__hash__


_ALLOCATED = frozenset({TaskStatus.BOUND, TaskStatus.BINDING, TaskStatus.RUNNING, TaskStatus.ALLOCATED})
_PREEMPTABLE = frozenset({TaskStatus.BOUND, TaskStatus.RUNNING})
#: Statuses of tasks that finished: they hold no node (their pods are on no node's list).
TERMINATED = frozenset({TaskStatus.SUCCEEDED, TaskStatus.FAILED})


def is_allocated_status(status: TaskStatus) -> bool:
    """True for statuses that hold node resources: Allocated, Binding, Bound, Running."""
    return status in _ALLOCATED


def is_preemptable_status(status: TaskStatus) -> bool:
    """True for statuses a victim may be taken from."""
    return status in _PREEMPTABLE


class Vote(IntEnum):
    """A plugin's answer at a voting extension point."""

    REJECT = -1
    ABSTAIN = 0
    PERMIT = 1


class PodGroupPhase(Enum):
    """PodGroup `status.phase`."""

    PENDING = "Pending"
    INQUEUE = "Inqueue"
    RUNNING = "Running"
    UNKNOWN = "Unknown"
    COMPLETED = "Completed"

    __hash__ = object.__hash__  # as TaskStatus's


class QueueState(Enum):
    """Queue `status.state`."""

    OPEN = "Open"
    CLOSED = "Closed"
    CLOSING = "Closing"
    UNKNOWN = "Unknown"
