"""The few generic tier walkers every extension point is built on (Volcano's session_plugins.go).

`tiers` is a list, one entry a tier, of the functions that enabled plugins registered at a point,
in plugin order. Each walker states the semantics it implements; docs/semantics.md, "Dispatch over tiers",
has the rules.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from py_volcano.api import TaskInfo, Vote

__all__ = [
    "all_pass",
    "any_true",
    "first_nonzero",
    "tiered_starving",
    "tiered_victims",
    "tiered_vote",
]

T = TypeVar("T")
Tiers = Sequence[Sequence[Callable[..., T]]]


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
    return all(fn(*args) for tier in tiers for fn in tier)


def any_true(tiers: Tiers[bool], *args: object) -> bool:
    """True when some plugin in any tier answers True (overused)."""
    return any(fn(*args) for tier in tiers for fn in tier)


def tiered_vote(tiers: Tiers[Vote], *args: object) -> bool:
    """A reject anywhere refuses; a tier with a permit accepts; abstention everywhere accepts."""
    for tier in tiers:
        permitted = False
        for fn in tier:
            vote = fn(*args)
            if vote < 0:
                return False
            if vote > 0:
                permitted = True
        if permitted:
            return True
    return True


def tiered_starving(tiers: Tiers[bool], *args: object) -> bool:
    """False when a plugin says not starving; True when a tier implements it; False when none does."""
    for tier in tiers:
        for fn in tier:
            if not fn(*args):
                return False
        if tier:
            return True
    return False


VictimFn = Callable[[TaskInfo, list[TaskInfo]], tuple[list[TaskInfo], Vote]]


def tiered_victims(
    tiers: Sequence[Sequence[VictimFn]], preemptor: TaskInfo, candidates: list[TaskInfo]
) -> list[TaskInfo]:
    """Intersect the victims of the voting plugins of a tier; an empty tier result defers to the next tier."""
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
                victims = [task for task in victims if task.uid in keep]
        if victims:
            return victims
    return []
