"""preempt as a whole: arguments, job order between preemptors, discard restoring the session exactly."""

from __future__ import annotations

import pytest

from py_volcano.actions import preempt
from py_volcano.api import TaskStatus
from py_volcano.errors import ConfigError
from py_volcano.framework import Session
from tests.builders import node, pod, pod_group, priority_class
from tests.unit.actions.sessions import session, task
from tests.unit.arguments import action_args

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


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        pytest.param({}, preempt.PreemptArgs(False, 10, 1, 100), id="volcano-defaults"),
        pytest.param(
            {
                "enableTopologyAwarePreemption": "true",
                "minCandidateNodesPercentage": 50,
                "minCandidateNodesAbsolute": 2,
                "maxCandidateNodesAbsolute": 7,
            },
            preempt.PreemptArgs(True, 50, 2, 7),
            id="all-set",
        ),
        pytest.param(
            {"enableTopologyAwarePreemption": True, "maxCandidateNodesAbsolute": "30"},
            preempt.PreemptArgs(True, 10, 1, 30),
            id="bool-and-integer-string",
        ),
    ],
)
def test_arguments_default_to_volcano(arguments: dict[str, object], expected: preempt.PreemptArgs) -> None:
    """Volcano's defaults (docs/semantics.md, "Topology-aware preemption"); the `configurations` arguments
    are parsed once at load."""
    assert action_args("preempt", arguments) == expected


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        pytest.param(
            {"minCandidateNodesPercentage": "many"}, "minCandidateNodesPercentage: 'many' is not an integer", id="text"
        ),
        pytest.param(
            {"minCandidateNodesAbsolute": 1.5},
            "minCandidateNodesAbsolute: 1.5 is not an integer",
            id="float",
        ),
        pytest.param(
            {"enableTopologyAwarePreemption": "yes"},
            "enableTopologyAwarePreemption: 'yes' is not true or false",
            id="bool",
        ),
        pytest.param(
            {"maxCandidateNodesAbsolute": False},
            "maxCandidateNodesAbsolute: False is not an integer",
            id="int-bool",
        ),
    ],
)
def test_a_bad_argument_is_a_config_error_naming_action_key_and_value(
    arguments: dict[str, object], message: str
) -> None:
    """The configuration does not load; the error names the action, the key and the value."""
    with pytest.raises(ConfigError) as info:
        action_args("preempt", arguments)
    assert str(info.value) == f"scheduler conf: action preempt: argument {message}"


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
    preempt.new(preempt.PreemptArgs()).execute(ssn)
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
    preempt.new(preempt.PreemptArgs()).execute(ssn)
    assert [(t.name, reason) for t, reason in ssn.evictions] == [("low-0", "preempt")]
    assert (task(ssn, "high-0").status, task(ssn, "high-0").node_name) == (TaskStatus.PIPELINED, "n")
    assert task(ssn, "mid-0").status is TaskStatus.PENDING
    assert ssn.binds == []
