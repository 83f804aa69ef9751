"""Fit errors counted over all nodes at once say exactly what asking node by node says (Volcano's loop)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from py_volcano.api import ZERO, FitErrors, TaskInfo, TaskStatus
from py_volcano.framework import Session, open_session, shortfalls
from py_volcano.registry import default_registry, load_conf
from tests.builders import cluster, node, pod

CPUS = st.sampled_from(["0", "500m", "1", "2", "4", "8"])
GPUS = st.sampled_from(["", "0", "1", "2"])


def _node_by_node(ssn: Session, task: TaskInfo, *, for_preempt: bool = False) -> FitErrors:
    """The reference: Volcano's explanation, one node at a time."""
    errors = FitErrors()
    for node_info in ssn.node_list:
        status = ssn.predicate(task, node_info)
        if status is not None and not (for_preempt and status.resolvable):
            errors.add(status.reason)
            continue
        if node_info.future_idle_pods < 1:
            errors.add(shortfalls.TOO_MANY_PODS)
            continue
        fits, short = task.init_resreq.less_equal_with_resources_name(node_info.future_idle(), ZERO)
        if not fits:
            errors.add(f"Insufficient {sorted(short, key=lambda name: (name not in ('cpu', 'memory'), name))[0]}")
    return errors


@st.composite
def clusters(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A few nodes (some tainted or cordoned, some with GPUs, few pod slots), pods running on them, and
    one pending pod that may ask for a GPU, a zone or a toleration."""
    objects: list[dict[str, Any]] = []
    for i in range(draw(st.integers(1, 6))):
        gpu = draw(GPUS)
        objects.append(
            node(
                name=f"n{i}",
                cpu=draw(CPUS),
                pods=draw(st.sampled_from(["1", "2", "110"])),
                labels={"zone": draw(st.sampled_from(["a", "b"]))},
                taints=[{"key": "dedicated", "value": "x", "effect": "NoSchedule"}] if draw(st.booleans()) else [],
                unschedulable=draw(st.booleans()),
                scalars={"nvidia.com/gpu": gpu} if gpu else None,
            )
        )
        for j in range(draw(st.integers(0, 2))):
            objects.append(pod(name=f"r{i}-{j}", cpu=draw(CPUS), memory="1Gi", node_name=f"n{i}"))
    spec: dict[str, Any] = {}
    if draw(st.booleans()):
        spec["nodeSelector"] = {"zone": "a"}
    if draw(st.booleans()):
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    gpu = draw(st.sampled_from(["", "1", "4"]))
    waiting = pod(name="w", cpu=draw(CPUS), memory=draw(st.sampled_from(["1Gi", "100Gi"])), spec=spec)
    if gpu:
        waiting["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = gpu
    objects.append(waiting)
    return objects


def _session(objects: list[dict[str, Any]]) -> tuple[Session, TaskInfo]:
    ssn = open_session(cluster(*objects), load_conf(None), default_registry())
    task = next(t for job in ssn.jobs.values() for t in job.tasks.values() if t.status is TaskStatus.PENDING)
    return ssn, task


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.booleans())
def test_counting_over_all_nodes_says_what_asking_node_by_node_says(
    objects: list[dict[str, Any]], preempt: bool
) -> None:
    """Same reasons, same counts, for any nodes, pods and request (resources, selector, taints, GPUs)."""
    ssn, task = _session(objects)
    expected = _node_by_node(ssn, task, for_preempt=preempt)
    assert shortfalls.explain(ssn, task, for_preempt=preempt).nodes == expected.nodes


def test_a_pod_no_empty_node_could_hold_is_told_so_with_counts() -> None:
    """Against what nodes allocate (their pods aside): 3 nodes too small, 1 tainted."""
    objects = [node(name=f"n{i}", cpu="4") for i in range(3)]
    objects.append(node(name="t", cpu="64", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]))
    objects.append(pod(name="busy", cpu="4", node_name="n0"))
    objects.append(pod(name="w", cpu="8"))
    ssn, task = _session(objects)
    nowhere = shortfalls.unholdable(ssn, task)
    assert nowhere is not None
    assert nowhere.summary() == "0/4 nodes are available: 3 Insufficient cpu, 1 node(s) had untolerated taint {k: v}"


def test_a_pod_an_empty_node_could_hold_is_holdable_though_no_node_is_free() -> None:
    """A node whose pods use it up could still hold the pod once they end: not "no node can hold"."""
    ssn, task = _session([node(name="n0", cpu="4"), pod(name="busy", cpu="4", node_name="n0"), pod(name="w", cpu="2")])
    assert shortfalls.unholdable(ssn, task) is None
    assert shortfalls.explain(ssn, task).summary() == "0/1 nodes are available: 1 Insufficient cpu"
