"""Hierarchical capacity (docs/semantics.md, "Hierarchical capacity" and "Example queue tree"): tree,
realCapability per level, roll-up, cut-off queues."""

from __future__ import annotations

from typing import Any

import pytest

from py_volcano.api import JobID, QueueID, Vote
from py_volcano.framework import Statement, close_session
from tests.builders import node, pod, pod_group, queue
from tests.unit.plugins.capacity.example_tree import example_tree
from tests.unit.plugins.capacity.sessions import (
    attr_of,
    dims,
    open_capacity,
    open_hierarchy,
    plugin_of,
    task_of,
    tree_of,
)

INF = float("inf")


def running(queue_name: str, cpu: int) -> list[dict[str, Any]]:
    """A running one-pod job of `cpu` cores and 1Gi in the queue, minResources its CPU (nothing elastic)."""
    return [
        pod_group(
            name=f"{queue_name}-run", queue=queue_name, phase="Running", min_resources={"cpu": str(cpu)}
        ),
        pod(name=f"{queue_name}-run-0", group=f"{queue_name}-run", node_name="n1", cpu=str(cpu)),
    ]


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        pytest.param(
            {},
            {"root": (100, 400), "team-a": (70, 300), "team-b": (50, 200), "training": (50, 200),
             "inference": (30, 120), "batch": (40, 160), "interactive": (20, 80)},
            id="the example tree as written: every level ends at its capability",
        ),
        pytest.param(
            {"training": {"capability": None}},
            {"training": (60, 260), "inference": (30, 120)},
            id="training without capability: team-a's 70/300 - children's guarantees 20/80 + own 10/40",
        ),
        pytest.param(
            {"team-a": {"capability": {"cpu": "90", "memory": "400Gi"}}},
            {"team-a": (80, 320), "training": (50, 200)},
            id="team-a capability 90/400Gi: root's 100/400 - 40/160 + own 20/80",
        ),
    ],
)
def test_example_tree_real_capability_per_level(
    overrides: dict[str, dict[str, Any]], expected: dict[str, tuple[int, int]]
) -> None:
    """realCapability = min(capability, parent's realCapability - children's guarantees + own guarantee)."""
    ssn = open_hierarchy(*example_tree(**overrides))
    for name, (cpu, memory) in expected.items():
        assert dims(attr_of(ssn, name).real_capability) == (cpu, memory, 0), name


def test_example_tree_root_takes_the_children_sums() -> None:
    """The root's deserved and guarantee are its children's sums: 100/400Gi and 40/160Gi."""
    ssn = open_hierarchy(*example_tree())
    root = attr_of(ssn, "root")
    assert (dims(root.deserved), dims(root.guarantee)) == ((100, 400, 0), (40, 160, 0))
    assert attr_of(ssn, "training").ancestors == (QueueID("root"), QueueID("team-a"))
    assert attr_of(ssn, "team-a").children == [QueueID("training"), QueueID("inference")]


def test_example_tree_allocation_propagates_to_every_ancestor() -> None:
    """training 30 -> 40 CPU: every level's allocated grows; training's share becomes 1.0 while team-a's
    and root's keep their session-open 0.75 (Volcano's capacity refreshes only the job's queue's share)."""
    ssn = open_hierarchy(
        *example_tree(), *running("training", 30), *running("inference", 15), *running("batch", 30),
        pod_group(name="more", queue="training", phase="Inqueue"),
        pod(name="more-0", group="more", cpu="10"),
    )
    before = [attr_of(ssn, name).share for name in ("training", "team-a", "root")]
    assert before == pytest.approx([0.75, 0.75, 0.75])
    Statement(ssn).allocate(task_of(ssn, "more-0"), "n1")
    allocated = [dims(attr_of(ssn, name).allocated)[0] for name in ("training", "team-a", "root")]  # type: ignore[index]
    assert allocated == [40, 55, 85]
    after = [attr_of(ssn, name).share for name in ("training", "team-a", "root")]
    assert after == pytest.approx([1.0, 0.75, 0.75])
    reported = [attr_of(ssn, name).current_share() for name in ("training", "team-a", "root")]
    assert reported == pytest.approx([1.0, 55 / 60, 0.85])  # what the queue figures (metrics, status) show


def test_allocatable_and_enqueueable_are_checked_at_every_level() -> None:
    """training fits its own 50 CPU, but team-a (real 70) already holds 35 + 30: a 10-CPU pod is refused."""
    ssn = open_hierarchy(
        *example_tree(), *running("training", 35), *running("inference", 30),
        pod_group(name="more", queue="training", phase="Inqueue"),
        pod(name="more-0", group="more", cpu="10"),
        pod(name="more-1", group="more", cpu="5"),
        pod_group(name="gang", queue="training", min_resources={"cpu": "10"}),
        pod(name="gang-0", group="gang", cpu="10"),
    )
    plugin, training = plugin_of(ssn), ssn.queues[QueueID("training")]
    assert not plugin.allocatable(training, task_of(ssn, "more-0"))
    assert plugin.allocatable(training, task_of(ssn, "more-1"))
    job = ssn.jobs[JobID("default/gang")]
    assert plugin.job_enqueueable(job) is Vote.REJECT
    assert job.job_fit_error == "queue team-a resource quota insufficient: insufficient cpu"


def test_enqueued_job_counts_as_inqueue_in_every_ancestor() -> None:
    """An admitted 10-CPU job adds 10 CPU inqueue to batch, team-b and root."""
    ssn = open_hierarchy(
        *example_tree(),
        pod_group(name="gang", queue="batch", min_resources={"cpu": "10"}),
        pod(name="gang-0", group="gang", cpu="10"),
    )
    plugin, job = plugin_of(ssn), ssn.jobs[JobID("default/gang")]
    assert plugin.job_enqueueable(job) is Vote.PERMIT
    plugin.job_enqueued(job)
    assert [dims(attr_of(ssn, q).inqueue) for q in ("batch", "team-b", "root", "team-a")] == [
        (10, 0, 0), (10, 0, 0), (10, 0, 0), (0, 0, 0)
    ]


def test_capability_inheritance_of_cpu_memory_and_scalars() -> None:
    """dev sets only memory 4Gi; it inherits team's 6 CPU and 2 GPUs; team inherits the unlimited root."""
    ssn = open_hierarchy(
        node(name="n1", cpu="16", memory="64Gi", scalars={"nvidia.com/gpu": "8"}),
        queue(name="team", capability={"cpu": "6", "nvidia.com/gpu": "2"}),
        queue(name="dev", parent="team", capability={"memory": "4Gi"}),
    )
    assert dims(attr_of(ssn, "dev").capability) == (6, 4, 2)
    assert dims(attr_of(ssn, "dev").real_capability) == (6, 4, 2)
    assert dims(attr_of(ssn, "team").capability) == (6, INF, 2)
    assert dims(attr_of(ssn, "root").real_capability) == (INF, INF, INF)


def test_implicit_root_is_unlimited_and_parents_every_top_level_queue() -> None:
    """Without a root Queue the tree still has one; the default queue is one of its leaves."""
    ssn = open_hierarchy(node(name="n1"), queue(name="a"), queue(name="b", parent="a"))
    tree = tree_of(ssn)
    assert tree.attrs[QueueID("root")].children == [QueueID("a"), QueueID("default")]
    assert dims(tree.attrs[QueueID("a")].real_capability) == (INF, INF, 0)
    assert (tree.is_leaf(QueueID("a")), tree.is_leaf(QueueID("b"))) == (False, True)


def cycle_cluster() -> list[dict[str, Any]]:
    return [
        node(name="n1"),
        queue(name="a", parent="b"),
        queue(name="b", parent="a"),
        queue(name="c", parent="a"),
        queue(name="lost", parent="ghost"),
        queue(name="ok"),
        *[item for name in ("a", "c", "lost", "ok") for item in (
            pod_group(name=f"{name}-job", queue=name, phase="Inqueue"),
            pod(name=f"{name}-job-0", group=f"{name}-job"),
        )],
    ]


def test_cycle_and_missing_parent_are_warned_and_their_jobs_wait() -> None:
    """a <-> b loop, c hangs below it, lost names a missing parent; ok is scheduled as usual."""
    ssn = open_hierarchy(*cycle_cluster())
    assert ssn.warnings == [
        "Queues a, b: field spec.parent: parents form a cycle a -> b -> a; their jobs wait",
        "Queue c: field spec.parent: ancestor queue 'a' is cut off from the root queue "
        "(its queue hierarchy has a cycle (a -> b -> a)); its jobs wait",
        "Queue lost: field spec.parent: queue 'ghost' not found; its jobs wait",
    ]
    plugin = plugin_of(ssn)
    verdicts = {
        name: plugin.job_valid(ssn.jobs[JobID(f"default/{name}-job")]) for name in ("a", "c", "lost", "ok")
    }
    assert verdicts["ok"] is None
    assert verdicts["a"] is not None and verdicts["a"].message == (
        "queue 'a' cannot be used: its queue hierarchy has a cycle (a -> b -> a)"
    )
    assert verdicts["c"] is not None and not verdicts["c"].passed
    assert verdicts["lost"] is not None and "'ghost' does not exist" in verdicts["lost"].message
    assert not plugin.allocatable(ssn.queues[QueueID("a")], task_of(ssn, "a-job-0"))
    assert plugin.allocatable(ssn.queues[QueueID("ok")], task_of(ssn, "ok-job-0"))
    cut_off = ssn.jobs[JobID("default/a-job")]
    assert plugin.job_enqueueable(cut_off) is Vote.REJECT
    assert cut_off.job_fit_error == "queue 'a' cannot be used: its queue hierarchy has a cycle (a -> b -> a)"


def test_job_in_an_inner_queue_is_warned_waits_and_still_counts_as_usage() -> None:
    """A job in team-a (which has children) waits; its running pod still counts for team-a and root."""
    ssn = open_hierarchy(
        *example_tree(), *running("team-a", 4),
        pod_group(name="leaf", queue="training", phase="Inqueue"),
        pod(name="leaf-0", group="leaf"),
    )
    assert ssn.warnings == [
        "PodGroup default/team-a-run: field spec.queue: queue 'team-a' is not a leaf queue "
        "(child queues: training, inference); the job waits"
    ]
    plugin = plugin_of(ssn)
    verdict = plugin.job_valid(ssn.jobs[JobID("default/team-a-run")])
    assert verdict is not None and verdict.reason == "QueueUnusable"
    assert plugin.job_valid(ssn.jobs[JobID("default/leaf")]) is None
    assert [dims(attr_of(ssn, q).allocated)[0] for q in ("team-a", "root")] == [4, 4]  # type: ignore[index]
    assert not plugin.allocatable(ssn.queues[QueueID("team-a")], task_of(ssn, "team-a-run-0"))


def test_inconsistent_children_are_warned_and_scheduling_goes_on() -> None:
    """team-a: guarantee 15 < children's 20, deserved 50 < children's 60; training's capability above."""
    overrides: dict[str, Any] = {
        "team-a": {"guarantee": {"resource": {"cpu": "15", "memory": "80Gi"}},
                   "deserved": {"cpu": "50", "memory": "240Gi"}},
        "training": {"capability": {"cpu": "80", "memory": "200Gi"}},
    }
    ssn = open_hierarchy(*example_tree(**overrides))
    assert ssn.warnings == [
        "Queue training: field spec.capability: above parent queue team-a's capability on cpu; "
        "the parent's capability limits it",
        "Queue team-a: field spec.deserved: below the sum of its child queues' deserved "
        "(cpu 60, memory 240Gi); scheduling goes on",
        "Queue team-a: field spec.guarantee: below the sum of its child queues' guarantees "
        "(cpu 20, memory 80Gi); not every child guarantee can hold at once",
    ]
    assert dims(attr_of(ssn, "training").real_capability) == (60, 200, 0)


@pytest.mark.parametrize(
    ("switch", "hierarchical"),
    [
        pytest.param("", False, id="unset: off, as Volcano's HierarchyEnabled"),
        pytest.param("enableHierarchy: true", True, id="enableHierarchy"),
        pytest.param("enabledHierarchy: true", True, id="enabledHierarchy"),
        pytest.param("enableHierarchy: false", False, id="switched off"),
    ],
)
def test_hierarchy_switch(switch: str, hierarchical: bool) -> None:
    """Only a written `true` turns the tree on."""
    ssn = open_capacity(*example_tree(), switch=switch)
    assert tree_of(ssn).hierarchical is hierarchical
    assert (QueueID("team-a") in attr_of(ssn, "training").ancestors) is hierarchical


def test_figures_cover_every_queue_inner_ones_included() -> None:
    """At close every queue reports deserved, allocated, realCapability, guarantee, share and parent."""
    ssn = open_hierarchy(*example_tree(), *running("training", 30), *running("batch", 20))
    result = close_session(ssn)
    assert sorted(result.queues) == sorted(
        ["root", "team-a", "team-b", "training", "inference", "batch", "interactive", "default"]
    )
    team_a = result.queues["team-a"]
    assert (dims(team_a.allocated), dims(team_a.deserved), dims(team_a.real_capability)) == (
        (30, 1, 0), (60, 240, 0), (70, 300, 0)
    )
    assert (dims(team_a.guarantee), team_a.share, team_a.parent) == ((20, 80, 0), 0.5, "root")
    assert not team_a.overused
    assert (result.queues["training"].parent, result.queues["root"].parent) == ("team-a", "")
    assert result.queues["batch"].share == pytest.approx(20 / 30)
