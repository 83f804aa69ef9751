"""proportion: share the cluster among queues by weight, as Volcano's proportion plugin (docs/semantics.md)."""

from py_volcano.plugins.proportion.plugin import NAME, new

__all__ = ["NAME", "new"]
