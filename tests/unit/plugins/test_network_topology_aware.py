"""network-topology-aware: its arguments as Volcano reads them, and its scores worked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from py_volcano.api import JobID
from py_volcano.framework import Arguments, Session, Statement, open_session
from py_volcano.plugins.network_topology_aware import NetworkTopologyArgs
from py_volcano.registry import default_registry, load_conf
from tests.builders import pod
from tests.unit.plugins.topology_cluster import CONF, gang, snapshot, topology


def session(*objects: dict[str, object], arguments: str = "") -> Session:
    registry = default_registry()
    text = CONF.replace("  - name: network-topology-aware\n", f"  - name: network-topology-aware\n{arguments}")
    return open_session(snapshot(*objects), load_conf(text, registry=registry), registry)


def test_arguments_as_volcano_reads_them() -> None:
    """The user guide's keys; negative weights and fading fall back to the defaults."""
    args = NetworkTopologyArgs.parse(
        Arguments(
            {
                "weight": 10,
                "hypernode.binpack.cpu": 5,
                "hypernode.binpack.memory": -3,
                "hypernode.binpack.resources": "nvidia.com/gpu, example.com/foo",
                "hypernode.binpack.resources.nvidia.com/gpu": 2,
                "hypernode.binpack.normal-pod.enable": "false",
                "hypernode.binpack.normal-pod.fading": -1,
            }
        )
    )
    assert args.weight == 10
    assert dict(args.resources) == {"cpu": 5, "memory": 1, "nvidia.com/gpu": 2, "example.com/foo": 1}
    assert (args.normal_pod_enable, args.normal_pod_fading) == (False, 0.8)


def test_hyper_node_order_is_the_job_level_binpack() -> None:
    """Job of three 2-CPU/1Gi pods; leaf-2 runs a 2-CPU/1Gi pod. leaf-2: ((2+6)/8 + (1+3)/16) / 2 = 0.625;
    an empty leaf: (6/8 + 3/16) / 2 = 0.46875; times 100 and weight 10."""
    ssn = session(
        *topology(),
        pod(name="busy", cpu="2", node_name="node-5"),
        *gang("job", 3, {"highestTierAllowed": 1}),
        arguments="    arguments:\n      weight: 10\n",
    )
    leaves = [ssn.hyper_nodes.index[f"leaf-{j}"] for j in range(4)]
    expected = [468.75, 468.75, 625.0, 468.75]
    assert ssn.hyper_node_order(ssn.jobs[JobID("default/job")], leaves) == pytest.approx(expected)


def test_tied_hypernodes_add_the_share_of_the_jobs_tasks_on_them() -> None:
    """Two of the job's six tasks (best-effort ones) run on leaf-3: the leaves tie on binpack at
    (8/8 + 4/16) / 2 = 0.625, and leaf-3 adds 2/6."""
    running = [pod(name=f"job-r{i}", group="job", cpu="", memory="", node_name="node-6") for i in range(2)]
    ssn = session(*topology(), *gang("job", 4, {"highestTierAllowed": 1}), *running)
    leaves = [ssn.hyper_nodes.index[f"leaf-{j}"] for j in range(4)]
    expected = [62.5, 62.5, 62.5, 100 * (0.625 + 2 / 6)]
    assert ssn.hyper_node_order(ssn.jobs[JobID("default/job")], leaves) == pytest.approx(expected)


def test_gradient_groups_allowed_tiers_and_filters_by_min_resources() -> None:
    """minResources 9 CPU: no leaf (8 CPU) qualifies; tier 4 (the top) is above the allowed 3."""
    ssn = session(*topology(), *gang("job", 3, {"highestTierAllowed": 3}, min_resources={"cpu": "9"}))
    groups = ssn.hyper_node_gradients(ssn.jobs[JobID("default/job")], ssn.hyper_nodes.top)
    assert [[ssn.hyper_nodes.names[h] for h in group] for group in groups] == [["agg-0", "agg-1"], ["spine"]]


def test_normal_pods_score_the_binpack_of_their_hypernodes_faded_by_tier() -> None:
    """A 1-CPU/1Gi pod of a job without topology on node-5 (leaf-2 runs 2 CPU/1Gi): leaf 0.25, agg 0.125,
    spine 0.0625, top 0.0625, weighed 1, 0.8, 0.64, 0.512: 0.422 / 2.952, times 100."""
    ssn = session(*topology(), pod(name="busy", cpu="2", node_name="node-5"), *gang("plain", 1, None, cpu="1"))
    task = next(iter(ssn.jobs[JobID("default/plain")].tasks.values()))
    row = ssn.nodes["node-5"].index
    plugin = ssn.plugins["network-topology-aware"]
    scores = plugin.scores.node_order(task, np.array([row]))  # type: ignore[attr-defined]
    assert scores[0] == pytest.approx(100 * 0.422 / 2.952)


def test_job_nodes_score_by_the_tier_of_their_common_hypernode() -> None:
    """Once a task sits on leaf-0, node-1 (same leaf) scores 1, node-2 (agg-0) (4-2)/(4-1), node-4 (spine)
    (4-3)/3; times 100."""
    running = [pod(name="job-r0", group="job", cpu="1", node_name="node-0")]
    ssn = session(*topology(), *gang("job", 3, {"highestTierAllowed": 3}, cpu="1"), *running)
    task = next(t for t in ssn.jobs[JobID("default/job")].tasks.values() if not t.node_name)
    rows = np.array([ssn.nodes[n].index for n in ("node-1", "node-2", "node-4")])
    scores = ssn.plugins["network-topology-aware"].scores.node_order(task, rows)  # type: ignore[attr-defined]
    assert list(scores) == pytest.approx([100.0, 100 * 2 / 3, 100 / 3])


def test_used_sums_follow_allocations_and_come_back_on_discard() -> None:
    ssn = session(*topology(), *gang("job", 2, {"highestTierAllowed": 1}))
    scores = ssn.plugins["network-topology-aware"].scores  # type: ignore[attr-defined]
    before = scores.used.copy()
    stmt = Statement(ssn)
    for task in list(ssn.jobs[JobID("default/job")].tasks.values()):
        stmt.allocate(task, "node-2")
    leaf = ssn.hyper_nodes.index["leaf-1"]
    assert scores.used[leaf][0] == before[leaf][0] + 4000
    stmt.discard()
    assert (scores.used == before).all()
    assert ssn.allocated_hyper_node(ssn.jobs[JobID("default/job")]) == -1
