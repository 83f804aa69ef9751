"""The capacity plugin's arguments (its hierarchy switch is a plugin switch, read from the tiers)."""

from __future__ import annotations

from dataclasses import dataclass

from py_volcano.framework import Arguments

__all__ = ["CapacityArgs"]


@dataclass(slots=True, frozen=True)
class CapacityArgs:
    """capacity's arguments, with Volcano's defaults."""

    ancestor_reclaim_level: int = 0
    """`ancestorReclaimLevel`: how many levels above the reclaimer's and the victim's queues reclaim also
    compares deserved with allocated (docs/semantics.md, "Reclaim by ancestors"); 0 compares the leaf
    queues only. Read only with hierarchy; a negative value means 0, as in Volcano."""

    @classmethod
    def parse(cls, args: Arguments) -> CapacityArgs:
        """Read the arguments; ConfigError on a value that is not an integer."""
        return cls(ancestor_reclaim_level=max(args.get_int("ancestorReclaimLevel", 0), 0))
