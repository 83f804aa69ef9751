"""predicates: Kubernetes' node filters (node selector and affinity, taints, unschedulable and not-ready
nodes, host ports, inter-pod affinity, DoNotSchedule topology spread), vectorised over all nodes;
resources and pod count are the framework's fit."""

from py_volcano.plugins.predicates.args import PredicatesArgs
from py_volcano.plugins.predicates.plugin import NAME, PredicatesPlugin, new

__all__ = ["NAME", "PredicatesArgs", "PredicatesPlugin", "new"]
