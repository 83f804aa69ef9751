"""numa-aware's topology hints, policies and CPU choice (Volcano's policy and cpumanager provider packages)."""

from __future__ import annotations

import pytest

from py_volcano.api import CpuInfo
from py_volcano.plugins.numaaware import policy
from py_volcano.plugins.numaaware.cpu_assignment import take_by_topology
from py_volcano.plugins.numaaware.policy import TopologyHint

#: Two NUMA nodes (one socket each) of 4 single-thread cores: CPUs 0-3 and 4-7.
TWO_NUMA = {cpu: CpuInfo(numa=cpu // 4, socket=cpu // 4, core=cpu) for cpu in range(8)}
#: One socket of 4 cores with 2 threads each: CPUs i and i + 4 share core i.
HYPERTHREADED = {cpu: CpuInfo(numa=0, socket=0, core=cpu % 4) for cpu in range(8)}


def test_hints_prefer_the_smallest_span_that_could_hold_the_request() -> None:
    """3 CPUs fit one NUMA node of an empty machine: the single-node hints are preferred, the pair is not;
    with NUMA node 0 down to 2 free CPUs its hint goes."""
    everything = frozenset(range(8))
    assert policy.cpu_hints(TWO_NUMA, everything, 3) == [
        TopologyHint(0b01, True),
        TopologyHint(0b10, True),
        TopologyHint(0b11, False),
    ]
    assert policy.cpu_hints(TWO_NUMA, frozenset({2, 3, 4, 5, 6, 7}), 3) == [
        TopologyHint(0b10, True),
        TopologyHint(0b11, False),
    ]
    assert policy.cpu_hints(TWO_NUMA, everything, 6) == [TopologyHint(0b11, True)]
    assert policy.cpu_hints(TWO_NUMA, frozenset({1, 2}), 3) == []


@pytest.mark.parametrize(
    ("name", "hints", "best", "admitted"),
    [
        pytest.param(
            "single-numa-node", [TopologyHint(0b11, True)], TopologyHint(0b11, False), False, id="single-pair"
        ),
        pytest.param("restricted", [TopologyHint(0b11, True)], TopologyHint(0b11, True), True, id="restricted-pair"),
        pytest.param(
            "restricted",
            [TopologyHint(0b01, True), TopologyHint(0b10, True), TopologyHint(0b11, False)],
            TopologyHint(0b01, True),
            True,
            id="narrowest-lowest",
        ),
        pytest.param("restricted", [], TopologyHint(0b11, False), False, id="restricted-nothing-fits"),
        pytest.param("best-effort", [], TopologyHint(0b11, False), True, id="best-effort-nothing-fits"),
        pytest.param("single-numa-node", None, TopologyHint(0b11, True), True, id="no-preference"),
        pytest.param("none", [], TopologyHint(None, False), True, id="none"),
        pytest.param("unknown-policy", [], TopologyHint(None, False), True, id="unknown-is-none"),
    ],
)
def test_policies(name: str, hints: list[TopologyHint] | None, best: TopologyHint, admitted: bool) -> None:
    assert policy.admit(name, [0, 1], hints) == (best, admitted)


def test_whole_cores_before_single_threads() -> None:
    """2 CPUs of a hyperthreaded socket are one whole core (0 and its sibling 4); a third comes from the next
    core. Volcano's copy takes a core's free threads even when the core is partly used (1 of core 1 first)."""
    everything = frozenset(range(8))
    assert take_by_topology(HYPERTHREADED, everything, 2) == frozenset({0, 4})
    assert take_by_topology(HYPERTHREADED, everything, 3) == frozenset({0, 1, 4})
    assert take_by_topology(HYPERTHREADED, frozenset({1, 2, 6}), 2) == frozenset({1, 2})


def test_whole_sockets_and_shortfalls() -> None:
    """A request of a socket's worth takes a free socket whose id is also a free CPU id (Volcano's test);
    asking more than is free finds nothing; asking none takes nothing."""
    assert take_by_topology(TWO_NUMA, frozenset(range(8)), 4) == frozenset({0, 1, 2, 3})
    assert take_by_topology(TWO_NUMA, frozenset({1, 2}), 3) is None
    assert take_by_topology(TWO_NUMA, frozenset(range(8)), 0) == frozenset()
