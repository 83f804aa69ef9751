"""gangpreempt, gangreclaim and shuffle over whole cycles: who may lose tasks, and when nothing moves."""

from __future__ import annotations

from typing import Any

import pytest

from py_volcano.actions import ACTIONS
from py_volcano.actions.gangpreempt import GangEvictionArgs
from py_volcano.api import CycleResult, TaskInfo
from py_volcano.framework import Arguments, PluginEntry, Registry, Session, parse_conf, run_cycle
from py_volcano.plugins import PLUGINS
from tests.builders import cluster, node, pod, pod_group, priority_class, queue

TIERS = """
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: predicates
  - name: proportion
"""


def cycle(actions: str, *objects: dict[str, Any], configurations: str = "", extra: str = "") -> CycleResult:
    registry = Registry(plugins={**PLUGINS, **EXTRA}, actions=ACTIONS)
    text = f"actions: {actions}\n{TIERS}{extra}{configurations}"
    return run_cycle(cluster(*objects), parse_conf(text, registry), registry)


def evicted(result: CycleResult) -> list[str]:
    return sorted(task.name for task, _ in result.evictions)


def group(name: str, *, min_member: int, klass: str = "", queue_name: str = "default", **notes: str) -> dict[str, Any]:
    body = pod_group(name=name, min_member=min_member, priority_class=klass, queue=queue_name, phase="Running")
    body["metadata"]["annotations"] = notes
    return body


def member(name: str, job: str, *, node_name: str = "", klass: str = "") -> dict[str, Any]:
    spec = {"priorityClassName": klass} if klass else {}
    return pod(name=name, group=job, node_name=node_name, spec=spec)


def preempt_cluster(**victim_notes: str) -> list[dict[str, Any]]:
    """node-1 (4 CPUs) full with low (priority 1, minMember 4); high (priority 100) needs 2 CPUs."""
    pending = pod_group(name="high", min_member=2, priority_class="p100")
    return [
        priority_class(name="p1", value=1),
        priority_class(name="p100", value=100),
        node(name="node-1"),
        group("low", min_member=4, klass="p1", **victim_notes),
        *(member(f"low-{i}", "low", node_name="node-1", klass="p1") for i in range(4)),
        pending,
        member("high-0", "high", klass="p100"),
        member("high-1", "high", klass="p100"),
    ]


def test_gangpreempt_breaks_a_lower_priority_gang_as_a_whole() -> None:
    """Every task of low is a whole bundle (it sits at minMember): all four go, the gang is pipelined."""
    result = cycle("enqueue, allocate, gangpreempt", *preempt_cluster())
    assert evicted(result) == ["low-0", "low-1", "low-2", "low-3"]
    assert result.pipelined == {"default/high-0": "node-1", "default/high-1": "node-1"}


@pytest.mark.parametrize(
    ("notes", "configurations"),
    [
        pytest.param({"volcano.sh/preemptable": "false"}, "", id="podgroup-not-preemptable"),
        pytest.param(
            {}, "configurations:\n- name: gangpreempt\n  arguments: {allowWholeBundle: false}\n", id="no-whole"
        ),
    ],
)
def test_gangpreempt_takes_nothing_it_may_not(notes: dict[str, str], configurations: str) -> None:
    """A PodGroup marked `volcano.sh/preemptable: "false"` loses nothing; without whole bundles a gang at its
    minimum cannot be broken."""
    result = cycle("enqueue, allocate, gangpreempt", *preempt_cluster(**notes), configurations=configurations)
    assert evicted(result) == []
    assert result.pipelined == {}


def test_gangpreempt_never_takes_from_equal_priority() -> None:
    """Victim jobs must have a lower priority than the preemptor."""
    objects = [obj for obj in preempt_cluster() if obj["kind"] != "PriorityClass"]
    for obj in objects:
        obj["spec"].pop("priorityClassName", None)
    assert evicted(cycle("enqueue, allocate, gangpreempt", *objects)) == []


def reclaim_cluster(*, gang_pods: int = 2, reclaimable: bool = True) -> list[dict[str, Any]]:
    """q2's hog (minMember 2) fills node-1; q1's gang wants `gang_pods` CPUs."""
    return [
        node(name="node-1"),
        queue(name="q1"),
        queue(name="q2", reclaimable=reclaimable),
        group("hog", min_member=2, queue_name="q2"),
        *(pod(name=f"hog-{i}", group="hog", node_name="node-1", priority=i) for i in range(4)),
        pod_group(name="gang", min_member=gang_pods, queue="q1"),
        *(pod(name=f"gang-{i}", group="gang") for i in range(gang_pods)),
    ]


def test_gangreclaim_takes_the_safe_bundle_of_another_queue() -> None:
    """hog can lose two pods and stay ready; its two lowest-priority pods free what the gang needs."""
    assert evicted(cycle("enqueue, allocate, gangreclaim", *reclaim_cluster())) == ["hog-0", "hog-1"]


@pytest.mark.parametrize(
    "objects",
    [
        pytest.param(reclaim_cluster(reclaimable=False), id="victim-queue-not-reclaimable"),
        pytest.param(reclaim_cluster(gang_pods=3), id="gang-demand-above-deserved"),
    ],
)
def test_gangreclaim_takes_nothing_it_may_not(objects: list[dict[str, Any]]) -> None:
    """A queue that is not reclaimable loses nothing; a queue may not reclaim more than it deserves (3 CPUs
    against q1's 2: refused by preemptive on the gang's summed request, and by allocatable task by task)."""
    assert evicted(cycle("enqueue, allocate, gangreclaim", *objects)) == []


def test_gang_eviction_args() -> None:
    """maxDomains 0 or less falls back to 8, as Volcano; allowWholeBundle defaults to true."""
    assert GangEvictionArgs.parse(Arguments({"maxDomains": 0})) == GangEvictionArgs(8, True)
    assert GangEvictionArgs.parse(Arguments({"maxDomains": 2, "allowWholeBundle": False})) == GangEvictionArgs(2, False)


class Chooser:
    """A test plugin choosing every offered task named `*-go` at victim_tasks."""

    name = "chooser"

    def __init__(self, args: object) -> None:
        self.args = args

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_victim_tasks_fn(self.name, self.choose)

    def on_session_close(self, ssn: Session) -> None:
        """Nothing to report."""

    @staticmethod
    def choose(tasks: list[TaskInfo]) -> list[TaskInfo]:
        return [task for task in tasks if task.name.endswith("-go")]


EXTRA = {"chooser": PluginEntry(lambda args: None, Chooser)}


def test_shuffle_evicts_the_running_tasks_the_plugins_choose() -> None:
    """Only running tasks are offered; each chosen one is evicted with the reason `shuffle`."""
    result = cycle(
        "shuffle",
        node(name="n"),
        pod(name="a-go", node_name="n"),
        pod(name="b-stay", node_name="n"),
        pod(name="c-go"),
        extra="- plugins:\n  - name: chooser\n",
    )
    assert [(task.name, reason) for task, reason in result.evictions] == [("a-go", "shuffle")]


CAPACITY_FIRST = """
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
  - name: capacity
- plugins:
  - name: predicates
"""


@pytest.mark.parametrize(
    ("guarantee", "expected"),
    [("0", ["hog-0", "hog-1", "hog-2", "hog-3"]), ("3", ["hog-0", "hog-1", "hog-2"])],
)
def test_gangreclaim_with_capacity_keeps_the_victim_queues_guarantee(guarantee: str, expected: list[str]) -> None:
    """Capacity's gang-aware victim filter (in the first tier, so that it counts): q2 (deserved 2) holds 6 CPUs;
    hog's four lowest-priority pods form its safe bundle, but capacity lets q2 go down only to its
    guarantee, so with 3 guaranteed one of them stays. The whole allowed bundle goes (it frees at least
    the gang's 2 CPUs)."""
    objects = [
        node(name="node-1", cpu="6"),
        queue(name="q1", deserved={"cpu": "2"}),
        queue(name="q2", deserved={"cpu": "2"}, guarantee={"resource": {"cpu": guarantee}}),
        group("hog", min_member=2, queue_name="q2"),
        *(pod(name=f"hog-{i}", group="hog", node_name="node-1", priority=i, memory="") for i in range(6)),
        pod_group(name="gang", min_member=2, queue="q1"),
        *(pod(name=f"gang-{i}", group="gang", memory="") for i in range(2)),
    ]
    registry = Registry(plugins=PLUGINS, actions=ACTIONS)
    text = f"actions: enqueue, allocate, gangreclaim\n{CAPACITY_FIRST}"
    result = run_cycle(cluster(*objects), parse_conf(text, registry), registry)
    assert evicted(result) == expected
