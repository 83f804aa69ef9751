"""DrfPlugin: registers flat DRF's job order, preemptable rule and event handlers and, with
`enableHierarchy: true`, hierarchical DRF's queue order and reclaimable rule (docs/semantics.md, "DRF").

Volcano's flat mode registers no namespace order any more (namespace fair share went in v1.8), so
neither does this.
"""

from __future__ import annotations

from py_volcano.api import JobInfo, TaskInfo
from py_volcano.framework import EventHandler, NoArgs, Session
from py_volcano.plugins.drf.hierarchy import HierarchicalShares
from py_volcano.plugins.drf.shares import JobShares

__all__ = ["NAME", "DrfPlugin", "new"]

NAME = "drf"


class DrfPlugin:
    """Dominant Resource Fairness: job order and preemption victims by dominant share; with hierarchy,
    queue order and reclaim victims by the queues' hierarchical shares."""

    name = NAME

    def __init__(self, args: NoArgs) -> None:
        self.args = args
        self.shares: JobShares | None = None
        self.hierarchy: HierarchicalShares | None = None

    def on_session_open(self, ssn: Session) -> None:
        """Compute the shares (and the tree) and register the extension functions and event handlers."""
        shares = self.shares = JobShares.build(ssn)
        ssn.add_preemptable_fn(NAME, shares.preemptable)
        ssn.add_job_order_fn(NAME, shares.job_order)
        if _hierarchy_enabled(ssn):
            tree = self.hierarchy = HierarchicalShares.build(shares, ssn)
            ssn.add_queue_order_fn(NAME, tree.queue_order)
            ssn.add_reclaimable_fn(NAME, tree.reclaimable)
        ssn.add_event_handler(EventHandler(allocate=self.allocated, deallocate=self.deallocated))

    def allocated(self, task: TaskInfo) -> None:
        """Event handler: count an allocated or pipelined task in its job's share and in the tree."""
        if self.shares is not None:
            self.shares.on_allocate(task)
        if self.hierarchy is not None:
            self.hierarchy.changed(task, 1)

    def deallocated(self, task: TaskInfo) -> None:
        """Event handler: stop counting an evicted or discarded task."""
        if self.shares is not None:
            self.shares.on_deallocate(task)
        if self.hierarchy is not None:
            self.hierarchy.changed(task, -1)

    def on_job_added(self, ssn: Session, job: JobInfo) -> None:
        """Give the job its share (and its leaf in the tree), as the session's opening does."""
        if self.shares is None:
            return
        attr = self.shares.add_job(job)
        if self.hierarchy is not None:
            self.hierarchy.add_job(job, attr, ssn.queues.get(job.queue))

    def on_session_close(self, ssn: Session) -> None:
        """Drop the session's shares."""
        self.shares = None
        self.hierarchy = None


def _hierarchy_enabled(ssn: Session) -> bool:
    """Volcano enables hierarchical DRF only when the switch is written and true (unlike other switches)."""
    for tier in ssn.conf.tiers:
        for option in tier:
            if option.name == NAME:
                return option.switches.get("hierarchy") is True
    return False


def new(args: NoArgs) -> DrfPlugin:
    """Build the plugin."""
    return DrfPlugin(args)
