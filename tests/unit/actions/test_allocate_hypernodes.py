"""allocate's hypernode path: hard jobs inside one hypernode of an allowed tier, the lowest tier that holds
them, the best by the hypernode order; soft jobs prefer; other jobs take the task path unchanged."""

from __future__ import annotations

from py_volcano.api import CycleResult, JobID
from py_volcano.framework import run_cycle
from py_volcano.registry import default_registry, load_conf
from tests.builders import node, pod
from tests.unit.plugins.topology_cluster import (
    AGGREGATIONS,
    CONF,
    CONF_WITHOUT_PLUGIN,
    LEAVES,
    gang,
    hyper_node,
    leaf_of,
    snapshot,
    topology,
)


def cycle(*objects: dict[str, object], conf: str = CONF) -> CycleResult:
    registry = default_registry()
    return run_cycle(snapshot(*objects), load_conf(conf, registry=registry), registry)


def placed(result: CycleResult, prefix: str) -> dict[str, str]:
    return {task.name: node for task, node in result.binds if task.name.startswith(prefix)}


def test_hard_gang_stays_inside_one_leaf_the_fullest_that_holds_it() -> None:
    """leaf-2 already runs a 2-CPU pod: the hypernode binpack prefers it to the empty leaves."""
    result = cycle(
        *topology(), pod(name="busy", cpu="2", node_name="node-5"), *gang("job", 3, {"highestTierAllowed": 1})
    )
    nodes = placed(result, "job-")
    assert len(nodes) == 3
    assert {leaf_of(where) for where in nodes.values()} == {"leaf-2"}


def test_hard_gang_waits_when_no_hypernode_of_an_allowed_tier_holds_it() -> None:
    """Five 2-CPU pods need 10 CPU; a leaf has 8: nothing binds, and the job says why."""
    registry = default_registry()
    conf = load_conf(CONF, registry=registry)
    result = run_cycle(snapshot(*topology(), *gang("job", 5, {"highestTierAllowed": 1})), conf, registry)
    assert result.binds == []
    condition = result.pod_groups[JobID("default/job")]
    assert "no hypernode of tier <= 1 can hold the job" in str(condition)


def test_the_lowest_tier_that_holds_the_job_wins() -> None:
    """Allowed tier 3, six 2-CPU pods: no leaf holds them, one aggregation switch does."""
    result = cycle(*topology(), *gang("job", 6, {"highestTierAllowed": 3}))
    nodes = placed(result, "job-")
    assert len(nodes) == 6
    holders = {agg for agg, leaves in AGGREGATIONS.items() if {leaf_of(n) for n in nodes.values()} <= set(leaves)}
    assert holders == {"agg-0"}


def test_soft_mode_prefers_the_lowest_tier_and_may_span_everything() -> None:
    """Soft: six pods inside one aggregation switch; twelve (more than a switch holds) span the spine."""
    six = placed(cycle(*topology(), *gang("job", 6, {"mode": "soft"})), "job-")
    assert {leaf_of(n) for n in six.values()} <= set(AGGREGATIONS["agg-0"])
    twelve = placed(cycle(*topology(), *gang("job", 12, {"mode": "soft"})), "job-")
    assert len(twelve) == 12


def test_a_running_job_grows_only_inside_the_hypernode_its_tier_allows() -> None:
    """Two of the job's pods run on leaf-3; with tier 1 allowed its new pods go to leaf-3 only."""
    running = [pod(name=f"job-r{i}", group="job", cpu="1", node_name="node-6") for i in range(2)]
    objects = [*topology(), *gang("job", 4, {"highestTierAllowed": 1}, cpu="1"), *running]
    nodes = placed(cycle(*objects), "job-")
    assert len(nodes) == 4
    assert {leaf_of(n) for n in nodes.values()} == {"leaf-3"}


def test_without_the_plugin_a_hard_job_is_placed_anywhere() -> None:
    """Volcano's default search is the whole cluster: no plugin, no tier limit."""
    nodes = placed(cycle(*topology(), *gang("job", 5, {"highestTierAllowed": 1}), conf=CONF_WITHOUT_PLUGIN), "job-")
    assert len(nodes) == 5


def test_jobs_without_a_network_topology_take_the_task_path() -> None:
    """Same binds with and without HyperNodes in the cluster when no job sets a network topology
    (the plugin's normal-pod binpack off, so the node scores match too)."""
    conf = CONF.replace(
        "  - name: network-topology-aware\n",
        "  - name: network-topology-aware\n    arguments:\n      hypernode.binpack.normal-pod.enable: false\n",
    )
    jobs = [*gang("a", 3, None), *gang("b", 4, None, cpu="1")]
    nodes = [obj for obj in topology() if obj["kind"] == "Node"]
    with_tree = placed(cycle(*topology(), *jobs, conf=conf), "")
    without = placed(cycle(*nodes, *jobs, conf=CONF_WITHOUT_PLUGIN), "")
    assert with_tree == without and len(with_tree) == 7


def test_an_unusable_tree_holds_topology_jobs_back_only() -> None:
    """A HyperNode claimed by two parents: the job with a topology waits, the other is placed."""
    broken = [*topology(), hyper_node("agg-x", 2, ("leaf-0",), "HyperNode")]
    registry = default_registry()
    conf = load_conf(CONF, registry=registry)
    result = run_cycle(
        snapshot(*broken, *gang("topo", 2, {"highestTierAllowed": 1}), *gang("plain", 2, None)), conf, registry
    )
    assert sorted(placed(result, "").keys()) == ["plain-0", "plain-1"]
    assert any("already belongs to" in warning for warning in result.warnings)
    assert "the HyperNode topology is not usable" in str(result.pod_groups[JobID("default/topo")])


def test_nodes_outside_every_hypernode_are_reached_through_the_top() -> None:
    """A cluster whose HyperNodes hold only some nodes: a soft job larger than leaf-0 also uses the others."""
    objects = [node(name="lone-0"), node(name="lone-1"), *topology()[:2], hyper_node("leaf-0", 1, LEAVES["leaf-0"])]
    nodes = placed(cycle(*objects, *gang("job", 6, {"mode": "soft"})), "job-")
    assert len(nodes) == 6
    assert {"lone-0", "lone-1"} & set(nodes.values())


def test_a_gang_with_pod_affinity_to_itself_lands_on_one_node_of_one_leaf() -> None:
    """Required pod affinity to its own pods (hostname): the first pod opens a node for the others (a
    predicate that gets looser as the job is placed), and the hypernode trial follows it."""
    term = {"labelSelector": {"matchLabels": {"app": "tight"}}, "topologyKey": "kubernetes.io/hostname"}
    affinity = {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}}
    objects = gang("job", 2, {"highestTierAllowed": 1}, cpu="1")
    for obj in objects[1:]:
        obj["metadata"]["labels"] = {"app": "tight"}
        obj["spec"].update(affinity)
    tree = topology()
    for obj in tree:
        if obj["kind"] == "Node":
            obj["metadata"]["labels"]["kubernetes.io/hostname"] = obj["metadata"]["name"]
    nodes = placed(cycle(*tree, *objects), "job-")
    assert len(nodes) == 2 and len(set(nodes.values())) == 1
