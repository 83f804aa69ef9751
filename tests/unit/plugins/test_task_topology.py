"""task-topology: the job annotations, buckets, task order and node score of Volcano's task-topology plugin."""

from __future__ import annotations

from typing import Any

import pytest

from py_volcano.framework import Session, Statement
from py_volcano.plugins.task_topology import TaskTopologyArgs
from py_volcano.plugins.task_topology.plugin import TaskTopologyPlugin
from tests.builders import node, pod, pod_group
from tests.unit.actions.sessions import task
from tests.unit.arguments import plugin_args
from tests.unit.plugins.sessions import annotated, job, open_at

CONF = 'actions: "allocate"\ntiers:\n- plugins:\n  - name: task-topology\n'
AFFINITY = "volcano.sh/task-topology-affinity"
ANTI = "volcano.sh/task-topology-anti-affinity"
ORDER = "volcano.sh/task-topology-task-order"


def _role(name: str, role: str, **extra: Any) -> dict[str, Any]:
    return pod(name=name, group="tf", annotations={"volcano.sh/task-spec": role}, **extra)


def _tf(annotations: dict[str, str], *pods: dict[str, Any], nodes: int = 2) -> Session:
    group = annotated(pod_group(name="tf", min_member=1), annotations)
    return open_at(CONF, *(node(name=f"n{i}") for i in range(nodes)), group, *pods)


def _plugin(ssn: Session) -> TaskTopologyPlugin:
    plugin = ssn.plugins["task-topology"]
    assert isinstance(plugin, TaskTopologyPlugin)
    return plugin


def _buckets(ssn: Session) -> list[list[str]]:
    jobs = _plugin(ssn).jobs[job(ssn, "tf").uid]
    return [sorted(t.name for t in bucket.tasks.values()) for bucket in jobs.buckets]


def test_weight_argument() -> None:
    """`task-topology.weight`, default 1."""
    assert plugin_args("task-topology", {}) == TaskTopologyArgs(weight=1)
    assert plugin_args("task-topology", {"task-topology.weight": 10}) == TaskTopologyArgs(weight=10)


def test_affinity_puts_roles_together_anti_affinity_apart() -> None:
    """ps and worker like each other, ps dislikes ps: one bucket per ps, each worker joins the bucket with a
    ps and the fewest requests."""
    pods = [_role("ps-0", "ps"), _role("ps-1", "ps"), *(_role(f"worker-{i}", "worker") for i in range(4))]
    ssn = _tf({AFFINITY: "ps,worker", ANTI: "ps"}, *pods)
    assert _buckets(ssn) == [["ps-0", "worker-0", "worker-2"], ["ps-1", "worker-1", "worker-3"]]


def test_roles_without_topology_stay_out_of_buckets() -> None:
    """A role no annotation names, or a pod without a role, is out of every bucket and has no order."""
    ssn = _tf({AFFINITY: "ps"}, _role("ps-0", "ps"), _role("chief-0", "chief"), pod(name="x", group="tf"))
    assert _buckets(ssn) == [["ps-0"]]
    plugin = _plugin(ssn)
    assert plugin.task_order(task(ssn, "ps-0"), task(ssn, "chief-0")) == -1
    assert plugin.task_order(task(ssn, "chief-0"), task(ssn, "x")) == 0


@pytest.mark.parametrize(
    ("annotations", "problem"),
    [
        pytest.param({AFFINITY: "ps,evaluator"}, "task 'evaluator' does not exist in the job", id="unknown-role"),
        pytest.param({ANTI: "ps,ps"}, "task 'ps' is listed twice in one group", id="duplicate"),
        pytest.param({ORDER: "ps,chief"}, "task 'chief' does not exist in the job", id="order-unknown-role"),
    ],
)
def test_invalid_annotations_leave_the_job_without_topology(annotations: dict[str, str], problem: str) -> None:
    """Volcano skips such a job; here the cycle also says why."""
    ssn = _tf(annotations, _role("ps-0", "ps"))
    assert job(ssn, "tf").uid not in _plugin(ssn).jobs
    key = next(iter(annotations))
    assert ssn.warnings == [f"PodGroup default/tf: field metadata.annotations[{key}]: {problem}; no task topology"]


def test_task_order_bigger_bucket_then_role_order() -> None:
    """Inside a bucket the task order annotation (then the stronger topology) goes first; the bigger bucket
    first; tasks out of any bucket last."""
    pods = [_role("ps-0", "ps"), _role("worker-0", "worker"), _role("worker-1", "worker"), _role("chief-0", "chief")]
    ssn = _tf({AFFINITY: "ps,worker", ORDER: "worker,ps"}, *pods)
    plugin = _plugin(ssn)
    assert _buckets(ssn) == [["ps-0", "worker-0", "worker-1"]]
    assert plugin.task_order(task(ssn, "worker-0"), task(ssn, "ps-0")) == -1
    assert plugin.task_order(task(ssn, "ps-0"), task(ssn, "worker-0")) == 1
    assert plugin.task_order(task(ssn, "worker-0"), task(ssn, "worker-1")) == 0
    assert plugin.task_order(task(ssn, "chief-0"), task(ssn, "ps-0")) == 1


def test_score_follows_the_bucket_and_anti_affinity() -> None:
    """After ps-0 is placed on n0: its bucket scores n0 (one placed, plus the bucket's pending tasks) above n1;
    ps-1 (anti-affine to ps) loses a point on n0. Scores scale to 100 by the largest bucket."""
    pods = [_role("ps-0", "ps"), _role("ps-1", "ps"), _role("worker-0", "worker"), _role("worker-1", "worker")]
    ssn = _tf({AFFINITY: "ps,worker", ANTI: "ps"}, *pods)
    plugin = _plugin(ssn)
    stmt = Statement(ssn)
    stmt.allocate(task(ssn, "ps-0"), "n0")
    scores = {name: [plugin.score(task(ssn, name), n) for n in ssn.node_list] for name in ("worker-0", "ps-1")}
    # bucket sizes are 2 (ps-0, worker-0) and 2 (ps-1, worker-1): max size 2
    assert scores == {"worker-0": [100.0, 50.0], "ps-1": [50.0, 100.0]}
    stmt.discard()
    assert [plugin.score(task(ssn, "worker-0"), n) for n in ssn.node_list] == [100.0, 100.0]
