"""drf with enableHierarchy: the queue tree from the hierarchy annotations, scaled shares, saturation, queue
order, the reclaim rule, and event handlers that keep the tree as a fresh build would have it."""

from __future__ import annotations

from typing import Any

import pytest

from py_volcano.actions import ACTIONS
from py_volcano.api import JobID, QueueID, TaskInfo, Vote
from py_volcano.framework import Registry, Session, Statement, open_session, parse_conf
from py_volcano.plugins import PLUGINS, drf
from tests.builders import cluster, node, pod, pod_group, queue

REGISTRY = Registry(plugins={"drf": PLUGINS["drf"]}, actions=ACTIONS)
CONF = 'actions: "allocate, reclaim"\ntiers:\n- plugins:\n  - name: drf\n    enableHierarchy: true'


def tree_queue(name: str, path: str, weights: str) -> dict[str, Any]:
    manifest = queue(name=name)
    manifest["metadata"]["annotations"] = {"volcano.sh/hierarchy": path, "volcano.sh/hierarchy-weights": weights}
    return manifest


def session(*objects: dict[str, Any]) -> Session:
    return open_session(cluster(*objects), parse_conf(CONF, REGISTRY), REGISTRY)


def tree(ssn: Session) -> drf.HierarchicalShares:
    plugin = ssn.plugins["drf"]
    assert isinstance(plugin, drf.DrfPlugin) and plugin.hierarchy is not None
    return plugin.hierarchy


def job(name: str, queue_name: str, *, running: int, pending: int, cpu: str = "1", memory: str = "1Gi",
        node_name: str = "n1") -> list[dict[str, Any]]:
    objects = [pod_group(name=name, queue=queue_name, phase="Running" if running else "Inqueue")]
    objects += [
        pod(name=f"{name}-{i}", group=name, cpu=cpu, memory=memory, node_name=node_name) for i in range(running)
    ]
    objects += [pod(name=f"{name}-{running + i}", group=name, cpu=cpu, memory=memory) for i in range(pending)]
    return objects


def rescaling(sci: int, dev: int, prod: int) -> Session:
    """Volcano's HDRF test: a 10 CPU / 10Gi node; sci at root/sci, dev and prod under root/eng."""
    return session(
        node(name="n1", cpu="10", memory="10Gi", pods="50"),
        tree_queue("sci", "root/sci", "100/50"),
        tree_queue("dev", "root/eng/dev", "100/50/50"),
        tree_queue("prod", "root/eng/prod", "100/50/50"),
        *job("sci-job", "sci", running=sci, pending=10 - sci),
        *job("dev-job", "dev", running=dev, pending=10 - dev, memory=""),
        *job("prod-job", "prod", running=prod, pending=10 - prod, cpu=""),
    )


def node_at(state: drf.HierarchicalShares, *path: str) -> drf.HierarchyNode:
    current = state.root
    for name in path:
        assert current.children is not None
        current = current.children[name]
    return current


def test_the_tree_follows_the_annotations_and_weights_are_read_per_level() -> None:
    """Levels below `root` are created once; a level's weight comes from its entry; jobs are leaves."""
    state = tree(rescaling(0, 0, 0))
    assert sorted(node_at(state).children or {}) == ["eng", "sci"]
    assert (node_at(state, "sci").weight, node_at(state, "eng").weight, node_at(state, "eng", "dev").weight) == (
        50, 50, 50)
    assert node_at(state, "eng", "dev", "default/dev-job").children is None


@pytest.mark.parametrize(
    ("weights", "expected"),
    [
        pytest.param("1/3", 3.0, id="read"),
        pytest.param("1/0.5", 1.0, id="below-1-is-1"),
        pytest.param("1/abc", 1.0, id="unreadable-is-1"),
        pytest.param("1", 1.0, id="missing-is-1"),
        pytest.param("1/inf", 1.0, id="not-finite-is-1"),
    ],
)
def test_weight_entries(weights: str, expected: float) -> None:
    state = tree(session(node(name="n1"), tree_queue("q", "root/q", weights), *job("j", "q", running=0, pending=1)))
    assert node_at(state, "q").weight == expected


def test_unsaturated_children_are_scaled_to_the_smallest_share() -> None:
    """dev holds 4 CPU (0.4), prod 2Gi (0.2): eng scales both to 0.2 -> 2 CPU + 2Gi, share 0.2."""
    state = tree(rescaling(4, 4, 2))
    eng = node_at(state, "eng")
    assert (eng.attr.allocated.milli_cpu, eng.attr.allocated.memory) == (2000, 2 * 1024**3)
    assert eng.attr.share == pytest.approx(0.2) and not eng.saturated
    assert node_at(state, "sci").attr.share == pytest.approx(0.4)


def test_a_job_asking_for_a_dimension_the_cluster_has_run_out_of_is_saturated() -> None:
    """sci and dev hold all 10 CPU: dev, which asks for CPU, is saturated and counts as it is (5 CPU), while
    prod (2Gi, memory left) is scaled to the smallest unsaturated share, its own: eng = 5 CPU + 2Gi."""
    state = tree(rescaling(5, 5, 2))
    eng = node_at(state, "eng")
    assert node_at(state, "eng", "dev", "default/dev-job").saturated
    assert (eng.attr.allocated.milli_cpu, eng.attr.allocated.memory) == (5000, 2 * 1024**3)
    assert eng.attr.share == pytest.approx(0.5) and not eng.saturated


def test_a_job_holding_its_whole_request_is_saturated_and_its_queue_goes_last() -> None:
    """sci's job holds all it asks for (saturated); eng is behind in share but unsaturated queues go
    first anyway, and between unsaturated ones the lower share / weight goes first."""
    ssn = rescaling(10, 0, 0)
    state = tree(ssn)
    assert node_at(state, "sci", "default/sci-job").saturated and node_at(state, "sci").saturated
    sci, dev = ssn.queues[QueueID("sci")], ssn.queues[QueueID("dev")]
    assert state.queue_order(dev, sci) == -1 and state.queue_order(sci, dev) == 1
    ssn = rescaling(6, 2, 2)
    sci, dev, prod = (ssn.queues[QueueID(name)] for name in ("sci", "dev", "prod"))
    assert tree(ssn).queue_order(dev, sci) == -1  # eng 0.2 / 50 against sci 0.6 / 50
    assert tree(ssn).queue_order(dev, prod) == 0  # both 0.2 under eng: a tie, the next plugin decides


def test_reclaim_takes_a_victim_only_from_a_queue_that_still_ranks_after() -> None:
    """A 4-CPU node; a runs 1 pod, b 3. a's new pod may take b's pods (a 2/4... no: 2/4 against b's 2/4 is
    a tie, not a victim); with b at 3 and a at 0, a at 1/4 ranks before b at 2/4: every b pod is a victim."""
    objects = [node(name="n1", cpu="4", memory="8Gi"), tree_queue("a", "root/a", "1/1"),
               tree_queue("b", "root/b", "1/1")]
    tie = session(*objects, *job("ja", "a", running=1, pending=1), *job("jb", "b", running=3, pending=1))
    reclaimer = next(t for t in tie.jobs[JobID("default/ja")].tasks.values() if not t.node_name)
    victims = [t for t in tie.jobs[JobID("default/jb")].tasks.values() if t.node_name]
    assert tree(tie).reclaimable(reclaimer, victims) == ([], Vote.PERMIT)
    ahead = session(*objects, *job("ja", "a", running=0, pending=2), *job("jb", "b", running=3, pending=1))
    reclaimer = next(iter(ahead.jobs[JobID("default/ja")].tasks.values()))
    victims = [t for t in ahead.jobs[JobID("default/jb")].tasks.values() if t.node_name]
    assert tree(ahead).reclaimable(reclaimer, victims) == (victims, Vote.PERMIT)
    assert node_at(tree(ahead), "a").attr.share == 0.0  # weighed on a copy: the session tree is unchanged


def _snapshot(state: drf.HierarchicalShares) -> list[tuple[str, float, bool]]:
    found: list[tuple[str, float, bool]] = []

    def walk(current: drf.HierarchyNode, prefix: str) -> None:
        found.append((prefix + current.name, round(current.attr.share, 12), current.saturated))
        for child in sorted((current.children or {}).values(), key=lambda n: n.name):
            walk(child, prefix + current.name + "/")

    walk(state.root, "")
    return found


def test_event_handlers_keep_the_tree_as_a_fresh_build_would() -> None:
    """Allocations refresh the path (or the whole tree once a dimension runs out); a discard restores it."""
    ssn = rescaling(4, 3, 1)
    state = tree(ssn)
    before = _snapshot(state)
    pending: list[TaskInfo] = [t for j in ssn.jobs.values() for t in j.tasks.values() if not t.node_name]
    stmt = Statement(ssn)
    for task in pending[:2] + pending[6:8] + pending[12:14]:
        stmt.allocate(task, "n1")
    after = _snapshot(state)
    fresh = drf.HierarchicalShares.build(state.shares, ssn)
    assert after == _snapshot(fresh) and after != before
    stmt.discard()
    assert _snapshot(state) == before
