"""Statement: operations mutate at once, commit records decisions in order, discard restores exactly."""

from __future__ import annotations

from typing import Any

import numpy as np

from py_volcano.actions import ACTIONS
from py_volcano.api import TaskStatus
from py_volcano.framework import EventHandler, Registry, Session, Statement, open_session, parse_conf, run_cycle
from py_volcano.plugins import PLUGINS
from tests.builders import cluster, node, pod, pod_group

REGISTRY = Registry(plugins={name: PLUGINS[name] for name in ("gang", "priority")}, actions=ACTIONS)
CONF = parse_conf('actions: "allocate"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang', REGISTRY)


def session() -> Session:
    return open_session(
        cluster(
            node(name="n1", cpu="4"),
            node(name="n2", cpu="4"),
            pod_group(name="run", phase="Running"),
            pod(name="run-0", group="run", node_name="n1", cpu="2"),
            pod(name="run-1", group="run", node_name="n1", cpu="2"),
            pod_group(name="new", phase="Inqueue"),
            pod(name="new-0", group="new", cpu="1"),
            pod(name="new-1", group="new", cpu="1"),
        ),
        CONF,
        REGISTRY,
    )


def state(ssn: Session) -> Any:
    nodes = {
        name: (
            n.idle.milli_cpu,
            n.used.milli_cpu,
            n.releasing.milli_cpu,
            n.pipelined.milli_cpu,
            n.used_pods,
            n.releasing_pods,
            n.pipelined_pods,
            sorted((t.name, t.status.value) for t in n.tasks.values()),
        )
        for name, n in ssn.nodes.items()
    }
    jobs = {
        uid: (
            j.allocated.milli_cpu,
            sorted((s.value, sorted(t.name for t in ts.values())) for s, ts in j.task_status_index.items()),
            sorted((t.name, t.node_name) for t in j.tasks.values()),
        )
        for uid, j in ssn.jobs.items()
    }
    return nodes, jobs, ssn.arrays.idle.copy(), ssn.arrays.releasing.copy(), ssn.arrays.pipelined.copy()


def tasks(ssn: Session, job: str) -> list[Any]:
    return sorted(ssn.jobs[f"default/{job}"].tasks.values(), key=lambda t: t.name)  # type: ignore[index]


def test_discard_restores_the_exact_prior_state() -> None:
    """Allocate, pipeline and evict, then discard: nodes, jobs and arrays are as before."""
    ssn = session()
    events: list[str] = []
    ssn.add_event_handler(
        EventHandler(allocate=lambda t: events.append(f"+{t.name}"), deallocate=lambda t: events.append(f"-{t.name}"))
    )
    before = state(ssn)
    victim = tasks(ssn, "run")[0]
    new0, new1 = tasks(ssn, "new")
    stmt = Statement(ssn)
    stmt.evict(victim, "preempt")
    stmt.pipeline(new0, "n1")
    stmt.allocate(new1, "n2")
    assert victim.status is TaskStatus.RELEASING and new0.status is TaskStatus.PIPELINED
    assert ssn.nodes["n1"].releasing.milli_cpu == 2000 and ssn.nodes["n1"].pipelined.milli_cpu == 1000
    assert ssn.arrays.idle[1, 0] == 3000
    stmt.discard()
    after = state(ssn)
    assert after[:2] == before[:2]
    for got, want in zip(after[2:], before[2:], strict=True):
        np.testing.assert_array_equal(got, want)
    assert events == ["-run-0", "+new-0", "+new-1", "-new-1", "-new-0", "+run-0"]
    assert not ssn.binds and not ssn.evictions


def test_commit_records_binds_and_evictions_in_order() -> None:
    """Commit turns allocations into binds and evictions into eviction decisions; pipelines stay in the session."""
    ssn = session()
    victim = tasks(ssn, "run")[1]
    new0, new1 = tasks(ssn, "new")
    stmt = Statement(ssn)
    stmt.evict(victim, "reclaim")
    stmt.pipeline(new0, "n1")
    stmt.allocate(new1, "n2")
    stmt.commit()
    assert [(t.name, n) for t, n in ssn.binds] == [("new-1", "n2")]
    assert [(t.name, r) for t, r in ssn.evictions] == [("run-1", "reclaim")]
    assert new0.status is TaskStatus.PIPELINED and new0.node_name == "n1"
    assert stmt.operations == []


def test_evicting_the_nodes_own_copy_keeps_the_node_right() -> None:
    """Evict and discard work when given the node's own task object, not a clone."""
    ssn = session()
    before = state(ssn)
    held = next(iter(ssn.nodes["n1"].tasks.values()))
    stmt = Statement(ssn)
    stmt.evict(held, "preempt")
    assert ssn.nodes["n1"].releasing.milli_cpu == 2000 and ssn.nodes["n1"].used.milli_cpu == 4000
    stmt.discard()
    assert state(ssn)[:2] == before[:2]


def test_merge_moves_operations_so_one_discard_undoes_them_all() -> None:
    """merge appends the other statement's operations and empties it (Volcano's Merge): the merged operations
    are then committed or discarded with the statement's own."""
    ssn = session()
    before = state(ssn)
    victim = tasks(ssn, "run")[0]
    new0, new1 = tasks(ssn, "new")
    job_stmt, node_stmt = Statement(ssn), Statement(ssn)
    job_stmt.allocate(new1, "n2")
    node_stmt.evict(victim, "preempt")
    node_stmt.pipeline(new0, "n1")
    job_stmt.merge(node_stmt)
    assert node_stmt.operations == []
    assert [(op.kind.value, op.task.name) for op in job_stmt.operations] == [
        ("allocate", "new-1"),
        ("evict", "run-0"),
        ("pipeline", "new-0"),
    ]
    job_stmt.discard()
    assert state(ssn)[:2] == before[:2]


def test_each_commit_hands_its_binds_to_the_cycles_listener_in_result_order() -> None:
    """`run_cycle(on_binds=...)` gets one list per committed statement: a gang's binds together, once it
    is ready, then each one-pod job's; together they are the result's binds, in order."""
    snapshot = cluster(
        node(name="n1", cpu="8"),
        pod_group(name="gang", phase="Inqueue", min_member=3),
        *(pod(name=f"gang-{index}", group="gang", cpu="1") for index in range(3)),
        pod(name="solo-0", cpu="1"),
        pod(name="solo-1", cpu="1"),
    )
    batches: list[list[str]] = []
    result = run_cycle(snapshot, CONF, REGISTRY, on_binds=lambda binds: batches.append([t.name for t, _ in binds]))
    assert sorted(len(batch) for batch in batches) == [1, 1, 3]
    assert sorted(batches[[len(batch) for batch in batches].index(3)]) == ["gang-0", "gang-1", "gang-2"]
    assert [name for batch in batches for name in batch] == [task.name for task, _ in result.binds]
