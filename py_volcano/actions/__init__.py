"""Actions, one module each, and the table that names them with their argument parsers (no registration by
import side effect)."""

from collections.abc import Mapping
from typing import Any

from py_volcano.actions import allocate, backfill, enqueue, gangpreempt, gangreclaim, preempt, reclaim, shuffle
from py_volcano.framework import ActionEntry, NoArgs

__all__ = ["ACTIONS"]

ACTIONS: Mapping[str, ActionEntry[Any]] = {
    enqueue.NAME: ActionEntry(NoArgs.parse, enqueue.new),
    allocate.NAME: ActionEntry(NoArgs.parse, allocate.new),
    backfill.NAME: ActionEntry(NoArgs.parse, backfill.new),
    preempt.NAME: ActionEntry(preempt.PreemptArgs.parse, preempt.new),
    reclaim.NAME: ActionEntry(NoArgs.parse, reclaim.new),
    shuffle.NAME: ActionEntry(NoArgs.parse, shuffle.new),
    gangpreempt.NAME: ActionEntry(gangpreempt.GangEvictionArgs.parse, gangpreempt.new),
    gangreclaim.NAME: ActionEntry(gangpreempt.GangEvictionArgs.parse, gangreclaim.new),
}
