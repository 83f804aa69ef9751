"""Actions, one module each, and the table that names them (no registration by import side effect)."""

from collections.abc import Mapping

from py_volcano.actions import allocate, backfill, enqueue, preempt, reclaim
from py_volcano.framework import ActionBuilder

__all__ = ["ACTIONS"]

ACTIONS: Mapping[str, ActionBuilder] = {
    enqueue.NAME: enqueue.new,
    allocate.NAME: allocate.new,
    backfill.NAME: backfill.new,
    preempt.NAME: preempt.new,
    reclaim.NAME: reclaim.new,
}
