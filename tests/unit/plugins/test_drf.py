"""drf (flat): dominant shares, job order, the preemptable rule (docs/semantics.md, "DRF"), event handlers."""

from __future__ import annotations

from typing import Any

import pytest

from py_volcano.actions import ACTIONS
from py_volcano.api import JobID, Resource, TaskID, TaskInfo, Vote
from py_volcano.framework import Registry, Session, Statement, open_session, parse_conf
from py_volcano.plugins import PLUGINS, drf
from tests.builders import cluster, node, pod, pod_group

GI = 1024**3
REGISTRY = Registry(plugins={"drf": PLUGINS["drf"]}, actions=ACTIONS)


def session(*objects: dict[str, Any], plugin_line: str = "- name: drf") -> Session:
    conf = parse_conf(f'actions: "allocate"\ntiers:\n- plugins:\n  {plugin_line}', REGISTRY)
    return open_session(cluster(*objects), conf, REGISTRY)


def shares(ssn: Session) -> drf.JobShares:
    plugin = ssn.plugins["drf"]
    assert isinstance(plugin, drf.DrfPlugin) and plugin.shares is not None
    return plugin.shares


def task_of(ssn: Session, job: str, name: str) -> TaskInfo:
    return next(t for t in ssn.jobs[JobID(f"default/{job}")].tasks.values() if t.name == name)


def cluster_of_jobs() -> Session:
    """8 CPU / 16Gi; big runs 4 x 1 CPU, mid 2 x 1 CPU, small 1 x 1 CPU and waits for 1 more."""
    objects: list[dict[str, Any]] = [node(name="n1", cpu="8", memory="16Gi")]
    for job, running in (("big", 4), ("mid", 2), ("small", 1)):
        objects.append(pod_group(name=job, phase="Running"))
        objects += [pod(name=f"{job}-{i}", group=job, node_name="n1", cpu="1", memory="")
                    for i in range(running)]
    objects.append(pod(name="small-new", group="small", cpu="1", memory=""))
    return session(*objects)


@pytest.mark.parametrize(
    ("allocated", "expected"),
    [
        pytest.param(Resource(2000, 8 * GI), ("memory", 0.5), id="memory-dominates"),
        pytest.param(Resource(6000, 8 * GI), ("cpu", 0.75), id="cpu-dominates"),
        pytest.param(Resource(0, 0, {"nvidia.com/gpu": 1000}), ("nvidia.com/gpu", 0.5),
                     id="scalar-dominates"),
        pytest.param(Resource(), ("", 0.0), id="nothing-allocated"),
    ],
)
def test_dominant_share_is_the_largest_allocated_over_total(
    allocated: Resource, expected: tuple[str, float]
) -> None:
    """share = max over the cluster's dimensions of allocated / total."""
    ssn = session(node(name="n1", cpu="8", memory="16Gi", scalars={"nvidia.com/gpu": "2"}))
    assert shares(ssn).calculate_share(allocated) == expected


def test_shares_at_open_count_only_placed_tasks_and_order_jobs() -> None:
    """big 4/8, mid 2/8, small 1/8 (its pending task does not count); the lower share goes first."""
    ssn = cluster_of_jobs()
    state = shares(ssn)
    assert {str(job): attr.share for job, attr in state.attrs.items()} == {
        "default/big": 0.5, "default/mid": 0.25, "default/small": 0.125}
    big, mid, small = (ssn.jobs[JobID(f"default/{j}")] for j in ("big", "mid", "small"))
    assert state.job_order(small, mid) == -1
    assert state.job_order(big, mid) == 1
    assert state.job_order(mid, mid) == 0
    assert ssn.job_order_fn(small, big) and not ssn.job_order_fn(big, small)


def test_preemptable_compares_shares_after_the_move() -> None:
    """small with its new task: 2/8. big loses victims in turn: 3/8 and 2/8 qualify (>=), 1/8 does not;
    mid would drop to 1/8, below the preemptor: not a victim."""
    ssn = cluster_of_jobs()
    preemptees = [task_of(ssn, "big", f"big-{i}") for i in range(4)] + [task_of(ssn, "mid", "mid-0")]
    victims, vote = shares(ssn).preemptable(task_of(ssn, "small", "small-new"), preemptees)
    assert vote is Vote.PERMIT
    assert [v.name for v in victims] == ["big-0", "big-1"]
    assert shares(ssn).attrs[JobID("default/big")].allocated.milli_cpu == 4000  # nothing changed live


def test_preemptor_without_a_job_offers_nothing() -> None:
    """A preemptor whose job is unknown gets no victims (and still votes)."""
    ssn = cluster_of_jobs()
    stray = TaskInfo(uid=TaskID("stray"), name="stray", namespace="default", resreq=Resource(1000))
    assert shares(ssn).preemptable(stray, [task_of(ssn, "big", "big-0")]) == ([], Vote.PERMIT)


def test_event_handlers_update_shares_and_discard_restores_them() -> None:
    """Allocating small's task raises it to 2/8; evicting a big task lowers big to 3/8; discard undoes."""
    ssn = cluster_of_jobs()
    attrs = shares(ssn).attrs
    stmt = Statement(ssn)
    stmt.allocate(task_of(ssn, "small", "small-new"), "n1")
    stmt.evict(task_of(ssn, "big", "big-0"), "preempt")
    assert (attrs[JobID("default/small")].share, attrs[JobID("default/big")].share) == (0.25, 0.375)
    assert attrs[JobID("default/small")].dominant == "cpu"
    stmt.discard()
    assert (attrs[JobID("default/small")].share, attrs[JobID("default/big")].share) == (0.125, 0.5)


@pytest.mark.parametrize(
    ("plugin_line", "hierarchical"),
    [
        pytest.param("- name: drf\n    enableHierarchy: true", True, id="hierarchy-on"),
        pytest.param("- name: drf\n    enableHierarchy: false", False, id="hierarchy-off"),
        pytest.param("- name: drf", False, id="hierarchy-unset-means-off"),
    ],
)
def test_hierarchy_only_when_written_true(plugin_line: str, hierarchical: bool) -> None:
    """Unlike other switches, enableHierarchy is off unless written true; flat DRF runs either way."""
    ssn = session(node(name="n1"), plugin_line=plugin_line)
    plugin = ssn.plugins["drf"]
    assert isinstance(plugin, drf.DrfPlugin) and (plugin.hierarchy is not None) is hierarchical
    assert shares(ssn).total.milli_cpu == 4000
    assert not ssn.warnings
