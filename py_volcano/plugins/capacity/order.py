"""Queue orderings of the capacity plugin: by share, by common ancestor, and of victim queues.

The rules: docs/semantics.md, "Capacity queue order" and "Victim queue order by common ancestor". Every
function returns a negative number when `l` goes first, as Volcano's order functions do.
"""

from __future__ import annotations

from collections.abc import Mapping

from py_volcano.api import QueueID, QueueInfo
from py_volcano.plugins.capacity.attrs import QueueAttr

__all__ = [
    "compare_share_with_deserved",
    "flat_queue_order",
    "hierarchical_queue_order",
    "queue_level",
    "victim_queue_order",
]


def compare_share_with_deserved(l: QueueAttr, r: QueueAttr) -> int:
    """Lower share first; on equal shares a queue with deserved goes before a best-effort one."""
    if l.share == r.share:
        l_deserved, r_deserved = l.has_deserved(), r.has_deserved()
        if l_deserved == r_deserved:
            return 0
        return -1 if l_deserved else 1
    return -1 if l.share < r.share else 1


def queue_level(l: QueueAttr, r: QueueAttr) -> int:
    """Return the index in `ancestors` of the deepest common ancestor (0, the root, when none deeper)."""
    level = 0
    for index, (left, right) in enumerate(zip(l.ancestors, r.ancestors, strict=False)):
        if left != right:
            return level
        level = index
    return level


def _by_priority(l: QueueInfo, r: QueueInfo) -> int:
    return r.priority - l.priority


def flat_queue_order(attrs: Mapping[QueueID, QueueAttr], l: QueueInfo, r: QueueInfo) -> int:
    """Higher queue priority first, then `compare_share_with_deserved`."""
    if l.priority != r.priority:
        return _by_priority(l, r)
    l_attr, r_attr = attrs.get(l.uid), attrs.get(r.uid)
    if l_attr is None or r_attr is None:
        return 0
    return compare_share_with_deserved(l_attr, r_attr)


def hierarchical_queue_order(attrs: Mapping[QueueID, QueueAttr], l: QueueInfo, r: QueueInfo) -> int:
    """Priority, then leaves before inner queues, then two leaves by the shares one level below their
    deepest common ancestor (training vs batch compare team-a vs team-b; siblings compare themselves).
    """
    if l.priority != r.priority:
        return _by_priority(l, r)
    l_attr, r_attr = attrs.get(l.uid), attrs.get(r.uid)
    if l_attr is None or r_attr is None:
        return 0
    l_leaf, r_leaf = not l_attr.children, not r_attr.children
    if l_leaf != r_leaf:
        return -1 if l_leaf else 1
    if not l_leaf:
        return compare_share_with_deserved(l_attr, r_attr)
    level = queue_level(l_attr, r_attr)
    l_side = attrs[l_attr.ancestors[level + 1]] if level + 1 < len(l_attr.ancestors) else l_attr
    r_side = attrs[r_attr.ancestors[level + 1]] if level + 1 < len(r_attr.ancestors) else r_attr
    return compare_share_with_deserved(l_side, r_side)


def victim_queue_order(attrs: Mapping[QueueID, QueueAttr], l: QueueInfo, r: QueueInfo, preemptor: QueueInfo) -> int:
    """Victims first from the queue sharing the deeper common ancestor with the preemptor's queue."""
    l_attr, r_attr, p_attr = attrs.get(l.uid), attrs.get(r.uid), attrs.get(preemptor.uid)
    if l_attr is None or r_attr is None or p_attr is None:
        return 0
    l_level, r_level = queue_level(l_attr, p_attr), queue_level(r_attr, p_attr)
    if l_level == r_level:
        return 0
    return -1 if l_level > r_level else 1
