"""Reclaim by ancestors (docs/semantics.md, "Reclaim by ancestors"): Volcano's eleven cases of
Test_capacityPlugin_AncestorReclaimScenarios (pkg/scheduler/plugins/capacity/capacity_test.go), played through
one cycle of `enqueue, reclaim, allocate` with the same single tier and the same switches on."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from py_volcano.actions import ACTIONS
from py_volcano.framework import Registry, parse_conf, run_cycle
from py_volcano.plugins import PLUGINS
from py_volcano.plugins.capacity import CapacityArgs
from tests.builders import cluster, node, pod, pod_group, queue

A100 = "nvidia.com/a100"
HCA = "rdma/hca"
REGISTRY = Registry(plugins=PLUGINS, actions=ACTIONS)


def conf(level: int, *, with_priority: bool) -> str:
    """Volcano's test tier: capacity, predicates, gang (starving only) and, optionally, priority (orders only);
    a switch Volcano's test leaves unset is off there, so it is written off here."""
    text = f"""actions: "enqueue, reclaim, allocate"
tiers:
- plugins:
  - name: capacity
    enableHierarchy: true
    arguments: {{ancestorReclaimLevel: {level}}}
  - name: predicates
  - name: gang
    enableJobOrder: false
    enableJobReady: false
    enableJobPipelined: false
    enablePreemptable: false
    enableReclaimable: false
"""
    if with_priority:
        text += "  - name: priority\n    enablePreemptable: false\n    enableJobStarving: false\n"
    return text


def q(name: str, parent: str, deserved: dict[str, str] | None = None, cap: dict[str, str] | None = None) -> Any:
    """buildQueueWithParents(name, parent, deserved, capability)."""
    spec: dict[str, Any] = {"parent": parent}
    if deserved:
        spec["deserved"] = deserved
    if cap:
        spec["capability"] = cap
    return queue(name=name, **spec)


def gpu(count: str) -> dict[str, str]:
    """Only `count` A100s, as Volcano's BuildResourceList("", "", a100)."""
    return {A100: count}


def p(name: str, group: str, *, node_name: str = "", a100: str = "1", hca: str = "1", cpu: str = "1",
      memory: str = "1Gi", priority: int | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A pod in ns1 with Volcano's test requests."""
    manifest = pod(name=name, namespace="ns1", group=group, node_name=node_name, cpu=cpu, memory=memory,
                   priority=priority, labels=labels)
    requests = manifest["spec"]["containers"][0]["resources"]["requests"]
    requests.update({k: v for k, v in ((A100, a100), (HCA, hca)) if v})
    return manifest


def pg(name: str, queue_name: str, phase: str) -> dict[str, Any]:
    """A PodGroup in ns1 with minMember 1."""
    return pod_group(name=name, namespace="ns1", queue=queue_name, phase=phase)


BIG_NODE = node(name="n1", cpu="16", memory="16Gi", pods="11", scalars={A100: "4", HCA: "1001"})
SMALL_NODE = node(name="n1", cpu="2", memory="2Gi", pods="10")


def project_tree() -> list[dict[str, Any]]:
    """project1_root / project2_root, each with a non-preemptable and a preemptable child."""
    return [
        q("root", ""),
        q("project1_root", "root", gpu("1"), gpu("2")),
        q("project1_non-preemptable", "project1_root", gpu("1"), gpu("1")),
        q("project1_preemptable", "project1_root"),
        q("project2_root", "root", gpu("3"), gpu("4")),
        q("project2_non-preemptable", "project2_root", gpu("3"), gpu("3")),
        q("project2_preemptable", "project2_root"),
    ]


def level_tree() -> list[dict[str, Any]]:
    """grand-a / parent-a / queue-a (2 CPU deserved all the way) and grand-b (3) / parent-b (1) / queue-b (1)."""
    two, one, three = {"cpu": "2", "memory": "2Gi"}, {"cpu": "1", "memory": "1Gi"}, {"cpu": "3", "memory": "3Gi"}
    four = {"cpu": "4", "memory": "4Gi"}
    return [
        q("root", ""),
        q("grand-a", "root", two, four), q("parent-a", "grand-a", two, two), q("queue-a", "parent-a", two, two),
        q("grand-b", "root", three, four), q("parent-b", "grand-b", one, two), q("queue-b", "parent-b", one, two),
    ]


TWO_CPU = ("2", "2Gi", "")


def victim_and_reclaimer(victim_queue: str, reclaimer_queue: str, *, victim: tuple[str, str, str] = TWO_CPU,
                         reclaimer: tuple[str, str, str] = TWO_CPU) -> list[dict[str, Any]]:
    """One running victim and one pending reclaimer, each one pod of its own group; sizes are (CPU, memory,
    A100s), 2 CPU and 2Gi by default."""
    (cpu, memory, a100), (r_cpu, r_memory, r_a100) = victim, reclaimer
    return [
        p("p-victim", "pg-victim", node_name="n1", cpu=cpu, memory=memory, a100=a100, hca=""),
        p("p-reclaimer", "pg-reclaimer", cpu=r_cpu, memory=r_memory, a100=r_a100, hca=""),
        pg("pg-victim", victim_queue, "Running"),
        pg("pg-reclaimer", reclaimer_queue, "Inqueue"),
    ]


@dataclass(frozen=True)
class Case:
    """One of Volcano's cases: level, whether priority is in the tier, objects, expected evictions and
    pipelined pods."""

    level: int
    objects: list[dict[str, Any]]
    evicted: list[str] = field(default_factory=list)
    pipelined: dict[str, str] = field(default_factory=dict)
    with_priority: bool = False


CASES = [
    pytest.param(Case(1, [
        BIG_NODE,
        q("root", ""), q("case1_queue1", "root", gpu("1")), q("case1_queue11", "case1_queue1"),
        q("case1_queue2", "root"),
        pg("pg1", "case1_queue2", "Running"), pg("pg2", "case1_queue11", "Inqueue"),
        p("p1", "pg1", node_name="n1", a100="4"), p("p2", "pg2"),
    ], ["ns1/p1"], {"ns1/p2": "n1"}, True), id="case1-reclaim-by-parent-deserved-at-level-1"),
    pytest.param(Case(1, [
        BIG_NODE, *project_tree(),
        *[pg(f"pg{i}", "project2_preemptable", "Running") for i in range(1, 5)],
        pg("pg5", "project1_preemptable", "Pending"),
        *[p(f"p{i}", f"pg{i}", node_name="n1", priority=2) for i in range(1, 4)],
        p("p4", "pg4", node_name="n1", priority=1), p("p5", "pg5"),
    ], ["ns1/p4"], {"ns1/p5": "n1"}, True), id="case2-cross-parent-when-child-and-parent-over-deserved"),
    pytest.param(Case(1, [
        BIG_NODE, *project_tree(),
        *[pg(f"pg{i}", "project2_preemptable", "Running") for i in range(1, 4)],
        pg("pg4_reclaimed", "project2_preemptable", "Inqueue"),
        pg("pg5_pipelined", "project1_preemptable", "Running"),
        pg("pg6", "project2_non-preemptable", "Pending"),
        *[p(f"p{i}", f"pg{i}", node_name="n1", priority=2) for i in range(1, 4)],
        p("p4", "pg4_reclaimed"), p("p5", "pg5_pipelined", node_name="n1"), p("p6", "pg6"),
    ], ["ns1/p3"], {"ns1/p6": "n1"}, True), id="case3-cross-parent-sibling-victim-first"),
    pytest.param(Case(1, [
        node(name="n1", cpu="8", memory="8Gi", pods="11", scalars={A100: "1", HCA: "1001"}),
        q("root", ""), q("case4_parent1", "root", gpu("1")), q("case4_child1", "case4_parent1", gpu("1")),
        q("case4_child1_sibling", "case4_parent1"), q("case4_parent2", "root", gpu("1")),
        q("case4_child2", "case4_parent2", gpu("1")),
        pg("pg1", "case4_child1", "Running"), pg("pg2", "case4_child2", "Pending"),
        pg("pg3", "case4_child1_sibling", "Running"),
        p("p1", "pg1", node_name="n1"), p("p2", "pg2"),
        p("p3", "pg3", node_name="n1", labels={"volcano.sh/preemptable": "false"}),
    ], with_priority=True), id="case4-blocked-when-victim-child-not-over-deserved"),
    pytest.param(Case(0, [SMALL_NODE, *level_tree(), *victim_and_reclaimer("queue-b", "queue-a")],
                      ["ns1/p-victim"], {"ns1/p-reclaimer": "n1"}), id="case5-level-0-leaf-checks-only"),
    pytest.param(Case(1, [SMALL_NODE, *level_tree(), *victim_and_reclaimer("queue-b", "queue-a")],
                      ["ns1/p-victim"], {"ns1/p-reclaimer": "n1"}), id="case6-level-1-parent-over-deserved"),
    pytest.param(Case(2, [SMALL_NODE, *level_tree(), *victim_and_reclaimer("queue-b", "queue-a")]),
                 id="case7-level-2-grandparent-not-over-deserved"),
    pytest.param(Case(1, [
        SMALL_NODE, q("root", ""), q("parent", "root", {"cpu": "4", "memory": "4Gi"}, {"cpu": "4", "memory": "4Gi"}),
        q("queue-a", "parent"), q("queue-b", "parent"), *victim_and_reclaimer("queue-b", "queue-a"),
    ]), id="case8-siblings-without-leaf-deserved"),
    pytest.param(Case(2, [
        SMALL_NODE, q("root", ""), q("grand", "root", {"cpu": "2", "memory": "2Gi"}, {"cpu": "2", "memory": "2Gi"}),
        q("parent-a", "grand"), q("queue-a", "parent-a"), q("parent-b", "grand"), q("queue-b", "parent-b"),
        *victim_and_reclaimer("queue-b", "queue-a"),
    ]), id="case9-cousins-without-leaf-deserved"),
    pytest.param(Case(2, [
        SMALL_NODE, q("root", ""), q("grand", "root", {"cpu": "1", "memory": "1Gi"}, {"cpu": "2", "memory": "2Gi"}),
        q("parent-deep", "grand", {"cpu": "1", "memory": "1Gi"}, {"cpu": "2", "memory": "2Gi"}),
        q("queue-deep", "parent-deep"), q("queue-shallow", "grand"),
        *victim_and_reclaimer("queue-deep", "queue-shallow"),
    ]), id="case10-unbalanced-shared-grandparent"),
    pytest.param(Case(2, [
        node(name="n1", cpu="4", memory="4Gi", pods="10", scalars={A100: "2"}),
        q("root", ""), q("shallow-parent", "root", gpu("1")), q("queue-shallow", "shallow-parent", gpu("1")),
        q("deep-grand", "root", gpu("2")), q("deep-parent", "deep-grand", gpu("1")),
        q("queue-deep", "deep-parent", gpu("1")),
        *victim_and_reclaimer("queue-deep", "queue-shallow", victim=("1", "1Gi", "2"), reclaimer=("1", "1Gi", "1")),
    ]), id="case11-unbalanced-depth-2-ancestor-not-over-deserved"),
]


@pytest.mark.parametrize("case", CASES)
def test_volcano_ancestor_reclaim_case(case: Case) -> None:
    """Exactly Volcano's evictions and pipelined pods."""
    conf_ = parse_conf(conf(case.level, with_priority=case.with_priority), REGISTRY)
    result = run_cycle(cluster(*case.objects), conf_, REGISTRY)
    assert sorted(task.key for task, _ in result.evictions) == case.evicted
    assert result.pipelined == case.pipelined
    assert result.binds == []


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        pytest.param("{}", 0, id="default-0"),
        pytest.param("{ancestorReclaimLevel: 2}", 2, id="integer"),
        pytest.param("{ancestorReclaimLevel: '1'}", 1, id="string"),
        pytest.param("{ancestorReclaimLevel: -3}", 0, id="negative-means-0"),
    ],
)
def test_ancestor_reclaim_level_argument(arguments: str, expected: int) -> None:
    """Read once at load; a negative level falls back to 0 as in Volcano."""
    text = f"actions: reclaim\ntiers:\n- plugins:\n  - name: capacity\n    arguments: {arguments}\n"
    args = parse_conf(text, REGISTRY).tiers[0][0].args
    assert isinstance(args, CapacityArgs)
    assert args.ancestor_reclaim_level == expected
