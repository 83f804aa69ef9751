"""Why a task fits no node, counted over every node at once (the fit errors of a pod that waits).

A task that fails is explained node by node as Volcano does (the first predicate that refuses, else
too many pods, else the first resource short: cpu, memory, then scalars by name), but only nodes a
predicate refuses are asked one by one: the resource shortfalls of the others come from the session's
node matrices in one pass. A backlog of pods that fit nowhere then costs a cycle a few vector
operations per pod, not a Python loop over every node.

`unholdable` asks the same against what each node allocates, empty: whether any node could ever hold
the task, which tells "no node can hold this pod" from "its queue has no room".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from py_volcano.api import PODS, FitErrors, FloatArray, MaskArray, TaskInfo

if TYPE_CHECKING:
    from py_volcano.framework.session import Session

__all__ = ["TOO_MANY_PODS", "explain", "unholdable"]

TOO_MANY_PODS = "Too many pods"


def _count_shortfalls(errors: FitErrors, ssn: Session, task: TaskInfo, rows: MaskArray, available: FloatArray) -> None:
    """Count, over the `rows` marked, the first shortfall of `task.init_resreq` and one pod slot against
    `available`: no pod slot, else the first dimension short (cpu, memory, then scalars by name; a scalar
    no node has, last)."""
    arrays = ssn.arrays
    pods = arrays.columns[PODS]
    chosen = available[rows]
    no_slot = chosen[:, pods] < 1
    if no_slot.any():
        errors.add(TOO_MANY_PODS, int(no_slot.sum()))
    request = arrays.request(task.init_resreq)
    chosen = chosen[~no_slot]
    if len(request) > chosen.shape[1]:  # a scalar no node has: a column none has, nowhere enough
        chosen = np.hstack((chosen, np.zeros((len(chosen), len(request) - chosen.shape[1]))))
    short = chosen <= request
    short[:, pods] = False
    first = np.argmax(short, axis=1)[short.any(axis=1)]
    wanted = task.init_resreq.scalars
    missing = sorted(name for name, value in wanted.items() if value > 0 and name not in arrays.columns)
    names = (*arrays.dims, *missing[:1])
    for column in np.flatnonzero(counts := np.bincount(first, minlength=len(names))):
        errors.add(f"Insufficient {names[column]}", int(counts[column]))


def _explain(
    ssn: Session, task: TaskInfo, passed: MaskArray, available: FloatArray, *, resolvable_passes: bool
) -> FitErrors:
    """Count why each node refuses: the first predicate's reason where `passed` is False (asked node by
    node), else the first shortfall against `available`. `passed` is the session's fresh mask."""
    errors = FitErrors()
    for index in np.flatnonzero(~passed):
        status = ssn.predicate(task, ssn.node_list[index])
        if status is not None and not (resolvable_passes and status.resolvable):
            errors.add(status.reason)
        else:
            passed[index] = True
    _count_shortfalls(errors, ssn, task, passed, available)
    return errors


def explain(ssn: Session, task: TaskInfo, *, for_preempt: bool = False) -> FitErrors:
    """Say why the task fits no node's future idle resources; with `for_preempt`, predicate failures
    that evicting pods could resolve do not count (the node is then judged on resources)."""
    passed = ssn.predicate_mask(task, for_preempt=for_preempt)
    return _explain(ssn, task, passed, ssn.arrays.future_idle(), resolvable_passes=for_preempt)


def unholdable(ssn: Session, task: TaskInfo) -> FitErrors | None:
    """Return why no node could hold the task even empty (predicates eviction cannot resolve, then what
    each node allocates); None when one could."""
    arrays = ssn.arrays
    passed = ssn.predicate_mask(task, for_preempt=True)
    if (passed & arrays.fits(arrays.request(task.init_resreq), arrays.allocatable)).any():
        return None
    return _explain(ssn, task, passed, arrays.allocatable, resolvable_passes=True)
