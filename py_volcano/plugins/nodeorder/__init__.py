"""nodeorder: Kubernetes' node scores (least/most requested, balanced allocation, preferred node affinity,
PreferNoSchedule taints, inter-pod affinity, topology spread) with Volcano's weights, vectorised over the
candidate nodes."""

from py_volcano.plugins.nodeorder.plugin import NAME, NodeOrderArgs, NodeOrderPlugin, new

__all__ = ["NAME", "NodeOrderArgs", "NodeOrderPlugin", "new"]
