"""capacity: queue quotas from the Queue spec, flat or hierarchical (docs/semantics.md, "Capacity").

Layout: `attrs` (per-queue accounting, the session tree), `flat` and `hierarchy` (building it),
`order` (share and queue orderings), `quota` (the checks), `state` (the dry-run copy for preempt),
`plugin` (the registered functions and the queue figures).
"""

from py_volcano.framework import NoArgs
from py_volcano.plugins.capacity.plugin import NAME, CapacityPlugin

__all__ = ["NAME", "new"]


def new(args: NoArgs) -> CapacityPlugin:
    """Build the plugin."""
    return CapacityPlugin(args)
