"""The few generic tier walkers every extension point is built on (Volcano's session_plugins.go).

`tiers` is a list, one entry a tier, of the functions that enabled plugins registered at a point,
in plugin order. Each walker states the semantics it implements; docs/semantics.md, "Dispatch over tiers",
has the rules. The `first_*` and `tiered_veto` walkers say where the refusing function stands (tier index,
index in its tier), so the session can name the plugin that held a job.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from py_volcano.api import TaskInfo, Vote

__all__ = [
    "Position",
    "all_pass",
    "any_true",
    "first_false",
    "first_nonzero",
    "first_true",
    "tiered_starving",
    "tiered_veto",
    "tiered_victims",
    "tiered_vote",
]

T = TypeVar("T")
Tiers = Sequence[Sequence[Callable[..., T]]]
#: Where a function stands in its tiers: (tier index, index in the tier).
Position = tuple[int, int]


def first_nonzero(tiers: Tiers[int], *args: object) -> int:
    """Return the first non-zero answer across tiers and plugins (orderings); 0 when none decides."""
    for tier in tiers:
        for fn in tier:
            result = fn(*args)
            if result != 0:
                return result
    return 0


def all_pass(tiers: Tiers[bool], *args: object) -> bool:
    """True unless some plugin in any tier answers False (job ready, allocatable, preemptive)."""
    return first_false(tiers, *args) is None


def first_false(tiers: Tiers[bool], *args: object) -> Position | None:
    """Return the first function answering False (`all_pass` fails there); None when all pass."""
    for t, tier in enumerate(tiers):
        for i, fn in enumerate(tier):
            if not fn(*args):
                return t, i
    return None


def any_true(tiers: Tiers[bool], *args: object) -> bool:
    """True when some plugin in any tier answers True (overused)."""
    return first_true(tiers, *args) is not None


def first_true(tiers: Tiers[bool], *args: object) -> Position | None:
    """Return the first function answering True (`any_true` holds there); None when none does."""
    for t, tier in enumerate(tiers):
        for i, fn in enumerate(tier):
            if fn(*args):
                return t, i
    return None


def tiered_veto(tiers: Tiers[Vote], *args: object) -> Position | None:
    """Return the reject that refuses the vote; None when it accepts (see `tiered_vote`)."""
    for t, tier in enumerate(tiers):
        permitted = False
        for i, fn in enumerate(tier):
            vote = fn(*args)
            if vote < 0:
                return t, i
            if vote > 0:
                permitted = True
        if permitted:
            return None
    return None


def tiered_vote(tiers: Tiers[Vote], *args: object) -> bool:
    """A reject anywhere refuses; a tier with a permit accepts; abstention everywhere accepts."""
    return tiered_veto(tiers, *args) is None


def tiered_starving(tiers: Tiers[bool], *args: object) -> bool:
    """False when a plugin says not starving; True when a tier implements it; False when none does."""
    for tier in tiers:
        for fn in tier:
            if not fn(*args):
                return False
        if tier:
            return True
    return False


VictimFn = Callable[[Any, list[TaskInfo]], tuple[list[TaskInfo], Vote]]


def tiered_victims(
    tiers: Sequence[Sequence[VictimFn]], preemptor: object, candidates: list[TaskInfo]
) -> list[TaskInfo]:
    """Intersect the victims of the voting plugins of a tier; an empty tier result defers to the next tier.

    As in Volcano, an intersection that comes out empty counts as no choice yet: the tier's next plugin
    starts the list again from its own victims (a plugin that chooses none ends the tier at once).

    `preemptor` is what the functions are asked for: a task (preemptable, reclaimable) or an eviction
    context (unified_evictable)."""
    for tier in tiers:
        victims: list[TaskInfo] | None = None
        for fn in tier:
            chosen, vote = fn(preemptor, candidates)
            if vote == Vote.ABSTAIN:
                continue
            if not chosen:
                victims = None
                break
            if victims is None:
                victims = list(chosen)
            else:
                keep = {task.uid for task in chosen}
                # An empty intersection is Go's nil slice in Volcano's Preemptable: the next plugin of
                # the tier starts the list afresh with its own choice.
                victims = [task for task in victims if task.uid in keep] or None
        if victims:
            return victims
    return []


def tiered_union(tiers: Tiers[list[TaskInfo]], tasks: list[TaskInfo]) -> list[TaskInfo]:
    """Unite the victims every plugin of a tier chooses (each once, first choice first); a tier choosing
    none defers to the next (Volcano's VictimTasks)."""
    for tier in tiers:
        chosen: dict[str, TaskInfo] = {}
        for fn in tier:
            for task in fn(tasks):
                chosen.setdefault(task.uid, task)
        if chosen:
            return list(chosen.values())
    return []
