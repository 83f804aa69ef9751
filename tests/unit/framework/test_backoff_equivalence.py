"""Leaving backed-off jobs out of a cycle changes nothing for the others (docs/semantics.md, "Backoff of
unschedulable jobs"): every job the cycle could not place, or any part of them, skipped in a cycle over
the same cluster, and every other job is bound, pipelined and evicted for exactly as before; queue
fairness and gang order stay exact."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from py_volcano.api import CycleResult, JobID
from py_volcano.cache.store import KINDS, Store
from py_volcano.framework import SchedulerConf, run_cycle
from py_volcano.registry import default_registry, load_conf
from tests.builders import node, pod, pod_group, priority_class, queue

CONFS = {
    "default": load_conf(None),
    "preempt-reclaim": load_conf(
        'actions: "enqueue, allocate, preempt, reclaim, backfill"\n'
        "tiers:\n- plugins: [{name: priority}, {name: gang}, {name: conformance}]\n"
        "- plugins: [{name: overcommit}, {name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]\n"
    ),
}


@st.composite
def clusters(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A few nodes, weighted queues, priority classes, gangs of pending pods and running pods to evict."""
    objects: list[dict[str, Any]] = [priority_class(name="low", value=10), priority_class(name="high", value=100)]
    nodes = draw(st.integers(1, 4))
    for i in range(nodes):
        objects.append(node(name=f"n{i}", cpu=str(draw(st.integers(2, 8))), pods=draw(st.sampled_from(["3", "110"]))))
    queues = [f"q{i}" for i in range(draw(st.integers(1, 3)))]
    for name in queues:
        spec = {"capability": {"cpu": str(draw(st.integers(2, 12)))}} if draw(st.booleans()) else {}
        objects.append(queue(name=name, weight=draw(st.integers(1, 4)), **spec))
    for g in range(draw(st.integers(1, 6))):
        members = draw(st.integers(1, 3))
        group = f"g{g}"
        objects.append(
            pod_group(
                name=group,
                queue=draw(st.sampled_from(queues)),
                min_member=draw(st.integers(1, members)),
                phase=draw(st.sampled_from(["Inqueue", "Inqueue", "Pending", "Running"])),
                priority_class=draw(st.sampled_from(["low", "high"])),
            )
        )
        for t in range(members):
            running = draw(st.booleans())
            objects.append(
                pod(
                    name=f"{group}-{t}",
                    group=group,
                    cpu=str(draw(st.integers(1, 6))),
                    memory="1Gi",
                    node_name=f"n{draw(st.integers(0, nodes - 1))}" if running else "",
                    spec={
                        "priorityClassName": draw(
                            st.sampled_from(["low", "low", "high"] if running else ["high", "high", "low"])
                        )
                    },
                )
            )
    return objects


def cycle(objects: list[dict[str, Any]], conf: SchedulerConf, skip: frozenset[JobID] = frozenset()) -> CycleResult:
    """One cycle over a fresh store fed `objects` (as the runner's watches feed it), leaving out `skip`."""
    store = Store(scheduler_name="py-volcano")
    for kind in KINDS:
        for obj in objects:
            if obj["kind"] == kind.name:
                store.apply_event(kind, "ADDED", obj)
    return run_cycle(store.snapshot(), conf, default_registry(), skip=skip)


def decisions(result: CycleResult) -> tuple[object, ...]:
    """Binds, evictions and pipelined tasks, in the order decided."""
    return (
        [(task.key, host) for task, host in result.binds],
        [task.key for task, _ in result.evictions],
        sorted(result.pipelined.items()),
    )


@settings(max_examples=120, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(clusters(), st.sampled_from(sorted(CONFS)), st.randoms(use_true_random=False))
def test_skipping_jobs_that_failed_changes_no_other_decision(
    objects: list[dict[str, Any]], conf: str, rng: Any
) -> None:
    """Skip all of the unschedulable jobs, or a random part of them: the same decisions, and none of them failed."""
    first = cycle(objects, CONFS[conf])
    failed = sorted(first.unschedulable_jobs)
    for skip in (frozenset(failed), frozenset(job for job in failed if rng.random() < 0.5)):
        again = cycle(objects, CONFS[conf], skip)
        assert decisions(again) == decisions(first)
        assert again.unschedulable_jobs == first.unschedulable_jobs - skip


def test_a_cycle_that_evicted_backs_off_no_job() -> None:
    """preempt commits g4-0's eviction for g2, a job already ready through g2-0, which then places
    nothing: backing g2 off would drop that eviction (reclaim then takes g2-0 instead)."""
    objects = [
        priority_class(name="low", value=10),
        priority_class(name="high", value=100),
        node(name="n0", cpu="4", pods="3"),
        *(queue(name=f"q{index}", weight=1) for index in range(3)),
    ]
    for group, queue_name, members in (("g0", "q1", 2), ("g1", "q1", 2)):
        objects.append(
            pod_group(name=group, queue=queue_name, min_member=members, phase="Inqueue", priority_class="low")
        )
        objects += [
            pod(name=f"{group}-{t}", group=group, cpu="1", spec={"priorityClassName": "high"}) for t in range(3)
        ]
    for group in ("g2", "g3", "g4"):
        objects.append(pod_group(name=group, queue="q0", min_member=1, phase="Inqueue", priority_class="low"))
    objects += [
        pod(name="g2-0", group="g2", cpu="2", node_name="n0", spec={"priorityClassName": "low"}),
        pod(name="g2-1", group="g2", cpu="1", spec={"priorityClassName": "high"}),
        pod(name="g2-2", group="g2", cpu="1", spec={"priorityClassName": "high"}),
        pod(name="g3-0", group="g3", cpu="1", spec={"priorityClassName": "high"}),
        pod(name="g4-0", group="g4", cpu="1", node_name="n0", spec={"priorityClassName": "low"}),
    ]
    first = cycle(objects, CONFS["preempt-reclaim"])
    assert [task.name for task, _ in first.evictions] and not first.unschedulable_jobs
    tried = cycle(
        objects, CONFS["preempt-reclaim"], frozenset({JobID("default/g1"), JobID("default/g2"), JobID("default/g3")})
    )
    assert [task.name for task, _ in first.evictions] != [task.name for task, _ in tried.evictions]
