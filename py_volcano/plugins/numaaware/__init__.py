"""numa-aware: CPU-manager and topology-manager policies from each node's Numatopology, a node filter and a
node score (Volcano's numa-aware; docs/plugins.md, "numa-aware").

Layout: `cpu_assignment` (which CPUs a container takes), `policy` (topology hints and the topology
manager's policies), `plugin` (filter, score, and the CPUs placed tasks take, followed through events).
"""

from py_volcano.plugins.numaaware.plugin import NAME, NumaAwareArgs, NumaAwarePlugin

__all__ = ["NAME", "NumaAwareArgs", "new"]


def new(args: NumaAwareArgs) -> NumaAwarePlugin:
    """Build the plugin."""
    return NumaAwarePlugin(args)
