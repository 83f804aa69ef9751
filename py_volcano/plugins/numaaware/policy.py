"""Topology hints and the topology manager's policies, as Volcano's numa-aware applies them per container.

A hint is a set of NUMA nodes (a bitmask, bit `i` for node `i`; None: any node) and whether it is
preferred. The CPU provider gives one hint per set of NUMA nodes whose free CPUs hold the request,
preferred when the set is as small as any set that could hold it on an empty node. A policy merges the
hints into the best one and admits the container or not: `none` always (and no affinity),
`best-effort` always, `restricted` only on a preferred hint, `single-numa-node` only on a preferred
hint of one NUMA node.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from py_volcano.api import CpuInfo

__all__ = [
    "BEST_EFFORT",
    "NONE",
    "RESTRICTED",
    "SINGLE_NUMA_NODE",
    "TopologyHint",
    "admit",
    "cpu_hints",
    "mask",
    "nodes_of",
]

NONE, BEST_EFFORT, RESTRICTED, SINGLE_NUMA_NODE = "none", "best-effort", "restricted", "single-numa-node"
_ANY = CpuInfo()


@dataclass(slots=True, frozen=True)
class TopologyHint:
    """A NUMA affinity (bitmask; None: no preference for a node) and whether it is preferred."""

    affinity: int | None
    preferred: bool


def mask(numa_nodes: Iterable[int]) -> int:
    """Return the bitmask of `numa_nodes`."""
    bits = 0
    for node in numa_nodes:
        bits |= 1 << node
    return bits


def nodes_of(bits: int) -> list[int]:
    """Return the NUMA nodes of a bitmask, ascending."""
    return [i for i in range(bits.bit_length()) if bits >> i & 1]


def cpu_hints(cpus: Mapping[int, CpuInfo], available: frozenset[int], request: int) -> list[TopologyHint]:
    """Return the CPU provider's hints for `request` whole CPUs out of `available` (`cpus`: the node's
    CPUs and their places)."""
    numa_nodes = sorted({info.numa for info in cpus.values()})
    smallest = len(numa_nodes)
    found: list[tuple[int, int]] = []
    for size in range(1, len(numa_nodes) + 1):
        for subset in itertools.combinations(numa_nodes, size):
            wanted = set(subset)
            if size < smallest and sum(1 for info in cpus.values() if info.numa in wanted) >= request:
                smallest = size
            if sum(1 for cpu in available if cpus.get(cpu, _ANY).numa in wanted) >= request:
                found.append((mask(subset), size))
    return [TopologyHint(bits, size == smallest) for bits, size in found]


def _narrower(a: int, b: int) -> bool:
    """Whether affinity `a` has fewer NUMA nodes than `b`, or as many with lower-numbered ones."""
    count_a, count_b = a.bit_count(), b.bit_count()
    return a < b if count_a == count_b else count_a < count_b


def _merge(numa_nodes: Sequence[int], providers: Sequence[Sequence[TopologyHint]]) -> TopologyHint:
    """The best of the merged permutations of the providers' hints (the kubelet's mergeFilteredHints)."""
    default = mask(numa_nodes)
    best = TopologyHint(default, False)
    for permutation in itertools.product(*providers):
        affinity = default
        for hint in permutation:
            affinity &= default if hint.affinity is None else hint.affinity
        preferred = all(hint.preferred for hint in permutation)
        if affinity == 0 or (best.preferred and not preferred):
            continue
        assert best.affinity is not None
        if (preferred and not best.preferred) or _narrower(affinity, best.affinity):
            best = TopologyHint(affinity, preferred)
    return best


def admit(policy: str, numa_nodes: Sequence[int], hints: list[TopologyHint] | None) -> tuple[TopologyHint, bool]:
    """Return the best hint of one container under the node's topology manager `policy`, and whether the
    policy admits it. `hints` is the CPU provider's answer; None when it has no preference (no whole CPU
    asked, or the node reports no CPUs)."""
    if policy not in (BEST_EFFORT, RESTRICTED, SINGLE_NUMA_NODE):
        return TopologyHint(None, False), True
    if hints is None:
        provider = [TopologyHint(None, True)]
    elif not hints:
        provider = [TopologyHint(None, False)]
    else:
        provider = hints
    if policy == SINGLE_NUMA_NODE:
        provider = [h for h in provider if h.preferred and (h.affinity is None or h.affinity.bit_count() == 1)]
    best = _merge(numa_nodes, [provider])
    return best, policy == BEST_EFFORT or best.preferred
