"""proportion: share the cluster among queues by weight (seed 000, Volcano's proportion plugin)."""

from py_volcano.plugins.proportion.plugin import NAME, new

__all__ = ["NAME", "new"]
