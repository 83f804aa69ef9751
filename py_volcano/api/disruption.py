"""The disruptions a PodDisruptionBudget allows, as its status says or as the disruption controller would
compute it (for snapshots whose PDBs carry no status, as in scenarios)."""

from __future__ import annotations

import math
from collections.abc import Iterable

from py_volcano.api.job_info import TaskInfo
from py_volcano.api.manifests import PdbSpec
from py_volcano.api.types import TERMINATED, TaskID, TaskStatus

__all__ = ["disruptions_allowed", "scaled"]



def disruptions_allowed(pdb: PdbSpec, members: Iterable[TaskInfo], before: frozenset[TaskID]) -> int | None:
    """Disruptions allowed at the start of the cycle; None when the PDB sets no limit.

    `status.disruptionsAllowed` when present; else from `minAvailable`/`maxUnavailable` over the live
    `members` (the pods the PDB selects), `before` being those already leaving when the cycle opened.
    ValueError when an amount is neither an integer nor a percentage.
    """
    if pdb.disruptions_allowed is not None:
        return max(pdb.disruptions_allowed, 0)
    live = [task for task in members if task.status not in TERMINATED and task.uid not in before]
    # Running pods stand for the controller's healthy ones; pods evicted earlier this cycle still are.
    healthy = sum(1 for task in live if task.status in (TaskStatus.RUNNING, TaskStatus.RELEASING))
    expected = len(live)
    if pdb.min_available is not None:
        desired = scaled(pdb.min_available, expected)
    elif pdb.max_unavailable is not None:
        desired = max(expected - scaled(pdb.max_unavailable, expected), 0)
    else:
        return None
    return max(healthy - desired, 0)


def scaled(value: int | str, total: int) -> int:
    """Resolve an int-or-percent (`"50%"`) against `total`, rounding up as Kubernetes does for PDBs.

    ValueError names the value when it is neither.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = str(value).strip()
    try:
        if text.endswith("%"):
            return math.ceil(int(text[:-1]) * total / 100)
        return int(text)
    except ValueError:
        raise ValueError(f"not an integer or percentage: {value!r}") from None
