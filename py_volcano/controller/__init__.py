"""The PodGroup controller: one PodGroup per workload, as Volcano's podgroup controller makes them.

It sits beside the cache (it reads the store through a narrow view and writes through the cache's API
client) and never imports the framework, actions or plugins; `py-volcano run` runs it unless
`--no-podgroup-controller`.
"""

from py_volcano.controller.operator import ClusterView, PodGroupController
from py_volcano.controller.owners import WATCHED, Owner, OwnerIndex, OwnerKind
from py_volcano.controller.podgroups import MIN_MEMBER_ANNOTATION, DesiredGroup, desired_group, group_name

__all__ = [
    "MIN_MEMBER_ANNOTATION",
    "WATCHED",
    "ClusterView",
    "DesiredGroup",
    "Owner",
    "OwnerIndex",
    "OwnerKind",
    "PodGroupController",
    "desired_group",
    "group_name",
]
