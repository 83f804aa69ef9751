"""numa-aware: the node filter by topology manager policy, the NUMA score, and the CPUs tasks placed in the
cycle take (given back on discard), as Volcano's numa-aware plugin decides them."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from py_volcano.api import NUMA_POLICY_ANNOTATION, parse_numatopology
from py_volcano.framework import PredicateStatus, Session, Statement, open_session, parse_conf
from py_volcano.plugins.numaaware import NumaAwareArgs
from py_volcano.plugins.numaaware.plugin import NumaAwarePlugin, NumaState
from tests.builders import cluster, node, pod
from tests.unit.actions.sessions import registry, task
from tests.unit.arguments import plugin_args

CONF = 'actions: "allocate"\ntiers:\n- plugins:\n  - name: predicates\n  - name: numa-aware\n'


def numatopology(
    name: str,
    *,
    topology: str = "single-numa-node",
    cpu_manager: str = "static",
    numa_nodes: int = 2,
    per_numa: int = 4,
    allocatable: str | None = None,
    reserved: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A Numatopology: `numa_nodes` NUMA nodes (one socket each) of `per_numa` single-thread cores."""
    count = numa_nodes * per_numa
    details = {str(i): {"numa": i // per_numa, "socket": i // per_numa, "core": i} for i in range(count)}
    return {
        "apiVersion": "nodeinfo.volcano.sh/v1alpha1",
        "kind": "Numatopology",
        "metadata": {"name": name},
        "spec": {
            "policies": {"CPUManagerPolicy": cpu_manager, "TopologyManagerPolicy": topology},
            "resReserved": reserved or {},
            "numares": {
                "cpu": {"allocatable": f"0-{count - 1}" if allocatable is None else allocatable, "capacity": count}
            },
            "cpuDetail": details,
        },
    }


def pinned(name: str, cpu: str, *, policy: str = "", containers: int = 1) -> dict[str, Any]:
    """A Guaranteed pod of `containers` containers with `cpu` each; `policy` in its NUMA annotation."""
    resources = {"limits": {"cpu": cpu, "memory": "1Gi"}}
    manifest = pod(name=name, annotations={NUMA_POLICY_ANNOTATION: policy} if policy else {})
    manifest["spec"]["containers"] = [
        {"name": f"c{i}", "image": "pause", "resources": resources} for i in range(containers)
    ]
    return manifest


def open_numa(*objects: dict[str, Any], conf: str = CONF) -> Session:
    """Open a session over nodes, pods and Numatopologies (each hung on its node, as the store does)."""
    reg = registry()
    snapshot = cluster(*(o for o in objects if o["kind"] != "Numatopology"))
    for obj in objects:
        if obj["kind"] == "Numatopology":
            snapshot.nodes[obj["metadata"]["name"]].numa = parse_numatopology(obj)
    return open_session(snapshot, parse_conf(conf, reg), reg)


def state(ssn: Session) -> NumaState:
    plugin = ssn.plugins["numa-aware"]
    assert isinstance(plugin, NumaAwarePlugin) and plugin.state is not None
    return plugin.state


def verdict(ssn: Session, name: str, node_name: str) -> PredicateStatus | None:
    return state(ssn).predicate(task(ssn, name), ssn.nodes[node_name])


def test_weight_argument() -> None:
    """Volcano reads the bare `weight` key, default 1."""
    assert plugin_args("numa-aware", {}) == NumaAwareArgs(weight=1)
    assert plugin_args("numa-aware", {"weight": 10}) == NumaAwareArgs(weight=10)


@pytest.mark.parametrize(
    ("topology", "cpu", "admitted"),
    [
        pytest.param("single-numa-node", "4", True, id="single-fits-one-numa"),
        pytest.param("single-numa-node", "6", False, id="single-refuses-straddling"),
        pytest.param("restricted", "6", True, id="restricted-takes-the-smallest-span"),
        pytest.param("best-effort", "6", True, id="best-effort"),
        pytest.param("none", "6", True, id="none"),
        pytest.param("single-numa-node", "9", False, id="single-more-than-the-node"),
        pytest.param("restricted", "9", False, id="restricted-more-than-the-node"),
        pytest.param("best-effort", "9", True, id="best-effort-admits-anyway"),
    ],
)
def test_policy_admission(topology: str, cpu: str, admitted: bool) -> None:
    """Two NUMA nodes of 4 CPUs: 6 CPUs need both, which is the smallest span that can hold them, so only
    single-numa-node refuses; beyond the node's 8, only best-effort (and none) admit. A pod naming no policy
    is held to the node's own."""
    ssn = open_numa(node(name="n1", cpu="16"), numatopology("n1", topology=topology), pinned("p", cpu))
    status = verdict(ssn, "p", "n1")
    assert (status is None) is admitted
    if not admitted:
        assert status == PredicateStatus("container c0 cannot be assigned by numa")


@pytest.mark.parametrize(
    ("numa", "pod_policy", "reason"),
    [
        pytest.param(None, "single-numa-node", "numa info is empty", id="no-numatopology"),
        pytest.param(
            numatopology("n1", cpu_manager="none"),
            "single-numa-node",
            "cpu manager policy isn't static",
            id="not-static",
        ),
        pytest.param(
            numatopology("n1", topology="restricted"),
            "single-numa-node",
            "task topology policy[single-numa-node] is different with node[restricted]",
            id="other-policy",
        ),
        pytest.param(
            numatopology("n1", allocatable=""), "single-numa-node", "cpu allocatable map is empty", id="no-free-cpu"
        ),
        pytest.param(None, "", None, id="no-policy-no-numatopology"),
        pytest.param(numatopology("n1", cpu_manager="none"), "", None, id="no-policy-not-static"),
        pytest.param(numatopology("n1", topology="none"), "", None, id="no-policy-node-none"),
        pytest.param(numatopology("n1", topology="none"), "none", None, id="policy-none"),
    ],
)
def test_node_policies(numa: dict[str, Any] | None, pod_policy: str, reason: str | None) -> None:
    """A pod asking a policy needs a static CPU manager and the same topology manager policy on the node; a
    pod asking none is not checked on a node whose policies pin nothing."""
    objects = [node(name="n1", cpu="16"), pinned("p", "6", policy=pod_policy), *([numa] if numa else [])]
    status = verdict(open_numa(*objects), "p", "n1")
    assert status == (PredicateStatus(reason) if reason else None)


@pytest.mark.parametrize(
    "resources",
    [
        pytest.param({"requests": {"cpu": "6", "memory": "1Gi"}}, id="burstable"),
        pytest.param({"limits": {"cpu": "6"}}, id="no-memory-limit"),
        pytest.param({"requests": {"cpu": "5", "memory": "1Gi"}, "limits": {"cpu": "6", "memory": "1Gi"}}, id="below"),
    ],
)
def test_pods_not_guaranteed_pass(resources: dict[str, Any]) -> None:
    """Only Guaranteed pods have CPUs pinned: any other passes the filter on every node."""
    manifest = pinned("p", "6", policy="single-numa-node")
    manifest["spec"]["containers"][0]["resources"] = resources
    ssn = open_numa(node(name="n1", cpu="16"), numatopology("n1"), manifest)
    assert task(ssn, "p").pinned_cpus is None
    assert verdict(ssn, "p", "n1") is None
    assert state(ssn).batch_predicate(task(ssn, "p"), False).all()


def test_fractional_cpus_are_not_pinned() -> None:
    """A Guaranteed container asking 1500m has no whole CPUs: no preference, admitted, nothing assigned."""
    ssn = open_numa(node(name="n1", cpu="16"), numatopology("n1"), pinned("p", "1500m", policy="single-numa-node"))
    assert verdict(ssn, "p", "n1") is None
    assert state(ssn).assigned[task(ssn, "p").uid]["n1"] == frozenset()


def test_containers_are_admitted_one_after_the_other() -> None:
    """Two containers of 3 CPUs under single-numa-node: each fits a NUMA node of its own."""
    ssn = open_numa(
        node(name="n1", cpu="16"), numatopology("n1"), pinned("p", "3", policy="single-numa-node", containers=2)
    )
    assert verdict(ssn, "p", "n1") is None
    assert state(ssn).assigned[task(ssn, "p").uid]["n1"] == frozenset({0, 1, 2, 4, 5, 6})


def test_reserved_cpus_are_taken_first() -> None:
    """A 1500m reservation sets 2 whole CPUs aside (0 and 1, the first cores): NUMA node 0 has 2 left."""
    topo = numatopology("n1", reserved={"cpu": "1500m"})
    ssn = open_numa(node(name="n1", cpu="16"), topo, pinned("a", "3", policy="single-numa-node"))
    assert state(ssn).reserved["n1"] == frozenset({0, 1})
    assert verdict(ssn, "a", "n1") is None
    assert state(ssn).assigned[task(ssn, "a").uid]["n1"] == frozenset({4, 5, 6})


def test_cpus_taken_in_the_cycle_and_given_back_on_discard() -> None:
    """After `a` (4 CPUs) is placed on n1, NUMA node 0 is full: `b` (4 CPUs) gets NUMA node 1, `c` then
    finds no NUMA node with 4 free CPUs. Discarding the statement frees them again."""
    pods = [pinned(name, "4", policy="single-numa-node") for name in ("a", "b", "c")]
    ssn = open_numa(node(name="n1", cpu="16"), numatopology("n1"), *pods)
    numa = state(ssn)
    stmt = Statement(ssn)
    assert verdict(ssn, "a", "n1") is None
    stmt.allocate(task(ssn, "a"), "n1")
    assert numa.free["n1"] == frozenset(range(4, 8))
    assert verdict(ssn, "b", "n1") is None
    assert numa.assigned[task(ssn, "b").uid]["n1"] == frozenset(range(4, 8))
    stmt.allocate(task(ssn, "b"), "n1")
    assert numa.free["n1"] == frozenset()
    assert verdict(ssn, "c", "n1") == PredicateStatus("cpu allocatable map is empty")
    stmt.discard()
    assert numa.free["n1"] == frozenset(range(8))
    assert verdict(ssn, "c", "n1") is None


def test_score_prefers_fewer_numa_nodes() -> None:
    """Under restricted, 6 CPUs span one NUMA node of n-wide (8 per NUMA node) and two of n-narrow. Volcano
    scores 100 - 100 x span / the widest span: 50 x weight against 0. A pod naming no policy gets no score."""
    conf = CONF + "    arguments:\n      weight: 3\n"
    objects = [
        node(name="n-narrow", cpu="16"),
        node(name="n-wide", cpu="16"),
        numatopology("n-narrow", topology="restricted"),
        numatopology("n-wide", topology="restricted", per_numa=8),
        pinned("p", "6", policy="restricted"),
        pinned("q", "6"),
    ]
    ssn = open_numa(*objects, conf=conf)
    rows = np.arange(len(ssn.node_list))
    numa = state(ssn)
    for name in ("p", "q"):
        assert numa.batch_predicate(task(ssn, name), False).all()
    assert [n.name for n in ssn.node_list] == ["n-narrow", "n-wide"]
    assert numa.score(task(ssn, "p"), rows).tolist() == [0.0, 150.0]
    assert numa.score(task(ssn, "q"), rows).tolist() == [0.0, 0.0]
