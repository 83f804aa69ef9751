"""preempt as a whole: arguments, job order between preemptors, discard restoring the session exactly."""

from __future__ import annotations

import pytest

from py_volcano.actions import preempt
from py_volcano.api import TaskStatus
from py_volcano.framework import Arguments, Session
from tests.builders import node, pod, pod_group, priority_class
from tests.unit.actions.sessions import session, task

CONF = """actions: enqueue, allocate, preempt
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
"""


def _state(ssn: Session) -> list[tuple[object, ...]]:
    nodes = [
        (
            n.name,
            n.idle.milli_cpu,
            n.releasing.milli_cpu,
            n.pipelined.milli_cpu,
            n.used_pods,
            n.releasing_pods,
            n.pipelined_pods,
            sorted((t.name, t.status.value) for t in n.tasks.values()),
        )
        for n in ssn.node_list
    ]
    tasks = [(t.name, t.status.value, t.node_name) for j in ssn.jobs.values() for t in j.tasks.values()]
    return [*nodes, *sorted(tasks)]


def test_arguments_default_to_volcano_and_a_bad_value_keeps_the_default() -> None:
    """Seed 004 7.2 defaults; typed getters warn and keep the default."""
    assert preempt.PreemptArgs.parse(Arguments({})) == preempt.PreemptArgs(False, 10, 1, 100)
    parsed = preempt.PreemptArgs.parse(
        Arguments(
            {
                "enableTopologyAwarePreemption": "true",
                "minCandidateNodesPercentage": 50,
                "minCandidateNodesAbsolute": 2,
                "maxCandidateNodesAbsolute": 7,
            }
        )
    )
    assert parsed == preempt.PreemptArgs(True, 50, 2, 7)
    with pytest.warns(UserWarning, match="minCandidateNodesPercentage"):
        assert (
            preempt.PreemptArgs.parse(
                Arguments({"minCandidateNodesPercentage": "many"})
            ).min_candidate_nodes_percentage
            == 10
        )


def test_a_job_that_cannot_be_pipelined_leaves_the_session_exactly_as_before() -> None:
    """Discard undoes every eviction and pipeline of the job's Statement, in nodes, jobs and queues."""
    ssn = session(
        CONF,
        priority_class(name="low", value=1),
        priority_class(name="high", value=100),
        node(name="n", cpu="4"),
        pod_group(name="low", min_member=1, priority_class="low", phase="Running"),
        *[pod(name=f"low-{i}", group="low", node_name="n") for i in range(4)],
        pod_group(name="high", min_member=2, priority_class="high", phase="Inqueue"),
        *[pod(name=f"high-{i}", group="high", cpu="2") for i in range(2)],
    )
    before = _state(ssn)
    preempt.new(Arguments({})).execute(ssn)
    assert ssn.evictions == [] and ssn.binds == []
    assert _state(ssn) == before


def test_the_higher_priority_starving_job_preempts_first() -> None:
    """Only one victim is to be had: the preemptor job first in job order gets it; nothing binds."""
    ssn = session(
        CONF,
        priority_class(name="low", value=1),
        priority_class(name="mid", value=500),
        priority_class(name="high", value=900),
        node(name="n", cpu="2"),
        pod_group(name="low", min_member=1, priority_class="low", phase="Running"),
        *[pod(name=f"low-{i}", group="low", node_name="n") for i in range(2)],
        pod_group(name="mid", min_member=1, priority_class="mid", phase="Inqueue"),
        pod(name="mid-0", group="mid"),
        pod_group(name="high", min_member=1, priority_class="high", phase="Inqueue"),
        pod(name="high-0", group="high"),
    )
    preempt.new(Arguments({})).execute(ssn)
    assert [(t.name, reason) for t, reason in ssn.evictions] == [("low-0", "preempt")]
    assert (task(ssn, "high-0").status, task(ssn, "high-0").node_name) == (TaskStatus.PIPELINED, "n")
    assert task(ssn, "mid-0").status is TaskStatus.PENDING
    assert ssn.binds == []
