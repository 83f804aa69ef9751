"""preemptive (any dimension) and reclaimable (the three checks): docs/semantics.md, "Capacity preemptive" and
"Capacity reclaimable"."""

from __future__ import annotations

from typing import Any

import pytest

from py_volcano.api import QueueID, TaskInfo, Vote
from py_volcano.framework import Session
from tests.builders import node, pod, pod_group, queue
from tests.unit.plugins.capacity.sessions import gpu_pod, open_capacity, open_hierarchy, plugin_of, task_of

NODE = node(name="n1", cpu="32", memory="128Gi", scalars={"nvidia.com/gpu": "8"})


def job(name: str, queue_name: str, *pods: dict[str, Any], phase: str = "Running") -> list[dict[str, Any]]:
    """A PodGroup with minMember 1 and its pods."""
    return [pod_group(name=name, queue=queue_name, phase=phase), *pods]


def preemptive_session(**hungry: Any) -> Session:
    """mixed deserves 4 CPU, 8Gi, 2 GPUs and runs 6 CPU (no memory, no GPU); pending pods ask for more."""
    return open_capacity(
        NODE,
        queue(name="mixed", deserved={"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "2"}, **hungry),
        queue(name="besteffort"),
        *job("run", "mixed", pod(name="run-0", group="run", node_name="n1", cpu="6", memory="")),
        pod_group(name="ask", queue="mixed", phase="Inqueue"),
        gpu_pod(name="cpu-gpu", group="ask", cpu="1", memory="", gpu=1),
        pod(name="cpu-only", group="ask", cpu="1", memory=""),
        gpu_pod(name="two-gpus", group="ask", cpu="", memory="", gpu=2),
        *job("be", "besteffort", gpu_pod(name="be-0", group="be", cpu="", memory="", gpu=1), phase="Inqueue"),
    )


@pytest.mark.parametrize(
    ("spec", "task", "expected"),
    [
        pytest.param({}, "cpu-gpu", True, id="CPU 7 > 4 but GPU 1 <= 2: one dimension is enough"),
        pytest.param({}, "cpu-only", False, id="CPU 7 > 4 and nothing else asked"),
        pytest.param({}, "two-gpus", True, id="GPU 2 <= 2"),
        pytest.param({"capability": {"nvidia.com/gpu": "1"}}, "two-gpus", False, id="GPU 2 > real 1"),
    ],
)
def test_preemptive_any_dimension_within_deserved(spec: dict[str, Any], task: str, expected: bool) -> None:
    """futureUsed = allocated + request must fit realCapability and be <= deserved in some dimension."""
    ssn = preemptive_session(**spec)
    assert plugin_of(ssn).preemptive(ssn.queues[QueueID("mixed")], task_of(ssn, task)) is expected


def test_best_effort_queue_is_never_preemptive() -> None:
    """Nothing deserved: no dimension can stay within it."""
    ssn = preemptive_session()
    assert not plugin_of(ssn).preemptive(ssn.queues[QueueID("besteffort")], task_of(ssn, "be-0"))


def reclaim_session(reclaimer_gpu: int = 0) -> Session:
    """hungry reclaims from four queues that hold resources on n1."""
    reclaimer = (
        gpu_pod(name="want-0", group="want", cpu="1", memory="1Gi", gpu=reclaimer_gpu)
        if reclaimer_gpu else pod(name="want-0", group="want", cpu="1", memory="1Gi")
    )
    return open_capacity(
        NODE,
        queue(name="hungry", deserved={"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "4"}),
        queue(name="over", deserved={"cpu": "2", "memory": "64Gi"}),
        queue(name="guarded", deserved={"cpu": "1", "memory": "4Gi"},
              guarantee={"resource": {"memory": "4Gi"}}),
        queue(name="borrower", deserved={"cpu": "2", "memory": "8Gi"}),
        queue(name="gpus", deserved={"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}),
        *job("want", "hungry", reclaimer, phase="Inqueue"),
        pod_group(name="over-job", queue="over", phase="Running", min_member=3),
        *[pod(name=f"over-job-{i}", group="over-job", node_name="n1", cpu="1", memory="1Gi")
          for i in range(3)],
        pod_group(name="guarded-job", queue="guarded", phase="Running", min_member=3),
        *[pod(name=f"guarded-job-{i}", group="guarded-job", node_name="n1", cpu="1", memory="2Gi")
          for i in range(3)],
        *job("lend", "borrower",
             gpu_pod(name="lend-gpu", group="lend", node_name="n1", cpu="", memory="", gpu=1),
             pod(name="lend-cpu", group="lend", node_name="n1", cpu="1", memory="1Gi")),
        *job("g", "gpus", *[gpu_pod(name=f"g-{i}", group="g", node_name="n1", cpu="", memory="", gpu=1)
                            for i in range(3)]),
    )


def victims(ssn: Session, candidates: list[str]) -> tuple[list[str], Vote]:
    chosen, vote = plugin_of(ssn).reclaimable(task_of(ssn, "want-0"), [task_of(ssn, n) for n in candidates])
    return [task.name for task in chosen], vote


def test_reclaim_check_3b_takes_victims_only_while_allocated_exceeds_deserved() -> None:
    """over holds 3 CPU of 2 deserved: one victim (the highest index first), then 2 > 2 fails."""
    ssn = reclaim_session()
    assert victims(ssn, ["over-job-0", "over-job-1", "over-job-2"]) == (["over-job-2"], Vote.PERMIT)


def test_reclaim_check_2_protects_the_guarantee() -> None:
    """guarded holds 3 CPU/6Gi, deserves 1 CPU/4Gi, is guaranteed 4Gi: after one victim (4Gi left) none."""
    ssn = reclaim_session()
    assert victims(ssn, [f"guarded-job-{i}" for i in range(3)]) == (["guarded-job-2"], Vote.PERMIT)


def test_reclaim_check_1_skips_victims_sharing_no_dimension_with_the_reclaimer() -> None:
    """A CPU/memory reclaimer cannot use a GPU-only pod, however borrowed it is."""
    ssn = reclaim_session()
    assert victims(ssn, ["lend-gpu", "g-0", "g-1"]) == ([], Vote.PERMIT)


def test_reclaim_check_3a_takes_a_pod_using_nothing_its_queue_deserves() -> None:
    """borrower deserves no GPU: its GPU pod is a victim at once although borrower is under its CPU share."""
    ssn = reclaim_session(reclaimer_gpu=1)
    assert victims(ssn, ["lend-gpu", "lend-cpu"]) == (["lend-gpu"], Vote.PERMIT)


def test_reclaim_check_3b_on_a_scalar_the_queue_deserves() -> None:
    """gpus holds 3 GPUs of 1 deserved: two victims, the third would leave it at its deserved."""
    ssn = reclaim_session(reclaimer_gpu=1)
    assert victims(ssn, ["g-0", "g-1", "g-2"]) == (["g-2", "g-1"], Vote.PERMIT)


def test_reclaim_uses_a_running_total_across_victims_of_several_queues() -> None:
    """Each queue's allocated drops by every victim taken from it, and only from it; victims come in
    reverse queue order (guarded, share 3, before over, share 1.5), inside a job highest index first.
    """
    ssn = reclaim_session()
    candidates = ["over-job-0", "over-job-1", "guarded-job-0", "guarded-job-1", "over-job-2"]
    assert victims(ssn, candidates) == (["guarded-job-1", "over-job-2"], Vote.PERMIT)


def test_reclaimer_in_a_queue_that_cannot_be_used_rejects() -> None:
    """A reclaimer whose queue is not a leaf gets no victims."""
    ssn = open_hierarchy(
        NODE,
        queue(name="team", deserved={"cpu": "4"}),
        queue(name="child", parent="team", deserved={"cpu": "4"}),
        *job("want", "team", pod(name="want-0", group="want"), phase="Inqueue"),
        *job("run", "child", pod(name="run-0", group="run", node_name="n1", cpu="8")),
    )
    reclaimer: TaskInfo = task_of(ssn, "want-0")
    assert plugin_of(ssn).reclaimable(reclaimer, [task_of(ssn, "run-0")]) == ([], Vote.REJECT)
    assert not plugin_of(ssn).preemptive(ssn.queues[QueueID("team")], reclaimer)
