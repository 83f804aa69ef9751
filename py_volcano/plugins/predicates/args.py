"""The predicates plugin's arguments: which of Kubernetes' node filters run (Volcano's `predicate.XxxEnable`)."""

from __future__ import annotations

from dataclasses import dataclass

from py_volcano.framework import Arguments

__all__ = ["PredicatesArgs"]


@dataclass(slots=True, frozen=True)
class PredicatesArgs:
    """Which filters run; all on by default, as in Volcano."""

    node_affinity: bool = True
    """`predicate.NodeAffinityEnable`: node selector and required node affinity."""
    node_ports: bool = True
    """`predicate.NodePortsEnable`: host ports."""
    taint_toleration: bool = True
    """`predicate.TaintTolerationEnable`: NoSchedule and NoExecute taints."""
    pod_affinity: bool = True
    """`predicate.PodAffinityEnable`: inter-pod affinity and anti-affinity."""
    pod_topology_spread: bool = True
    """`predicate.PodTopologySpreadEnable`: `DoNotSchedule` topology spread constraints."""
    dynamic_resource_allocation: bool = False
    """`predicate.DynamicResourceAllocationEnable`: py-volcano does not allocate ResourceClaims; on, a pod
    that names one is left pending with that reason instead of being placed without its devices."""

    @classmethod
    def parse(cls, args: Arguments) -> PredicatesArgs:
        """Read the arguments; ConfigError on a value that is not true or false."""
        return cls(
            node_affinity=args.get_bool("predicate.NodeAffinityEnable", True),
            node_ports=args.get_bool("predicate.NodePortsEnable", True),
            taint_toleration=args.get_bool("predicate.TaintTolerationEnable", True),
            pod_affinity=args.get_bool("predicate.PodAffinityEnable", True),
            pod_topology_spread=args.get_bool("predicate.PodTopologySpreadEnable", True),
            dynamic_resource_allocation=args.get_bool("predicate.DynamicResourceAllocationEnable", False),
        )
