"""conformance: never offer critical pods (kube-system, system-*-critical classes) as victims."""

from __future__ import annotations

from py_volcano.api import JobInfo, TaskInfo, Vote
from py_volcano.framework import EvictionContext, NoArgs, Session

__all__ = ["NAME", "ConformancePlugin", "new"]

NAME = "conformance"
_CRITICAL_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})
_SYSTEM_NAMESPACE = "kube-system"


class ConformancePlugin:
    """Filters victims of preempt and reclaim."""

    name = NAME

    def __init__(self, args: NoArgs) -> None:
        self.args = args

    def on_session_open(self, ssn: Session) -> None:
        """Register the victim filter for preempt and reclaim, and as a hard filter no tier can bypass."""
        ssn.add_preemptable_fn(NAME, evictable)
        ssn.add_reclaimable_fn(NAME, evictable)
        ssn.add_evictable_fn(NAME, is_evictable)
        ssn.add_unified_evictable_fn(NAME, gang_evictable)

    def on_session_close(self, ssn: Session) -> None:
        """Nothing to report."""

    def on_job_added(self, ssn: Session, job: JobInfo) -> None:
        """Nothing to count: its filters read tasks only."""


def is_evictable(task: TaskInfo) -> bool:
    """True unless the task is in kube-system or of a system-critical priority class."""
    return task.namespace != _SYSTEM_NAMESPACE and task.priority_class_name not in _CRITICAL_CLASSES


def evictable(evictor: TaskInfo, evictees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
    """Keep every evictee that is neither in kube-system nor of a system-critical priority class."""
    return [task for task in evictees if is_evictable(task)], Vote.PERMIT


def gang_evictable(context: EvictionContext, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
    """The same filter for the gang-aware actions."""
    return [task for task in candidates if is_evictable(task)], Vote.PERMIT


def new(args: NoArgs) -> ConformancePlugin:
    """Build the plugin."""
    return ConformancePlugin(args)
