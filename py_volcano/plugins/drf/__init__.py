"""drf: Dominant Resource Fairness between jobs and, with `enableHierarchy: true`, between the queues of
a tree read from the queues' `volcano.sh/hierarchy` annotations (docs/semantics.md, "DRF")."""

from py_volcano.plugins.drf.hierarchy import HierarchicalShares, HierarchyNode
from py_volcano.plugins.drf.plugin import NAME, DrfPlugin, new
from py_volcano.plugins.drf.shares import SHARE_DELTA, DrfAttr, JobShares

__all__ = ["NAME", "SHARE_DELTA", "DrfAttr", "DrfPlugin", "HierarchicalShares", "HierarchyNode", "JobShares", "new"]
