"""Flat mode: every queue on its own, bounded by the cluster less the others' guarantees.

The rules (docs/semantics.md, "Flat capacity"): realCapability = min(capability, ExceededPart(total, sum
of all guarantees) + own guarantee); deserved comes from the spec, lowered to realCapability, then
raised to the guarantee.
"""

from __future__ import annotations

from py_volcano.api import INFINITY, Resource
from py_volcano.framework import Session
from py_volcano.plugins.capacity.attrs import QueueAttr, QueueTree, add_job_usage

__all__ = ["build_flat", "unlimited_unset"]

_UNLIMITED = float("inf")


def unlimited_unset(capability: Resource) -> Resource:
    """Treat CPU or memory that a capability leaves unset (<= 0) as unlimited, in place."""
    if capability.milli_cpu <= 0:
        capability.milli_cpu = _UNLIMITED
    if capability.memory <= 0:
        capability.memory = _UNLIMITED
    return capability


def build_flat(ssn: Session) -> QueueTree:
    """Build every queue's attributes from the spec and the session's jobs."""
    total_guarantee = Resource()
    for queue in ssn.queues.values():
        if queue.guarantee is not None:
            total_guarantee.add(queue.guarantee)
    contested = ssn.total_resource.exceeded_part(total_guarantee)
    attrs = {}
    for queue in ssn.queues.values():
        attr = QueueAttr.from_queue(queue)
        real = contested.clone().add(attr.guarantee)
        if attr.capability is not None:
            real.min_dimension_resource(unlimited_unset(attr.capability), INFINITY)
        attr.real_capability = real
        attr.deserved.min_dimension_resource(real, INFINITY).set_max_resource(attr.guarantee)
        attrs[queue.uid] = attr
    for job in ssn.jobs.values():
        owner = attrs.get(job.queue)
        if owner is not None:
            add_job_usage(attrs, owner, job)
    for attr in attrs.values():
        attr.update_share()
    return QueueTree(attrs, hierarchical=False)
