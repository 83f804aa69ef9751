"""Flat capacity (docs/semantics.md, "Flat capacity"): realCapability, deserved bounds, share, usage,
allocatable, enqueue."""

from __future__ import annotations

import pytest

from py_volcano.api import JobID, Vote
from py_volcano.framework import Statement, close_session
from tests.builders import node, pod, pod_group, queue
from tests.unit.plugins.capacity.sessions import attr_of, dims, open_capacity, plugin_of, task_of

CLUSTER = (node(name="n1", cpu="6", memory="24Gi"), node(name="n2", cpu="4", memory="16Gi"))
QUEUES = (
    queue(name="capped", capability={"cpu": "5"}, deserved={"cpu": "6", "memory": "4Gi"},
          guarantee={"resource": {"cpu": "2", "memory": "8Gi"}}),
    queue(name="guarded", deserved={"cpu": "3"}, guarantee={"resource": {"cpu": "3", "memory": "12Gi"}}),
    queue(name="open"),
)


def test_real_capability_is_total_less_all_guarantees_plus_own_capped_by_capability() -> None:
    """Total 10 CPU/40Gi, guarantees 5/20Gi: capped min(5+2, cap 5)=5/28Gi, guarded 8/32Gi, open 5/20Gi."""
    ssn = open_capacity(*CLUSTER, *QUEUES)
    assert dims(attr_of(ssn, "capped").real_capability) == (5, 28, 0)
    assert dims(attr_of(ssn, "guarded").real_capability) == (8, 32, 0)
    assert dims(attr_of(ssn, "open").real_capability) == (5, 20, 0)


def test_deserved_is_lowered_to_real_capability_then_raised_to_guarantee() -> None:
    """capped: spec 6/4Gi -> min(real 5/28Gi) = 5/4Gi -> max(guarantee 2/8Gi) = 5/8Gi."""
    ssn = open_capacity(*CLUSTER, *QUEUES)
    assert dims(attr_of(ssn, "capped").deserved) == (5, 8, 0)
    assert dims(attr_of(ssn, "guarded").deserved) == (3, 12, 0)
    assert dims(attr_of(ssn, "open").deserved) == (0, 0, 0)


def test_share_is_the_dominant_allocated_over_deserved_and_one_for_best_effort() -> None:
    """capped holds 2 CPU/6Gi of 5/8Gi: share max(0.4, 0.75) = 0.75; the best-effort queue has 1."""
    ssn = open_capacity(
        *CLUSTER, *QUEUES,
        pod_group(name="run", queue="capped", phase="Running"),
        pod(name="run-0", group="run", node_name="n1", cpu="2", memory="6Gi"),
    )
    assert attr_of(ssn, "capped").share == pytest.approx(0.75)
    assert attr_of(ssn, "open").share == 1.0
    assert attr_of(ssn, "guarded").share == 0.0


def test_usage_counts_allocated_request_inqueue_and_elastic() -> None:
    """Running job: min 3 CPU, holds 4 CPU/2Gi (elastic 1/2Gi, inqueue 0);
    Inqueue job: min 2/2Gi, holds 1/1Gi (inqueue 1/1Gi, elastic 0).
    """
    ssn = open_capacity(
        *CLUSTER, *QUEUES,
        pod_group(name="big", queue="open", phase="Running", min_member=2, min_resources={"cpu": "3"}),
        pod(name="big-0", group="big", node_name="n1", cpu="2", memory="1Gi"),
        pod(name="big-1", group="big", node_name="n1", cpu="2", memory="1Gi"),
        pod(name="big-2", group="big", cpu="2", memory="1Gi"),
        pod_group(name="small", queue="open", phase="Inqueue", min_member=2,
                  min_resources={"cpu": "2", "memory": "2Gi"}),
        pod(name="small-0", group="small", node_name="n2", cpu="1", memory="1Gi"),
        pod(name="small-1", group="small", cpu="1", memory="1Gi"),
    )
    attr = attr_of(ssn, "open")
    assert dims(attr.allocated) == (5, 3, 0)
    assert dims(attr.request) == (8, 5, 0)
    assert dims(attr.inqueue) == (1, 1, 0)
    assert dims(attr.elastic) == (1, 2, 0)


def test_allocatable_checks_real_capability_on_requested_dimensions_only() -> None:
    """capped (real 5 CPU) holds 4 CPU: a 1-CPU pod fits, a 2-CPU one does not; a memory-only pod fits."""
    ssn = open_capacity(
        *CLUSTER, *QUEUES,
        pod_group(name="run", queue="capped", phase="Running"),
        pod(name="run-0", group="run", node_name="n1", cpu="4", memory="1Gi"),
        pod_group(name="more", queue="capped", phase="Inqueue"),
        pod(name="one", group="more", cpu="1", memory="1Gi"),
        pod(name="two", group="more", cpu="2", memory="1Gi"),
        pod(name="mem", group="more", cpu="", memory="20Gi"),
    )
    plugin, queue_info = plugin_of(ssn), ssn.queues["capped"]  # type: ignore[index]
    assert plugin.allocatable(queue_info, task_of(ssn, "one"))
    assert not plugin.allocatable(queue_info, task_of(ssn, "two"))
    assert plugin.allocatable(queue_info, task_of(ssn, "mem"))


def test_allocation_events_move_allocated_and_share_and_discard_restores_them() -> None:
    """Allocating a 1-CPU/1Gi pod in guarded (deserved 3/12Gi) takes its share to 1/3; discard gives 0."""
    ssn = open_capacity(
        *CLUSTER, *QUEUES,
        pod_group(name="job", queue="guarded", phase="Inqueue"),
        pod(name="job-0", group="job", cpu="1", memory="1Gi"),
    )
    attr = attr_of(ssn, "guarded")
    stmt = Statement(ssn)
    stmt.allocate(task_of(ssn, "job-0"), "n1")
    assert dims(attr.allocated) == (1, 1, 0)
    assert attr.share == pytest.approx(1 / 3)
    stmt.discard()
    assert dims(attr.allocated) == (0, 0, 0)
    assert attr.share == 0.0


@pytest.mark.parametrize(
    ("minimum", "vote", "inqueue_after"),
    [
        pytest.param("2", Vote.REJECT, 1, id="2 + allocated 3 + inqueue 1 - elastic 0 > real 5"),
        pytest.param("1", Vote.PERMIT, 2, id="1 + 3 + 1 - 0 = real 5"),
    ],
)
def test_job_enqueueable_compares_min_plus_allocated_plus_inqueue_less_elastic_to_real(
    minimum: str, vote: Vote, inqueue_after: float
) -> None:
    """open: real 5 CPU; a running job holds 3 CPU (min 3); an inqueue job reserves 1 CPU."""
    ssn = open_capacity(
        *CLUSTER, *QUEUES,
        pod_group(name="run", queue="open", phase="Running", min_resources={"cpu": "3"}),
        pod(name="run-0", group="run", node_name="n1", cpu="3"),
        pod_group(name="waiting", queue="open", phase="Inqueue", min_resources={"cpu": "1"}),
        pod(name="waiting-0", group="waiting", cpu="1"),
        pod_group(name="new", queue="open", min_resources={"cpu": minimum}),
        pod(name="new-0", group="new", cpu=minimum),
    )
    plugin, job = plugin_of(ssn), ssn.jobs[JobID("default/new")]
    assert plugin.job_enqueueable(job) is vote
    if vote is Vote.PERMIT:
        plugin.job_enqueued(job)
    else:
        assert job.job_fit_error == "queue open resource quota insufficient: insufficient cpu"
    assert dims(attr_of(ssn, "open").inqueue)[0] == inqueue_after  # type: ignore[index]


def test_job_without_min_resources_and_closed_queue() -> None:
    """No minResources: permitted; a closed queue: rejected and not allocatable."""
    closed = queue(name="shut")
    closed["status"]["state"] = "Closed"
    ssn = open_capacity(
        *CLUSTER, *QUEUES, closed,
        pod_group(name="free", queue="open"),
        pod(name="free-0", group="free"),
        pod_group(name="late", queue="shut"),
        pod(name="late-0", group="late"),
    )
    plugin = plugin_of(ssn)
    assert plugin.job_enqueueable(ssn.jobs[JobID("default/free")]) is Vote.PERMIT
    assert plugin.job_enqueueable(ssn.jobs[JobID("default/late")]) is Vote.REJECT
    assert not plugin.allocatable(ssn.queues["shut"], task_of(ssn, "late-0"))  # type: ignore[index]


@pytest.mark.parametrize(
    ("cpu", "overused"),
    [
        pytest.param("2", False, id="at deserved: share 1, not overused"),
        pytest.param("3", True, id="above deserved: share 1.5"),
    ],
)
def test_overused_figure_is_share_above_one(cpu: str, overused: bool) -> None:
    """The reported overused figure is share > 1; a best-effort queue holding resources is not overused."""
    ssn = open_capacity(
        node(name="n1", cpu="8"),
        queue(name="team", deserved={"cpu": "2"}),
        queue(name="besteffort"),
        pod_group(name="run", queue="team", phase="Running"),
        pod(name="run-0", group="run", node_name="n1", cpu=cpu, memory=""),
        pod_group(name="be", queue="besteffort", phase="Running"),
        pod(name="be-0", group="be", node_name="n1", cpu="4"),
    )
    figures = close_session(ssn).queues
    assert (figures["team"].overused, figures["besteffort"].overused) == (overused, False)
    assert figures["besteffort"].share == 1.0
