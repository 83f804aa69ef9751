"""rescheduling: choose running tasks to move off over-used nodes, for the shuffle action to evict."""

from py_volcano.plugins.rescheduling.plugin import NAME, ReschedulingArgs, new

__all__ = ["NAME", "ReschedulingArgs", "new"]
