"""Numatopology parsing (policies, reservations, NUMA resources, CPU topology), malformed objects, the store
hanging each one on its node, and which pods have CPUs pinned (Guaranteed QoS, whole CPUs)."""

from __future__ import annotations

from typing import Any

import pytest

from py_volcano.api import CpuInfo, NumaResource, PinnedContainer, parse_cpuset, parse_numatopology, parse_object
from py_volcano.api.numatopology import pinned_cpus
from py_volcano.cache.store import NODES, NUMATOPOLOGIES, Store
from py_volcano.errors import InvalidNumatopology, InvalidPod
from tests.builders import node


def numatopology(spec: Any, name: str = "n1", rv: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "nodeinfo.volcano.sh/v1alpha1",
        "kind": "Numatopology",
        "metadata": {"name": name, "resourceVersion": str(rv)},
        "spec": spec,
    }


SPEC = {
    "policies": {"CPUManagerPolicy": "static", "TopologyManagerPolicy": "best-effort"},
    "resReserved": {"cpu": "1500m", "memory": "1Gi"},
    "numares": {"cpu": {"allocatable": "1-3,5-7", "capacity": 8}},
    "cpuDetail": {str(i): {"numa": i // 4, "socket": i // 4, "core": i} for i in range(8)},
    "podAllocations": [{"uid": "u1", "name": "p", "namespace": "default"}],
}


def test_parses_volcanos_fields() -> None:
    topo = parse_numatopology(numatopology(SPEC))
    assert topo.name == "n1"
    assert (topo.cpu_manager_policy, topo.topology_manager_policy) == ("static", "best-effort")
    assert topo.reserved == {"cpu": 1.5, "memory": 1024.0**3}
    assert topo.reserved_cpus == 2
    assert topo.resources == {"cpu": NumaResource(frozenset({1, 2, 3, 5, 6, 7}), 8)}
    assert topo.cpus[5] == CpuInfo(numa=1, socket=1, core=5)
    assert topo.numa_nodes() == [0, 1]
    assert topo.cpus_in_numa([1]) == frozenset(range(4, 8))


def test_empty_spec_reports_nothing() -> None:
    """Every field is optional: a missing policy reads as empty, a CPU's missing place as 0."""
    topo = parse_numatopology(numatopology({"cpuDetail": {"3": {}}}))
    assert (topo.cpu_manager_policy, topo.topology_manager_policy, topo.reserved_cpus) == ("", "", 0)
    assert topo.cpus == {3: CpuInfo()}
    assert topo.resources == {}


@pytest.mark.parametrize(
    ("text", "cpus"),
    [("", set()), ("0", {0}), ("0-3,8,10-11", {0, 1, 2, 3, 8, 10, 11}), ("4-4", {4})],
)
def test_cpusets(text: str, cpus: set[int]) -> None:
    assert parse_cpuset(text) == frozenset(cpus)


@pytest.mark.parametrize("text", ["a", "3-1", "1,", "1-", "-1", " 1", "1.5"])
def test_malformed_cpusets(text: str) -> None:
    with pytest.raises(ValueError):
        parse_cpuset(text)


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        pytest.param([], "spec", id="spec-not-a-map"),
        pytest.param({"policies": {"CPUManagerPolicy": 1}}, "spec.policies.CPUManagerPolicy", id="policy"),
        pytest.param({"resReserved": {"cpu": "lots"}}, "spec.resReserved.cpu", id="reserved"),
        pytest.param({"numares": {"cpu": {"allocatable": "3-1"}}}, "spec.numares.cpu.allocatable", id="cpuset"),
        pytest.param({"numares": {"cpu": {"allocatable": 7}}}, "spec.numares.cpu.allocatable", id="cpuset-type"),
        pytest.param({"numares": {"cpu": {"capacity": -1}}}, "spec.numares.cpu.capacity", id="capacity"),
        pytest.param({"cpuDetail": {"x": {}}}, "spec.cpuDetail.x", id="cpu-id"),
        pytest.param({"cpuDetail": {"0": {"numa": "zero"}}}, "spec.cpuDetail.0.numa", id="numa"),
        pytest.param({"cpuDetail": {"0": []}}, "spec.cpuDetail.0", id="cpu-not-a-map"),
    ],
)
def test_malformed_objects_name_the_field(spec: Any, field: str) -> None:
    with pytest.raises(InvalidNumatopology) as raised:
        parse_object("Numatopology", numatopology(spec), parse_numatopology)
    assert (raised.value.name, raised.value.field) == ("n1", field)
    assert str(raised.value).startswith(f"Numatopology n1: field {field}: ")


def test_unnamed_object() -> None:
    with pytest.raises(InvalidNumatopology, match=r"metadata\.name"):
        parse_object("Numatopology", {"kind": "Numatopology", "spec": {}}, parse_numatopology)


def test_store_hangs_each_on_its_node_and_skips_malformed_ones() -> None:
    """The snapshot's node carries its Numatopology; a malformed one is a warning naming the field and its
    node has none; one without a node is ignored."""
    store = Store(scheduler_name="py-volcano")
    for name in ("n1", "n2"):
        store.apply_event(NODES, "ADDED", node(name=name))
    store.apply_event(NUMATOPOLOGIES, "ADDED", numatopology(SPEC, "n1"))
    store.apply_event(NUMATOPOLOGIES, "ADDED", numatopology({"cpuDetail": {"0": {"core": -1}}}, "n2"))
    store.apply_event(NUMATOPOLOGIES, "ADDED", numatopology(SPEC, "gone"))
    snapshot = store.snapshot()
    numa = snapshot.nodes["n1"].numa
    assert numa is not None and numa.topology_manager_policy == "best-effort"
    assert snapshot.nodes["n2"].numa is None
    assert any(w.startswith("Numatopology n2: field spec.cpuDetail.0.core: ") for w in snapshot.warnings)
    assert snapshot.nodes["n1"].clone().numa is numa
    store.apply_event(NUMATOPOLOGIES, "DELETED", numatopology(SPEC, "n1", rv=2))
    assert store.snapshot().nodes["n1"].numa is None


def _container(name: str, requests: dict[str, str] | None = None, limits: dict[str, str] | None = None) -> Any:
    return {"name": name, "resources": {"requests": requests or {}, "limits": limits or {}}}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            {"containers": [_container("a", limits={"cpu": "4", "memory": "1Gi"})]},
            (PinnedContainer("a", 4),),
            id="limits-only",
        ),
        pytest.param(
            {
                "containers": [
                    _container("a", {"cpu": "2", "memory": "1Gi"}, {"cpu": "2", "memory": "1Gi"}),
                    _container("b", limits={"cpu": "1500m", "memory": "1Gi"}),
                ]
            },
            (PinnedContainer("a", 2), PinnedContainer("b", 0)),
            id="fraction-pins-nothing",
        ),
        pytest.param({"containers": [_container("a", {"cpu": "2", "memory": "1Gi"})]}, None, id="burstable"),
        pytest.param({"containers": [_container("a")]}, None, id="best-effort"),
        pytest.param({"containers": [_container("a", limits={"cpu": "2"})]}, None, id="no-memory-limit"),
        pytest.param(
            {
                "containers": [_container("a", limits={"cpu": "2", "memory": "1Gi"})],
                "initContainers": [_container("init", {"cpu": "1"})],
            },
            None,
            id="init-container-burstable",
        ),
    ],
)
def test_pinned_cpus_follow_the_qos_class(spec: dict[str, Any], expected: tuple[PinnedContainer, ...] | None) -> None:
    assert pinned_cpus(spec, "default/p") == expected


def test_pinned_cpus_malformed_quantity() -> None:
    with pytest.raises(InvalidPod, match=r"spec.containers\[0\].resources.limits.cpu"):
        pinned_cpus({"containers": [_container("a", {"cpu": "1"}, {"cpu": "x"})]}, "default/p")
