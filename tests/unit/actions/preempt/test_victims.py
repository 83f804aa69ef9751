"""Victims on a node (docs/semantics.md, "Victim order"): their order, the PDB-aware pick, validation, and
eviction by clones."""

from __future__ import annotations

from py_volcano.actions.preempt import victims
from py_volcano.actions.preempt.disruption import DisruptionBudgets
from py_volcano.api import QueueInfo, TaskStatus
from py_volcano.framework import NoArgs, PluginEntry, Session, Statement
from tests.builders import node, pod, pod_group, priority_class, queue
from tests.unit.actions.sessions import pdb, session, task

PRIORITY = "actions: allocate\ntiers:\n- plugins:\n  - name: priority\n"


def _cluster() -> tuple[dict[str, object], ...]:
    return (
        priority_class(name="p10", value=10),
        priority_class(name="p50", value=50),
        priority_class(name="p100", value=100),
        queue(name="qa"),
        queue(name="qb"),
        node(name="n", cpu="8"),
        pod_group(name="a-low", queue="qa", priority_class="p10", phase="Running"),
        pod_group(name="a-high", queue="qa", priority_class="p50", phase="Running"),
        pod_group(name="b-job", queue="qb", priority_class="p100", phase="Running"),
        pod(name="a-low-0", group="a-low", node_name="n"),
        pod(name="a-low-1", group="a-low", node_name="n"),
        pod(name="a-high-0", group="a-high", node_name="n"),
        pod(name="b-job-0", group="b-job", node_name="n", priority=100),
        pod(name="b-job-1", group="b-job", node_name="n", priority=5),
        pod(name="preemptor", queue="qa", priority=1000),
    )


def _names(tasks: list) -> list[str]:  # type: ignore[type-arg]
    return [t.name for t in tasks]


def test_victim_order_reverses_queue_then_job_then_task_order() -> None:
    """Other queue first (reverse queue order), then lower job priority, then lower task priority or index."""
    ssn = session(PRIORITY, *_cluster())
    candidates = [task(ssn, n) for n in ("a-high-0", "a-low-0", "b-job-0", "a-low-1", "b-job-1")]
    ordered = victims.in_victim_order(ssn, candidates, task(ssn, "preemptor"))
    assert _names(ordered) == ["b-job-1", "b-job-0", "a-low-1", "a-low-0", "a-high-0"]


class _PreemptorQueueFirst:
    """A test plugin whose victim queue order takes victims from the preemptor's own queue first."""

    name = "own-queue-first"

    def __init__(self, args: NoArgs) -> None:
        self.args = args

    def on_session_open(self, ssn: Session) -> None:
        def order(left: QueueInfo, right: QueueInfo, preemptor: QueueInfo) -> int:
            return -1 if left.name == preemptor.name else 1 if right.name == preemptor.name else 0

        ssn.add_victim_queue_order_fn(self.name, order)

    def on_session_close(self, ssn: Session) -> None:
        """Nothing to report."""


def test_victim_order_across_queues_follows_the_victim_queue_order_fn() -> None:
    """A plugin's victim queue order (given the preemptor's queue) replaces the reversed queue order."""
    conf = PRIORITY + "  - name: own-queue-first\n"
    ssn = session(conf, *_cluster(), plugins={"own-queue-first": PluginEntry(NoArgs.parse, _PreemptorQueueFirst)})
    candidates = [task(ssn, n) for n in ("a-high-0", "a-low-0", "b-job-0", "a-low-1", "b-job-1")]
    ordered = victims.in_victim_order(ssn, candidates, task(ssn, "preemptor"))
    assert _names(ordered) == ["a-low-1", "a-low-0", "a-high-0", "b-job-1", "b-job-0"]


def _pdb_session() -> Session:
    return session(
        PRIORITY,
        node(name="n", cpu="4"),
        pdb(name="web", match={"app": "web"}, allowed=0),
        pod(name="web-0", node_name="n", labels={"app": "web"}),
        pod(name="web-1", node_name="n", labels={"app": "web"}),
        pod(name="batch-0", node_name="n"),
    )


def test_pick_skips_victims_that_break_a_budget_while_another_is_left() -> None:
    """The first non-breaking victim goes; only breaking ones left means the first of them."""
    ssn = _pdb_session()
    budgets = DisruptionBudgets.build(ssn)
    order = [task(ssn, "web-0"), task(ssn, "batch-0"), task(ssn, "web-1")]
    assert victims.pick(order, budgets).name == "batch-0"
    assert victims.pick(order, budgets).name == "web-0"
    assert victims.pick(order, budgets).name == "web-1"
    assert order == []


def test_pick_without_budgets_takes_victims_in_order() -> None:
    """No PDB: plain victim order."""
    ssn = _pdb_session()
    order = [task(ssn, "web-0"), task(ssn, "batch-0")]
    assert victims.pick(order, DisruptionBudgets()).name == "web-0"


def test_validate_victims_needs_victims_that_make_room_and_a_pod_slot() -> None:
    """Volcano's ValidateVictims, plus the pod slot node fit counts; a node with room needs no victim."""
    ssn = session(
        PRIORITY,
        node(name="n", cpu="2", pods="2"),
        node(name="roomy", cpu="2"),
        pod(name="small", node_name="n", cpu="500m"),
        pod(name="big", node_name="n", cpu="1500m"),
        pod(name="wants-1", cpu="1"),
        pod(name="wants-3", cpu="3"),
    )
    n = ssn.nodes["n"]
    small, big = task(ssn, "small"), task(ssn, "big")
    assert not victims.validate_victims(task(ssn, "wants-1"), n, [])
    assert not victims.validate_victims(task(ssn, "wants-1"), n, [small])
    assert victims.validate_victims(task(ssn, "wants-1"), n, [big])
    assert not victims.validate_victims(task(ssn, "wants-3"), n, [small, big])
    assert victims.validate_victims(task(ssn, "wants-1"), ssn.nodes["roomy"], [])
    assert not victims.validate_victims(task(ssn, "wants-3"), ssn.nodes["roomy"], [])


def test_evict_until_evicts_through_clones_and_stops_when_done() -> None:
    """The node's own copy keeps its accounting; discard restores the node exactly."""
    ssn = session(
        PRIORITY,
        node(name="n", cpu="3"),
        pod(name="a", node_name="n"),
        pod(name="b", node_name="n"),
        pod(name="c", node_name="n"),
        pod(name="wants-2", cpu="2"),
    )
    n = ssn.nodes["n"]
    preemptor = task(ssn, "wants-2")
    stmt = Statement(ssn)
    order = [n.tasks[task(ssn, name).uid] for name in ("c", "b", "a")]
    freed = victims.evict_until(
        stmt,
        order,
        lambda: victims.fits_future_idle(preemptor, n),
        budgets=DisruptionBudgets(),
        reason="preempt",
    )
    assert freed.milli_cpu == 2000
    assert [t.name for t, _ in ssn.evictions] == []
    assert (n.idle.milli_cpu, n.releasing.milli_cpu, n.releasing_pods) == (0, 2000, 2)
    assert task(ssn, "c").status is TaskStatus.RELEASING and task(ssn, "a").status is TaskStatus.RUNNING
    assert _names(order) == ["a"]
    stmt.discard()
    assert (n.idle.milli_cpu, n.releasing.milli_cpu, n.releasing_pods, n.used_pods) == (0, 0, 0, 3)
    assert all(t.status is TaskStatus.RUNNING for t in n.tasks.values())
