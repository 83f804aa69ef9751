"""reclaim (docs/semantics.md, "Reclaim"): overused queues and refused tasks reclaim nothing; reclaimees are
Running tasks of other, reclaimable queues; victims go in victim order until the task fits, and the job
commits or discards."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from py_volcano.actions import reclaim
from py_volcano.api import QueueInfo, TaskInfo, TaskStatus, Vote
from py_volcano.framework import Arguments, NoArgs, PluginEntry, Session
from tests.builders import node, pod, pod_group, queue
from tests.unit.actions.sessions import session, task


@dataclass(slots=True, frozen=True)
class _QuotaArgs:
    """The test plugin's arguments: comma lists of queue names."""

    overused: frozenset[str]
    refuse: frozenset[str]

    @classmethod
    def parse(cls, args: Arguments) -> _QuotaArgs:
        return cls(
            overused=frozenset(args.get_str("overused", "").split(",")),
            refuse=frozenset(args.get_str("refuse", "").split(",")),
        )


class _Quota:
    """Test plugin: queues named in `overused` are overused, those in `refuse` may not reclaim, and every
    reclaimee is a victim."""

    name = "quota"

    def __init__(self, args: _QuotaArgs) -> None:
        self.overused = args.overused
        self.refuse = args.refuse

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_overused_fn(self.name, lambda q: q.name in self.overused)
        ssn.add_preemptive_fn(self.name, self.preemptive)
        ssn.add_reclaimable_fn(self.name, lambda reclaimer, reclaimees: (list(reclaimees), Vote.PERMIT))

    def preemptive(self, q: QueueInfo, t: TaskInfo) -> bool:
        return q.name not in self.refuse

    def on_session_close(self, ssn: Session) -> None:
        """Nothing to report."""


def _conf(**arguments: str) -> str:
    args = "".join(f"\n      {key}: {value}" for key, value in arguments.items())
    return (
        "actions: reclaim\ntiers:\n- plugins:\n  - name: priority\n"
        "  - name: gang\n    enableReclaimable: false\n"
        f"  - name: quota\n    arguments:{args or ' {}'}\n"
    )


def _objects(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        queue(name="lender"),
        queue(name="borrower"),
        queue(name="keeper", reclaimable=False),
        node(name="n1", cpu="2"),
        node(name="n2", cpu="2"),
        pod(name="kept-0", queue="keeper", node_name="n1"),
        pod(name="kept-1", queue="keeper", node_name="n1"),
        pod(name="lent-0", queue="lender", node_name="n2"),
        pod(name="lent-1", queue="lender", node_name="n2"),
        pod_group(name="want", queue="borrower", min_member=2, phase="Inqueue"),
        pod(name="want-0", group="want"),
        pod(name="want-1", group="want"),
        *extra,
    ]


def _run(conf: str, *objects: dict[str, Any]) -> Session:
    ssn = session(conf, *objects, plugins={"quota": PluginEntry(_QuotaArgs.parse, _Quota)})
    reclaim.new(NoArgs()).execute(ssn)
    return ssn


def test_a_starving_job_reclaims_from_reclaimable_queues_only_and_is_pipelined() -> None:
    """keeper is not reclaimable, so both victims come from lender on n2; victim order takes the later job
    first; the job's tasks are pipelined on n2, nothing binds."""
    ssn = _run(_conf(), *_objects())
    assert [(t.name, reason) for t, reason in ssn.evictions] == [("lent-1", "reclaim"), ("lent-0", "reclaim")]
    assert [(task(ssn, n).status, task(ssn, n).node_name) for n in ("want-0", "want-1")] == [
        (TaskStatus.PIPELINED, "n2"),
        (TaskStatus.PIPELINED, "n2"),
    ]
    assert ssn.binds == []


def test_an_overused_queue_reclaims_nothing() -> None:
    """ssn.overused(queue) skips the queue."""
    ssn = _run(_conf(overused="borrower"), *_objects())
    assert ssn.evictions == []
    assert task(ssn, "want-0").status is TaskStatus.PENDING


def test_a_task_the_queue_may_not_reclaim_for_is_skipped_and_the_job_discarded() -> None:
    """ssn.preemptive refuses every task: nothing is evicted."""
    ssn = _run(_conf(refuse="borrower"), *_objects())
    assert ssn.evictions == []


def test_a_job_that_cannot_be_pipelined_gives_back_its_evictions() -> None:
    """With only one lender pod, the second task finds no room: the Statement is discarded."""
    objects = [o for o in _objects() if o["metadata"]["name"] != "lent-1"]
    objects.append(pod(name="own-0", queue="borrower", node_name="n2"))
    ssn = _run(_conf(), *objects)
    assert ssn.evictions == []
    assert [t.status for t in ssn.nodes["n2"].tasks.values()] == [TaskStatus.RUNNING, TaskStatus.RUNNING]
    assert ssn.nodes["n2"].releasing_pods == 0 and ssn.nodes["n2"].pipelined_pods == 0


def test_only_running_tasks_are_reclaimees() -> None:
    """A pod bound to n2 but not running yet is never a victim, so the job cannot be placed."""
    objects = [o for o in _objects() if o["metadata"]["name"] != "lent-1"]
    objects.append(pod(name="lent-bound", queue="lender", node_name="n2", phase="Pending"))
    ssn = _run(_conf(), *objects)
    assert ssn.evictions == []


def test_preemption_policy_never_does_not_reclaim() -> None:
    """A pending pod with preemptionPolicy Never is skipped."""
    objects = [o for o in _objects() if o["metadata"]["name"] not in ("want", "want-0", "want-1")]
    objects.append(pod(name="never", queue="borrower", spec={"preemptionPolicy": "Never"}))
    ssn = _run(_conf(), *objects)
    assert ssn.evictions == []


class _OverusedOnceReclaimed:
    """Test plugin: a queue turns overused as soon as some eviction was committed; every reclaimee is a victim."""

    name = "late"

    def __init__(self, args: NoArgs) -> None:
        self.args = args

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_overused_fn(self.name, lambda q: bool(ssn.evictions))
        ssn.add_reclaimable_fn(self.name, lambda reclaimer, reclaimees: (list(reclaimees), Vote.PERMIT))

    def on_session_close(self, ssn: Session) -> None:
        """Nothing to report."""


def test_a_queue_reclaims_for_all_its_starving_jobs_once_popped() -> None:
    """Volcano's reclaim checks overused when it pops a queue, then reclaims for every starving job of it: the
    second job reclaims although the first one's commit made the queue overused."""
    conf = "actions: reclaim\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n    enableReclaimable: false\n" \
        "  - name: late\n"
    objects = [
        queue(name="lender"),
        queue(name="borrower"),
        node(name="n1", cpu="2"),
        pod(name="lent-0", queue="lender", node_name="n1"),
        pod(name="lent-1", queue="lender", node_name="n1"),
        pod_group(name="want-a", queue="borrower", phase="Inqueue"),
        pod(name="want-a-0", group="want-a"),
        pod_group(name="want-b", queue="borrower", phase="Inqueue"),
        pod(name="want-b-0", group="want-b"),
    ]
    ssn = session(conf, *objects, plugins={"late": PluginEntry(NoArgs.parse, _OverusedOnceReclaimed)})
    reclaim.new(NoArgs()).execute(ssn)
    assert sorted(t.name for t, _ in ssn.evictions) == ["lent-0", "lent-1"]
    assert {task(ssn, n).status for n in ("want-a-0", "want-b-0")} == {TaskStatus.PIPELINED}
