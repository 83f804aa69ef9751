"""ReleasedTasks: what a plugin needs to index the placed pods late, as if it had indexed them at open.

A plugin that keeps an index of the pods on each node (predicates, nodeorder) can build it only when a
check first needs it: the nodes as they stand already hold every task placed this session, and the
tasks evicted or discarded since open, which the event handlers record here, are left out. That gives
the index that building at open and following every placement since would give.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from py_volcano.api import NodeInfo, TaskID, TaskInfo, TaskStatus

__all__ = ["ReleasedTasks"]


class ReleasedTasks:
    """The tasks taken off their nodes since the session opened, kept by `allocated`/`deallocated`."""

    __slots__ = ("_uids",)

    def __init__(self) -> None:
        self._uids: set[TaskID] = set()

    def allocated(self, task: TaskInfo) -> None:
        """Event handler: the task is placed again."""
        self._uids.discard(task.uid)

    def deallocated(self, task: TaskInfo) -> None:
        """Event handler: the task was evicted or its allocation discarded."""
        self._uids.add(task.uid)

    def placed(self, nodes: Sequence[NodeInfo]) -> Iterator[tuple[int, TaskInfo, bool]]:
        """Yield (position of its node in `nodes`, task, terminating) for every task on the nodes that was
        not released since open; terminating is Releasing at open (a deletionTimestamp), which topology
        spread does not count."""
        uids = self._uids
        for row, node in enumerate(nodes):
            for task in node.tasks.values():
                if task.uid not in uids:
                    yield row, task, task.status is TaskStatus.RELEASING
