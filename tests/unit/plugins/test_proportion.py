"""proportion (docs/semantics.md, "Proportion"): deserved split, real capability, share, overused,
allocatable, reclaimable, admission with inqueue/elastic, event handlers, the preempt dry-run state and
the queue figures."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from py_volcano.actions import ACTIONS
from py_volcano.api import (
    JobID,
    JobInfo,
    PodGroupSpec,
    QueueID,
    QueueInfo,
    QueueState,
    Resource,
    TaskID,
    TaskInfo,
    TaskStatus,
    Vote,
)
from py_volcano.framework import (
    CycleState,
    Registry,
    Session,
    Statement,
    close_session,
    open_session,
    parse_conf,
)
from py_volcano.plugins import PLUGINS, proportion
from py_volcano.plugins.proportion.plugin import STATE_KEY, QueueShares
from py_volcano.plugins.proportion.queue_attr import JobSums, KeptJobSums, QueueAttr, real_capability, split_deserved
from tests.builders import cluster, node, pod, pod_group, queue

GI = 1024**3
REGISTRY = Registry(plugins={name: PLUGINS[name] for name in ("gang", "proportion")}, actions=ACTIONS)
CONF = parse_conf('actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n  - name: proportion', REGISTRY)


def cpu(cores: float, memory_gi: float = 0.0) -> Resource:
    return Resource(cores * 1000, memory_gi * GI)


def attr(
    name: str,
    *,
    weight: int,
    request: Resource,
    total: Resource,
    total_guarantee: Resource | None = None,
    capability: Resource | None = None,
    guarantee: Resource | None = None,
) -> QueueAttr:
    info = QueueInfo(name=name, weight=weight, capability=capability, guarantee=guarantee)
    result = QueueAttr(info, total=total, total_guarantee=total_guarantee or Resource())
    result.request = request
    return result


def session(*objects: dict[str, Any]) -> Session:
    return open_session(cluster(*objects), CONF, REGISTRY)


def shares(ssn: Session) -> QueueShares:
    plugin = ssn.plugins["proportion"]
    assert isinstance(plugin, proportion.plugin.ProportionPlugin) and plugin.shares is not None
    return plugin.shares


def task_of(ssn: Session, job: str, name: str) -> TaskInfo:
    found = next(t for t in ssn.jobs[JobID(f"default/{job}")].tasks.values() if t.name == name)
    return found


# Deserved ---------------------------------------------------------------------------------------


def test_worked_example_three_queues_a28_b42_c30() -> None:
    """docs/semantics.md, "Worked example: three queues": 100 CPU; A w2 cap 50 guar 10 req 80, B w3 req 60,
    C w5 guar 20 req 30 -> 28/42/30."""
    total, guarantees = cpu(100), cpu(30)
    a = attr("a", weight=2, request=cpu(80), total=total, total_guarantee=guarantees,
             capability=cpu(50), guarantee=cpu(10))
    b = attr("b", weight=3, request=cpu(60), total=total, total_guarantee=guarantees)
    c = attr("c", weight=5, request=cpu(30), total=total, total_guarantee=guarantees, guarantee=cpu(20))
    split_deserved([a, b, c], total)
    assert (a.deserved.milli_cpu, b.deserved.milli_cpu, c.deserved.milli_cpu) == (28000, 42000, 30000)
    assert (a.real_capability.milli_cpu, b.real_capability.milli_cpu, c.real_capability.milli_cpu) == (
        50000, 70000, 90000)


def test_worked_example_three_queues_through_a_session() -> None:
    """The same example built from manifests: deserved, real capability and the figures at close."""
    objects: list[dict[str, Any]] = [
        node(name="n1", cpu="100", memory="400Gi"),
        queue(name="a", weight=2, capability={"cpu": "50"}, guarantee={"resource": {"cpu": "10"}}),
        queue(name="b", weight=3),
        queue(name="c", weight=5, guarantee={"resource": {"cpu": "20"}}),
    ]
    for name, pods in (("a", 8), ("b", 6), ("c", 3)):
        objects.append(pod_group(name=f"job-{name}", queue=name))
        objects += [pod(name=f"{name}-{i}", group=f"job-{name}", cpu="10", memory="") for i in range(pods)]
    ssn = session(*objects)
    attrs = shares(ssn).attrs
    assert {q: a.deserved.milli_cpu for q, a in attrs.items()} == {"a": 28000, "b": 42000, "c": 30000}
    assert {q: a.deserved.memory for q, a in attrs.items()} == {"a": 0, "b": 0, "c": 0}
    figures = close_session(ssn).queues
    assert figures["a"].real_capability is not None and figures["a"].real_capability.milli_cpu == 50000
    assert figures["a"].real_capability.memory == 400 * GI
    assert figures["default"].deserved is not None and figures["default"].deserved.is_empty()


def test_init_containers_count_in_the_queue() -> None:
    """Volcano's Resreq includes init containers (NewTaskInfo): a running pod of 1 CPU whose init container
    asks 3 holds 3 in its queue, a pending one asks 3, and deserved (capped by request and capability 4)
    leaves no room for the second: 3 + 3 > 4."""
    init = {"initContainers": [{"name": "setup", "resources": {"requests": {"cpu": "3"}}}]}
    ssn = session(
        node(name="n1", cpu="8"),
        queue(name="q", capability={"cpu": "4"}),
        pod(name="a", queue="q", cpu="1", memory="", node_name="n1", spec=init),
        pod(name="b", queue="q", cpu="1", memory="", spec=init),
    )
    attr = shares(ssn).attrs[QueueID("q")]
    assert (attr.allocated.milli_cpu, attr.request.milli_cpu, attr.deserved.milli_cpu) == (3000, 6000, 4000)
    pending = next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == "b")
    assert not ssn.allocatable(ssn.queues[QueueID("q")], pending)


@pytest.mark.parametrize(
    ("queues", "expected"),
    [
        pytest.param([("x", 1, cpu(8), None, None), ("y", 1, cpu(8), None, None)], [4000, 4000],
                     id="equal-weights"),
        pytest.param([("x", 3, cpu(8), cpu(2), None), ("y", 1, cpu(8), None, None)], [2000, 6000],
                     id="capability-caps-and-the-rest-flows-on"),
        pytest.param([("x", 1, cpu(8), None, cpu(6)), ("y", 9, cpu(10), None, None)], [6000, 2000],
                     id="guarantee-raises-and-protects"),
        pytest.param([("x", 1, cpu(1), None, None), ("y", 1, cpu(20), None, None)], [1000, 7000],
                     id="request-caps-and-the-rest-flows-on"),
        pytest.param([("x", 1, cpu(1), None, cpu(3)), ("y", 1, cpu(20), None, None)], [3000, 5000],
                     id="guarantee-above-request"),
        pytest.param([("x", 1, Resource(), None, None), ("y", 1, cpu(3), None, None)], [0, 3000],
                     id="nothing-requested-nothing-deserved"),
    ],
)
def test_split_deserved(queues: list[tuple[str, int, Resource, Resource | None, Resource | None]],
                        expected: list[float]) -> None:
    """Weight split over an 8-CPU cluster, capped by real capability and request, raised to guarantee."""
    total = cpu(8)
    guarantees = Resource()
    for *_, guarantee in queues:
        if guarantee is not None:
            guarantees.add(guarantee)
    attrs = [attr(name, weight=w, request=req, total=total, total_guarantee=guarantees, capability=cap,
                  guarantee=guarantee) for name, w, req, cap, guarantee in queues]
    split_deserved(attrs, total)
    assert [round(a.deserved.milli_cpu, 6) for a in attrs] == expected


def test_split_deserved_caps_each_dimension_separately() -> None:
    """Memory capped by request while CPU keeps flowing; share ignores dimensions deserved lacks."""
    total = Resource(8000, 16 * GI, {"nvidia.com/gpu": 4000})
    x = attr("x", weight=1, request=Resource(8000, 2 * GI), total=total)
    y = attr("y", weight=1, request=Resource(2000, 16 * GI, {"nvidia.com/gpu": 1000}), total=total)
    split_deserved([x, y], total)
    assert (x.deserved.milli_cpu, x.deserved.memory, x.deserved.scalars.get("nvidia.com/gpu", 0.0)) == (
        6000, 2 * GI, 0.0)
    assert (y.deserved.milli_cpu, y.deserved.memory, y.deserved.scalars["nvidia.com/gpu"]) == (
        2000, 14 * GI, 1000)
    assert x.dims == ("cpu", "memory") and y.dims == ("cpu", "memory", "nvidia.com/gpu")


def test_real_capability_is_total_minus_other_guarantees_capped_by_capability() -> None:
    """realCapability = min(capability, total - all guarantees + own guarantee); unset dims unlimited."""
    total = Resource(100_000, 400 * GI, {"nvidia.com/gpu": 8000})
    result = real_capability(total=total, total_guarantee=Resource(30_000, 100 * GI), guarantee=cpu(10),
                             capability=Resource(50_000, float("inf")))
    assert (result.milli_cpu, result.memory, result.scalars) == (50_000, 300 * GI, {"nvidia.com/gpu": 8000})


def test_queue_without_jobs_gets_no_deserved_and_does_not_dilute() -> None:
    """Only queues that have jobs share the cluster; an idle heavy queue gets nothing."""
    ssn = session(
        node(name="n1", cpu="8"),
        queue(name="idle", weight=10),
        queue(name="busy", weight=1),
        pod_group(name="j", queue="busy"),
        *[pod(name=f"p{i}", group="j", cpu="1", memory="") for i in range(10)],
    )
    assert set(shares(ssn).attrs) == {"busy"}
    assert shares(ssn).attrs[QueueID("busy")].deserved.milli_cpu == 8000
    figures = close_session(ssn).queues["idle"]
    assert figures.deserved is not None and figures.deserved.is_empty() and not figures.overused


# Share, order, overused, allocatable ----------------------------------------------------------------


def test_share_is_the_largest_allocated_over_deserved_and_drives_queue_order() -> None:
    """share = max(allocated / deserved); a higher queue priority goes first, then the lower share."""
    ssn = session(
        node(name="n1", cpu="8", memory="8Gi"),
        queue(name="x"), queue(name="y"), queue(name="z", priority=5),
        pod_group(name="jx", queue="x", phase="Running"),
        pod(name="x-0", group="jx", node_name="n1", cpu="1", memory="3Gi"),
        pod(name="x-1", group="jx", cpu="3", memory="1Gi"),
        pod_group(name="jy", queue="y", phase="Running"),
        pod(name="y-0", group="jy", node_name="n1", cpu="2", memory="1Gi"),
        pod(name="y-1", group="jy", cpu="2", memory="1Gi"),
        pod_group(name="jz", queue="z", phase="Running"),
        pod(name="z-0", group="jz", node_name="n1", cpu="1", memory="1Gi"),
    )
    state = shares(ssn)
    x, y, z = (state.attrs[QueueID(n)] for n in "xyz")
    assert (round(x.deserved.milli_cpu), x.deserved.memory) == (3500, 4 * GI)
    assert (round(y.deserved.milli_cpu), y.deserved.memory) == (3500, 2 * GI)
    assert (z.deserved.milli_cpu, z.deserved.memory) == (1000, 1 * GI)
    assert x.share == 0.75  # memory 3Gi of 4Gi beats cpu 1 of 3.5
    assert y.share == pytest.approx(2 / 3.5)
    assert z.share == 1.0
    qx, qy, qz = (ssn.queues[QueueID(n)] for n in "xyz")
    assert state.queue_order(qz, qy) == -1  # priority beats a higher share
    assert state.queue_order(qy, qx) == -1
    assert state.queue_order(qx, qy) == 1
    assert state.queue_order(qx, qx) == 0


@pytest.mark.parametrize(
    ("allocated", "expected"),
    [
        pytest.param(Resource(4000, 4 * GI), True, id="equal-is-overused"),
        pytest.param(Resource(5000, 4 * GI), True, id="above"),
        pytest.param(Resource(4000, 3 * GI), False, id="one-dimension-below"),
    ],
)
def test_overused_when_deserved_le_allocated_in_every_dimension(allocated: Resource, expected: bool) -> None:
    """docs/semantics.md, "Overused": overused as soon as allocated equals deserved."""
    queue_attr = attr("q", weight=1, request=Resource(), total=Resource())
    queue_attr.deserved, queue_attr.allocated = Resource(4000, 4 * GI), allocated
    assert queue_attr.is_overused() is expected


def _one_queue(*, running_cpu: str, **spec: Any) -> Session:
    return session(
        node(name="n1", cpu="8", memory="8Gi"),
        queue(name="q", **spec),
        pod_group(name="j", queue="q", phase="Running"),
        pod(name="run", group="j", node_name="n1", cpu=running_cpu, memory=""),
        pod(name="cpu-1", group="j", cpu="1", memory=""),
        pod(name="cpu-2", group="j", cpu="2", memory=""),
        pod(name="mem", group="j", cpu="", memory="1Gi"),
    )


@pytest.mark.parametrize(
    ("running_cpu", "name", "expected"),
    [
        pytest.param("3", "cpu-1", True, id="reaches-deserved-exactly"),
        pytest.param("3", "cpu-2", False, id="above-deserved"),
        pytest.param("5", "cpu-1", False, id="queue-already-above"),
        pytest.param("5", "mem", True, id="only-requested-dimensions-count"),
    ],
)
def test_allocatable_compares_only_the_requested_dimensions(
    running_cpu: str, name: str, expected: bool
) -> None:
    """Deserved 4 CPU (capability) and 1Gi (request): allocated + the task's request must stay within it."""
    ssn = _one_queue(running_cpu=running_cpu, capability={"cpu": "4"})
    q = ssn.queues[QueueID("q")]
    deserved = shares(ssn).attrs[q.uid].deserved
    assert (deserved.milli_cpu, deserved.memory) == (4000, 1 * GI)
    assert ssn.allocatable(q, task_of(ssn, "j", name)) is expected
    assert ssn.preemptive(q, task_of(ssn, "j", name)) is expected


def test_closed_queue_allocates_nothing_and_rejects_jobs() -> None:
    """A queue that is not Open neither allocates, nor preempts, nor admits."""
    ssn = _one_queue(running_cpu="1")
    q = ssn.queues[QueueID("q")]
    q.state = QueueState.CLOSED
    assert not ssn.allocatable(q, task_of(ssn, "j", "cpu-1"))
    assert not ssn.preemptive(q, task_of(ssn, "j", "cpu-1"))
    assert shares(ssn).job_enqueueable(ssn.jobs[JobID("default/j")]) is Vote.REJECT


# Reclaim ----------------------------------------------------------------------------------------


def test_reclaimable_takes_victims_only_while_their_queue_is_above_deserved() -> None:
    """Queue x holds 7 CPU against deserved 4: three 1-CPU victims bring it to 4, the fourth is kept;
    queue y (1 of 4) offers none."""
    ssn = session(
        node(name="n1", cpu="8"),
        queue(name="x"), queue(name="y"),
        pod_group(name="jx", queue="x", phase="Running"),
        *[pod(name=f"x-{i}", group="jx", node_name="n1", cpu=c, memory="") for i, c in enumerate("1114")],
        pod_group(name="jy", queue="y", phase="Running"),
        pod(name="y-0", group="jy", node_name="n1", cpu="1", memory=""),
        pod(name="y-1", group="jy", cpu="4", memory=""),
    )
    state = shares(ssn)
    assert (state.attrs[QueueID("x")].deserved.milli_cpu, state.attrs[QueueID("y")].deserved.milli_cpu) == (
        4000, 4000)
    reclaimees = [task_of(ssn, "jx", f"x-{i}") for i in range(4)] + [task_of(ssn, "jy", "y-0")]
    victims, vote = state.reclaimable(task_of(ssn, "jy", "y-1"), reclaimees)
    assert vote is Vote.PERMIT
    assert [v.name for v in victims] == ["x-0", "x-1", "x-2"]
    assert state.attrs[QueueID("x")].allocated.milli_cpu == 7000  # choosing victims changes nothing live


def test_reclaimable_offers_from_a_queue_holding_less_than_the_reclaimer_asks() -> None:
    """x holds 3 CPU over its deserved 2 and the reclaimer wants 5: x still gives back its excess, one pod, as
    Volcano's proportion does since 975277f dropped its LessPartly skip (the node's idle room may make up
    the rest)."""
    ssn = session(
        node(name="n1", cpu="8"),
        queue(name="x", capability={"cpu": "2"}), queue(name="y"),
        pod_group(name="jx", queue="x", phase="Running"),
        *[pod(name=f"x-{i}", group="jx", node_name="n1", cpu="1", memory="") for i in range(3)],
        pod_group(name="jy", queue="y", phase="Running"),
        pod(name="y-0", group="jy", cpu="5", memory=""),
    )
    state = shares(ssn)
    assert state.attrs[QueueID("x")].deserved.milli_cpu == 2000
    reclaimees = [task_of(ssn, "jx", f"x-{i}") for i in range(3)]
    victims, _ = state.reclaimable(task_of(ssn, "jy", "y-0"), reclaimees)
    assert [v.name for v in victims] == ["x-0"]


# Enqueue ----------------------------------------------------------------------------------------


def _admission(new_min_cpu: str) -> Session:
    return session(
        node(name="n1", cpu="8", memory="8Gi"),
        queue(name="q", capability={"cpu": "4"}),
        pod_group(name="run", queue="q", phase="Running", min_resources={"cpu": "1"}),
        pod(name="run-0", group="run", node_name="n1", cpu="1", memory=""),
        pod(name="run-1", group="run", node_name="n1", cpu="1", memory=""),
        pod_group(name="admitted", queue="q", phase="Inqueue", min_resources={"cpu": "1"}),
        pod(name="admitted-0", group="admitted", cpu="1", memory=""),
        pod_group(name="new", queue="q", min_resources={"cpu": new_min_cpu}),
        pod(name="new-0", group="new", cpu=new_min_cpu, memory=""),
        pod_group(name="late", queue="q", min_resources={"cpu": "1"}),
        pod(name="late-0", group="late", cpu="1", memory=""),
    )


@pytest.mark.parametrize(
    ("new_min_cpu", "expected"),
    [
        pytest.param("2", Vote.PERMIT, id="2+2+1-1-fits-4"),
        pytest.param("3", Vote.REJECT, id="3+2+1-1-exceeds-4"),
    ],
)
def test_enqueueable_formula_min_plus_allocated_plus_inqueue_minus_elastic(
    new_min_cpu: str, expected: Vote
) -> None:
    """docs/semantics.md, "Proportion enqueue": allocated 2, inqueue 1 (the Inqueue group), elastic 1 (run
    holds 2 over its min 1)."""
    ssn = _admission(new_min_cpu)
    state = shares(ssn)
    q = state.attrs[QueueID("q")]
    assert (q.allocated.milli_cpu, q.inqueue.milli_cpu, q.elastic.milli_cpu, q.real_capability.milli_cpu) == (
        2000, 1000, 1000, 4000)
    job = ssn.jobs[JobID("default/new")]
    assert state.job_enqueueable(job) is expected
    assert job.job_fit_error == ("" if expected is Vote.PERMIT else "queue resource quota insufficient: cpu")


def test_enqueued_job_reserves_its_min_resources() -> None:
    """Once `new` (2 CPU) is admitted, `late` (1 CPU) no longer fits: 1 + 2 + 3 - 1 > 4."""
    ssn = _admission("2")
    state = shares(ssn)
    late = ssn.jobs[JobID("default/late")]
    assert state.job_enqueueable(late) is Vote.PERMIT
    ssn.job_enqueued(ssn.jobs[JobID("default/new")])
    assert state.attrs[QueueID("q")].inqueue.milli_cpu == 3000
    assert state.job_enqueueable(late) is Vote.REJECT


def test_group_without_min_resources_is_permitted_and_reserves_nothing() -> None:
    """No minResources: permit, and the enqueued callback adds nothing."""
    ssn = session(
        node(name="n1", cpu="2"), queue(name="q", capability={"cpu": "1"}),
        pod_group(name="j", queue="q"), pod(name="j-0", group="j", cpu="2"),
    )
    job = ssn.jobs[JobID("default/j")]
    assert shares(ssn).job_enqueueable(job) is Vote.PERMIT
    ssn.job_enqueued(job)
    assert shares(ssn).attrs[QueueID("q")].inqueue.is_empty()


@pytest.mark.parametrize(
    ("running", "expected"),
    [pytest.param(2, 1000, id="min-member-reached-reserves-the-rest"),
     pytest.param(1, 0, id="below-min-member-reserves-nothing")],
)
def test_running_group_reserves_unallocated_min_resources(running: int, expected: float) -> None:
    """A Running group (minMember 2, minResources 3 CPU) reserves min - allocated if minMember run."""
    ssn = session(
        node(name="n1", cpu="8"), queue(name="q"),
        pod_group(name="j", queue="q", phase="Running", min_member=2, min_resources={"cpu": "3"}),
        *[pod(name=f"j-{i}", group="j", node_name="n1" if i < running else "", cpu="1", memory="")
          for i in range(3)],
    )
    assert shares(ssn).attrs[QueueID("q")].inqueue.milli_cpu == expected


@pytest.mark.parametrize(
    ("placed", "expected"),
    [pytest.param(0, 3000, id="nothing-placed-reserves-all"),
     pytest.param(1, 2000, id="one-placed-reserves-the-rest"),
     pytest.param(3, 0, id="min-held-reserves-nothing")],
)
def test_inqueue_group_reserves_only_what_it_does_not_hold(placed: int, expected: float) -> None:
    """An Inqueue group (minResources 3 CPU) whose pods already run reserves min - allocated, whatever
    minMember: what they hold counts in allocated (Volcano's GetInqueueResource)."""
    ssn = session(
        node(name="n1", cpu="8"), queue(name="q"),
        pod_group(name="j", queue="q", phase="Inqueue", min_member=3, min_resources={"cpu": "3"}),
        *[pod(name=f"j-{i}", group="j", node_name="n1" if i < placed else "", cpu="1", memory="")
          for i in range(3)],
    )
    assert shares(ssn).attrs[QueueID("q")].inqueue.milli_cpu == expected


# Events and the dry run ---------------------------------------------------------------------------


def _two_queues() -> Session:
    return session(
        node(name="n1", cpu="8"),
        queue(name="x"), queue(name="y"),
        pod_group(name="jx", queue="x", phase="Running"),
        *[pod(name=f"x-{i}", group="jx", node_name="n1" if i < 4 else "", cpu="1", memory="")
          for i in range(6)],
        pod_group(name="jy", queue="y", phase="Inqueue"),
        *[pod(name=f"y-{i}", group="jy", cpu="1", memory="") for i in range(4)],
    )


def test_event_handlers_keep_allocated_and_share_current_and_discard_restores_them() -> None:
    """Allocate and pipeline count in the queue, evict stops counting; discard undoes all three."""
    ssn = _two_queues()
    x = shares(ssn).attrs[QueueID("x")]
    assert (x.deserved.milli_cpu, x.allocated.milli_cpu, x.share) == (4000, 4000, 1.0)
    stmt = Statement(ssn)
    stmt.allocate(task_of(ssn, "jx", "x-4"), "n1")
    stmt.pipeline(task_of(ssn, "jx", "x-5"), "n1")
    assert (x.allocated.milli_cpu, x.share) == (6000, 1.5)
    stmt.evict(task_of(ssn, "jx", "x-0"), "reclaim")
    assert (x.allocated.milli_cpu, x.share) == (5000, 1.25)
    stmt.discard()
    assert (x.allocated.milli_cpu, x.share) == (4000, 1.0)


def test_dry_run_moves_tasks_in_its_own_state_only() -> None:
    """Removing a victim in the dry-run state makes room there; the live figures stay as they were."""
    ssn = _two_queues()
    x_queue = ssn.queues[QueueID("x")]
    extra = task_of(ssn, "jx", "x-4")
    assert not ssn.allocatable(x_queue, extra)
    state = CycleState()
    assert ssn.pre_predicate(extra, state) is None
    assert not ssn.simulate_allocatable(state, x_queue, extra)
    ssn.simulate_remove_task(state, extra, task_of(ssn, "jx", "x-0"), ssn.nodes["n1"])
    assert ssn.simulate_allocatable(state, x_queue, extra)
    assert not ssn.allocatable(x_queue, extra)
    ssn.simulate_add_task(state, extra, extra, ssn.nodes["n1"])
    assert state.read(STATE_KEY).allocated(x_queue.uid).milli_cpu == 4000
    assert shares(ssn).attrs[x_queue.uid].allocated.milli_cpu == 4000


def test_dry_run_clones_are_independent() -> None:
    """A CycleState clone per candidate node: changes in one are not seen by the other."""
    ssn = _two_queues()
    x_queue = ssn.queues[QueueID("x")]
    extra = task_of(ssn, "jx", "x-4")
    state = CycleState()
    ssn.pre_predicate(extra, state)
    copy = state.clone()
    ssn.simulate_remove_task(copy, extra, task_of(ssn, "jx", "x-0"), ssn.nodes["n1"])
    assert ssn.simulate_allocatable(copy, x_queue, extra)
    assert not ssn.simulate_allocatable(state, x_queue, extra)


def test_dry_run_state_keeps_the_figures_of_the_moment_it_was_taken() -> None:
    """Live allocations after the pre-predicate do not leak into the stored state (nor into its clones)."""
    ssn = _two_queues()
    y_queue = ssn.queues[QueueID("y")]
    probe = task_of(ssn, "jy", "y-3")
    state = CycleState()
    ssn.pre_predicate(probe, state)
    copy = state.clone()
    stmt = Statement(ssn)
    for name in ("y-0", "y-1", "y-2", "y-3"):
        stmt.allocate(task_of(ssn, "jy", name), "n1")
    assert shares(ssn).attrs[y_queue.uid].allocated.milli_cpu == 4000
    assert not ssn.allocatable(y_queue, probe)
    for cycle_state in (state, copy):
        assert cycle_state.read(STATE_KEY).allocated(y_queue.uid).milli_cpu == 0
        assert ssn.simulate_allocatable(cycle_state, y_queue, probe)


def test_simulate_allocatable_without_a_stored_state_reads_the_live_figures() -> None:
    """No pre-predicate ran: the dry-run check is the live quota check."""
    ssn = _two_queues()
    x_queue = ssn.queues[QueueID("x")]
    assert not ssn.simulate_allocatable(CycleState(), x_queue, task_of(ssn, "jx", "x-4"))
    assert ssn.simulate_allocatable(CycleState(), ssn.queues[QueueID("y")], task_of(ssn, "jy", "y-0"))


# Figures ----------------------------------------------------------------------------------------


def test_close_reports_every_queue() -> None:
    """Figures at close: allocated (with this cycle's tasks), request, deserved, share, overused."""
    ssn = _two_queues()
    Statement(ssn).allocate(task_of(ssn, "jy", "y-0"), "n1")
    figures = close_session(ssn).queues
    assert set(figures) == {"x", "y", "default"}
    x, y = figures["x"], figures["y"]
    assert (x.allocated.milli_cpu, x.request.milli_cpu, x.share, x.overused) == (4000, 6000, 1.0, True)
    assert x.deserved is not None and x.deserved.milli_cpu == 4000
    assert (y.allocated.milli_cpu, y.request.milli_cpu, y.share, y.overused) == (1000, 4000, 0.25, False)
    assert y.real_capability is not None and y.real_capability.milli_cpu == 8000


# Sums kept between sessions ---------------------------------------------------------------------


def test_a_job_is_summed_again_once_changed_and_a_fractional_one_makes_queues_count_task_by_task() -> None:
    snapshot = cluster(node(name="n0", cpu="8"), pod(name="a", cpu="1"), pod(name="b", cpu="2", node_name="n0"))
    kept = KeptJobSums()
    jobs = list(snapshot.jobs.values())
    first = kept.take(jobs)
    assert first is not None and kept.take(jobs) == first  # the same sums, not summed again
    task = next(iter(jobs[0].tasks.values()))
    jobs[0].update_task_status(task, TaskStatus.ALLOCATED)  # a session's change
    again = kept.take(jobs)
    assert again is not None and again[0] is not first[0] and again[1] is first[1]
    assert again[0].allocated.milli_cpu == 1000
    fractional = cluster(pod(name="c", cpu="0.0001"))  # 0.1 milli-CPU: sums could round apart
    assert kept.take([*jobs, *fractional.jobs.values()]) is None


_RESOURCES = st.builds(
    Resource,
    st.integers(0, 4).map(lambda halves: halves * 500),
    st.sampled_from([0, GI, 3 * GI]),
    st.dictionaries(st.sampled_from(["nvidia.com/gpu", "example.com/fpga"]), st.integers(0, 2).map(float)),
)
_STATUSES = st.sampled_from(list(TaskStatus))


@given(tasks=st.lists(st.tuples(_RESOURCES, _STATUSES, _STATUSES), max_size=4), min_resources=st.none() | _RESOURCES)
def test_a_settled_job_adds_the_figures_its_job_sums_hold(
    tasks: list[tuple[Resource, TaskStatus, TaskStatus]], min_resources: Resource | None
) -> None:
    """What a settling job adds to its queue (read from what the job keeps when it has no pending task and
    no minResources) equals its `JobSums`, dimension by dimension and scalar names included: also after
    tasks changed status (a scalar left at zero) and for a job that requests nothing."""
    job = JobInfo(PodGroupSpec(name="j", namespace="ns", queue="q", min_resources=min_resources))
    for number, (resreq, status, _) in enumerate(tasks):
        uid = TaskID(f"t{number}")
        job.add_task(TaskInfo(uid=uid, name=uid, namespace="ns", resreq=resreq, status=status))
    for number, (_, _, moved) in enumerate(tasks):
        job.update_task_status(job.tasks[TaskID(f"t{number}")], moved)
    sums = JobSums(job)

    def dims(figure: Resource | None) -> object:
        return None if figure is None else (figure.milli_cpu, figure.memory, figure.scalars)

    settled = [dims(figure) for figure in KeptJobSums().settled_figures(job)]
    assert settled == [dims(figure) for figure in (sums.allocated, sums.request, sums.inqueue, sums.elastic)]
