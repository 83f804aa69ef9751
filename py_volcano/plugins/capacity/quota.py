"""The capacity checks on queue attributes: allocatable, enqueueable, preemptive, reclaim.

Each function names its section of docs/semantics.md. Quota checks compare only the dimensions a request
asks for above zero (docs/semantics.md, "Comparisons") and are made against realCapability, not
deserved, level by level from the queue up to the root.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from py_volcano.api import CPU, MEMORY, MIN_RESOURCE, ZERO, QueueID, Resource
from py_volcano.plugins.capacity.attrs import QueueAttr, lineage

__all__ = [
    "allocatable",
    "enqueue_shortage",
    "exceeds_deserved",
    "fits_real_capability",
    "has_relevant_deserved",
    "is_immediate_victim",
    "keeps_guarantee",
    "shares_dimension",
    "within_deserved_partly",
]


def _requested(req: Resource) -> Iterator[str]:
    if req.milli_cpu > 0:
        yield CPU
    if req.memory > 0:
        yield MEMORY
    for name, value in req.scalars.items():
        if value > 0:
            yield name


def _le(left: float, right: float) -> bool:
    return left < right or abs(left - right) < MIN_RESOURCE


def allocatable(attrs: Mapping[QueueID, QueueAttr], attr: QueueAttr, resreq: Resource) -> bool:
    """True when allocated + request <= realCapability at the queue and at every ancestor ("Capacity allocatable")."""
    for level in lineage(attrs, attr):
        if level.real_capability is None:
            return False
        future = level.allocated.clone().add(resreq)
        if not future.less_equal_with_dimension(level.real_capability, resreq):
            return False
    return True


def enqueue_shortage(
    attrs: Mapping[QueueID, QueueAttr], attr: QueueAttr, min_request: Resource
) -> tuple[str, list[str]] | None:
    """Check minReq + allocated + inqueue - elastic <= realCapability level by level ("Capacity enqueue").

    Return None when the job fits everywhere, else (the first queue that refuses, the dimensions short).
    """
    for level in lineage(attrs, attr):
        if level.real_capability is None:
            return level.name, list(_requested(min_request))
        wanted = min_request.clone().add(level.allocated).add(level.inqueue).sub_without_assert(level.elastic)
        fits, short = wanted.less_equal_with_dimension_and_resources_name(level.real_capability, min_request)
        if not fits:
            return level.name, short
    return None


def fits_real_capability(attr: QueueAttr, resreq: Resource) -> bool:
    """First half of "Capacity preemptive": allocated + request <= the queue's own realCapability."""
    if attr.real_capability is None:
        return False
    future = attr.allocated.clone().add(resreq)
    return future.less_equal_with_dimension(attr.real_capability, resreq)


def within_deserved_partly(allocated: Resource, deserved: Resource, resreq: Resource) -> bool:
    """Second half of "Capacity preemptive": in some requested dimension allocated + request <= deserved.

    Dimensions zero on both sides do not count, so a queue over its CPU share may still reclaim for a
    GPU task (Volcano's LessEqualPartlyWithDimensionZeroFiltered).
    """
    future = allocated.clone().add(resreq)
    for name in _requested(resreq):
        used, entitled = future.get(name), deserved.get(name)
        if used < MIN_RESOURCE and entitled < MIN_RESOURCE:
            continue
        if _le(used, entitled):
            return True
    return False


def shares_dimension(reclaimee: Resource, reclaimer: Resource) -> bool:
    """Check 1 of "Capacity reclaimable": the victim frees something the reclaimer asks for (pods aside)."""
    return not set(reclaimee.names()).isdisjoint(reclaimer.names())


def keeps_guarantee(allocated: Resource, reclaimee: Resource, guarantee: Resource) -> bool:
    """Check 2 of "Capacity reclaimable": the queue keeps at least its guarantee without the victim."""
    return guarantee.less_equal(allocated.clone().sub_without_assert(reclaimee), ZERO)


def is_immediate_victim(reclaimee: Resource, deserved: Resource) -> bool:
    """Check 3, first half, of "Capacity reclaimable": the victim uses nothing its queue deserves (borrowed)."""
    return set(reclaimee.names()).isdisjoint(deserved.names())


def has_relevant_deserved(request: Resource, deserved: Resource) -> bool:
    """True when the queue deserves some dimension the request asks for (Volcano's hasRelevantDeserved)."""
    return not is_immediate_victim(request, deserved)


def exceeds_deserved(allocated: Resource, deserved: Resource, reclaimee: Resource) -> bool:
    """Check 3, second half, of "Capacity reclaimable": allocated > deserved on a dimension the victim uses
    and the queue deserves."""
    relevant = (name for name in _requested(reclaimee) if _deserves(deserved, name))
    return any(allocated.get(name) > deserved.get(name) for name in relevant)


def _deserves(deserved: Resource, name: str) -> bool:
    # Volcano's GreaterPartlyWithRelevantDimensions: CPU and memory count when deserved is above the
    # tolerance, a scalar when deserved names it at all.
    if name in (CPU, MEMORY):
        return deserved.get(name) >= MIN_RESOURCE
    return name in deserved.scalars
