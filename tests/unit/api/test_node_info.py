"""NodeInfo bookkeeping (docs/semantics.md, "Node accounting"): Idle + Used = Allocatable, FutureIdle, and
the arrays mirror."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from py_volcano.api import NodeArrays, NodeInfo, TaskStatus
from tests.builders import cluster, node, pod


def _state(info: NodeInfo) -> tuple[float, ...]:
    return (
        info.idle.milli_cpu,
        info.used.milli_cpu,
        info.releasing.milli_cpu,
        info.pipelined.milli_cpu,
        info.used_pods,
        info.releasing_pods,
        info.pipelined_pods,
    )


def test_running_releasing_and_pipelined_tasks_are_accounted_as_documented() -> None:
    """Running uses idle; Releasing uses idle and counts as releasing; Pipelined only reserves."""
    snapshot = cluster(node(name="n", cpu="4"), pod(name="a", node_name="n", cpu="1"))
    info = snapshot.nodes["n"]
    assert _state(info) == (3000, 1000, 0, 0, 1, 0, 0)
    task = next(iter(info.tasks.values())).clone()
    task.status = TaskStatus.RELEASING
    info.update_task(task)
    assert _state(info) == (3000, 1000, 1000, 0, 1, 1, 0)
    assert info.future_idle().milli_cpu == 4000
    waiting = pod(name="b", cpu="2")
    job_task = next(t for j in cluster(waiting).jobs.values() for t in j.tasks.values())
    job_task.status = TaskStatus.PIPELINED
    info.add_task(job_task)
    assert _state(info) == (3000, 1000, 1000, 2000, 1, 1, 1)
    assert info.future_idle().milli_cpu == 2000
    info.remove_task(job_task)
    info.remove_task(task)
    assert _state(info) == (4000, 0, 0, 0, 0, 0, 0)


def test_adding_a_task_twice_fails_and_leaves_the_node_unchanged() -> None:
    """Failure guarantee of add_task."""
    snapshot = cluster(node(name="n"), pod(name="a", node_name="n"))
    info = snapshot.nodes["n"]
    before = _state(info)
    task = next(iter(info.tasks.values()))
    with pytest.raises(ValueError):
        info.add_task(task)
    assert _state(info) == before


def test_arrays_follow_every_change() -> None:
    """NodeArrays rows equal the node objects after adds and removes."""
    snapshot = cluster(node(name="n1", cpu="4", scalars={"nvidia.com/gpu": "2"}), node(name="n2", cpu="8"),
                       pod(name="a", node_name="n1", cpu="1"))
    nodes = list(snapshot.nodes.values())
    arrays = NodeArrays(nodes, ["nvidia.com/gpu"])
    assert arrays.dims == ("cpu", "memory", "pods", "nvidia.com/gpu")
    np.testing.assert_allclose(arrays.idle[:, 0], [3000, 8000])
    np.testing.assert_allclose(arrays.idle[:, 2], [109, 110])
    np.testing.assert_allclose(arrays.idle[:, 3], [2000, 0])
    task = next(iter(nodes[0].tasks.values()))
    nodes[0].remove_task(task)
    np.testing.assert_allclose(arrays.idle[0], [4000, 8 * 2**30, 110, 2000])


def test_fit_uses_pod_slots_so_a_node_without_pods_fits_nothing() -> None:
    """docs/semantics.md, "Node fit": every pod uses one pods slot."""
    snapshot = cluster(node(name="full", pods="0"), node(name="ok"))
    arrays = NodeArrays(list(snapshot.nodes.values()), [])
    request = arrays.request(next(iter(cluster(pod(name="p", cpu="100m")).jobs.values())).tasks.popitem()[1].resreq)
    assert arrays.fits(request, arrays.idle).tolist() == [False, True]


def test_cached_fit_masks_follow_random_changes() -> None:
    """fits_idle / fits_future_idle kept per shape equal a fresh computation after any sequence of changes,
    asked after 1 to 20 changes (rows brought up to date one by one, or together past a few)."""
    import random

    from py_volcano.api import TaskStatus

    rng = random.Random(3)
    objects = [node(name=f"n{i}", cpu=str(rng.choice((2, 4, 8))), memory="16Gi") for i in range(40)]
    snapshot = cluster(*objects, *[pod(name=f"p{i}", cpu=rng.choice(("500m", "1", "2"))) for i in range(120)])
    nodes = list(snapshot.nodes.values())
    arrays = NodeArrays(nodes, [])
    tasks = [t for job in snapshot.jobs.values() for t in job.tasks.values()]
    shapes = [tasks[0].resreq, tasks[1].resreq, tasks[2].resreq]
    placed: list[tuple[object, object]] = []
    next_check = 1
    for step in range(600):
        if placed and rng.random() < 0.3:
            where, task = placed.pop(rng.randrange(len(placed)))
            where.remove_task(task)  # type: ignore[attr-defined]
        else:
            task = tasks[step % len(tasks)].clone()
            task.uid = f"{task.uid}-{step}"  # type: ignore[assignment]
            task.status = rng.choice((TaskStatus.RUNNING, TaskStatus.RELEASING, TaskStatus.PIPELINED))
            target = rng.choice(nodes)
            target.add_task(task)
            placed.append((target, task))
        if step < next_check:
            continue
        next_check = step + rng.randint(1, 20)
        for resreq in shapes:
            request = arrays.request(resreq)
            assert arrays.fits_idle(resreq).tolist() == arrays.fits(request, arrays.idle).tolist()
            assert arrays.fits_future_idle(resreq).tolist() == arrays.fits(request, arrays.future_idle()).tolist()


def test_the_future_fit_is_the_idle_fit_while_no_node_releases_or_holds_pipelined_tasks() -> None:
    """Idle + Releasing - Pipelined is Idle while both are zero everywhere: the idle mask is handed out for
    both; a releasing or pipelined task anywhere brings back the future mask, and removing it the idle one."""
    snapshot = cluster(node(name="n0", cpu="2"), node(name="n1", cpu="2"), pod(name="p", cpu="2"))
    nodes = list(snapshot.nodes.values())
    arrays = NodeArrays(nodes, [])
    (task,) = [t for job in snapshot.jobs.values() for t in job.tasks.values()]
    resreq = task.resreq
    assert arrays.fits_future_idle(resreq) is arrays.fits_idle(resreq)
    cases = ((TaskStatus.RELEASING, [False, True], [True, True]), (TaskStatus.PIPELINED, [True, True], [False, True]))
    for status, idle, future in cases:
        placed = task.clone()
        placed.status = status
        nodes[0].add_task(placed)
        assert arrays.fits_idle(resreq).tolist() == idle
        assert arrays.fits_future_idle(resreq).tolist() == future
        nodes[0].remove_task(placed)
        assert arrays.fits_future_idle(resreq) is arrays.fits_idle(resreq)
        assert arrays.fits_idle(resreq).tolist() == [True, True]


def test_a_node_counts_the_tasks_that_carry_affinity_terms() -> None:
    """`affine` lets a plugin skip the nodes whose pods carry no affinity when it looks for terms."""
    terms: dict[str, Any] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}}
    snapshot = cluster(
        node(name="n", cpu="8"),
        pod(name="plain", node_name="n"),
        pod(name="picky", node_name="n", spec={"affinity": terms}),
    )
    info = snapshot.nodes["n"]
    assert info.affine == 1
    picky = next(task for task in info.tasks.values() if task.name == "picky")
    info.update_task(picky)
    assert info.affine == 1
    info.remove_task(picky)
    assert info.affine == 0
    assert info.clone().affine == 0
