"""capacity: queue quotas from the Queue spec, flat or hierarchical (docs/semantics.md, "Capacity").

Layout: `args` (the plugin's arguments), `attrs` (per-queue accounting, the session tree), `flat` and
`hierarchy` (building it), `order` (share and queue orderings), `quota` (the checks), `reclaim` (who may
reclaim and which victims, with the ancestor levels), `state` (the dry-run copy for preempt), `plugin`
(the registered functions and the queue figures).
"""

from py_volcano.plugins.capacity.args import CapacityArgs
from py_volcano.plugins.capacity.plugin import NAME, CapacityPlugin

__all__ = ["NAME", "CapacityArgs", "new"]


def new(args: CapacityArgs) -> CapacityPlugin:
    """Build the plugin."""
    return CapacityPlugin(args)
