"""extender (Volcano's extender plugin) against a real HTTP server on 127.0.0.1, in-process."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from py_volcano.actions import ACTIONS
from py_volcano.api import CycleResult
from py_volcano.errors import ConfigError
from py_volcano.framework import Arguments, Registry, Session, close_session, open_session, parse_conf, run_cycle
from py_volcano.plugins import PLUGINS
from py_volcano.plugins.extender import ExtenderArgs
from py_volcano.plugins.extender.client import MAX_ANSWER_BYTES
from tests.builders import cluster, node, pod, pod_group
from tests.extender_server import FakeExtender, serving

REGISTRY = Registry(plugins=PLUGINS, actions=ACTIONS)


@pytest.fixture
def extender() -> Iterator[FakeExtender]:
    """A fake extender serving on loopback for the test."""
    with serving(FakeExtender()) as served:
        yield served


def conf(url: str, *, actions: str = "enqueue, allocate", **arguments: Any) -> str:
    lines = "".join(f"        extender.{key}: {value}\n" for key, value in arguments.items())
    return f"""
actions: {actions}
tiers:
- plugins:
  - name: gang
  - name: predicates
  - name: extender
    arguments:
        extender.urlPrefix: {url}
        extender.httpTimeout: 200ms
{lines}"""


def cycle(text: str, *objects: dict[str, Any]) -> CycleResult:
    return run_cycle(cluster(*objects), parse_conf(text, REGISTRY), REGISTRY)


def binds(result: CycleResult) -> dict[str, str]:
    return {task.name: node for task, node in result.binds}


def two_nodes_one_pod() -> list[dict[str, Any]]:
    return [node(name="node-1"), node(name="node-2"), pod(name="p")]


def test_args_take_volcanos_names_and_defaults() -> None:
    """Verbs unset by default, 1s timeout, not ignorable, every task of interest."""
    args = ExtenderArgs.parse(
        Arguments({"extender.urlPrefix": "http://127.0.0.1:8713", "extender.predicateVerb": "predicate"})
    )
    assert (args.url_prefix, args.predicate, args.prioritize, args.http_timeout) == (
        "http://127.0.0.1:8713",
        "predicate",
        "",
        1.0,
    )
    assert args.ignorable is False and args.managed_resources == frozenset()
    with pytest.raises(ConfigError, match=r"argument extender\.managedResources: 'nvidia\.com/gpu' is not a list"):
        ExtenderArgs.parse(Arguments({"extender.managedResources": "nvidia.com/gpu"}))


def test_predicate_answers_filter_nodes_with_one_call_per_task_and_node(extender: FakeExtender) -> None:
    """An answer with a status refuses the node; the task lands on the node the extender accepts, and the
    extender is asked about each node once although allocate and the pod's status both look."""
    extender.handlers["predicate"] = lambda body: (
        200,
        {"status": "" if body["node"]["Name"] == "node-2" else "no room for you", "code": 3},
    )
    result = cycle(conf(extender.url, predicateVerb="predicate"), *two_nodes_one_pod())
    assert binds(result) == {"p": "node-2"}
    asked = [(c.body["task"]["Name"], c.body["node"]["Name"]) for c in extender.calls]
    assert sorted(asked) == [("p", "node-1"), ("p", "node-2")]


def test_predicate_code_unschedulable_is_resolvable_by_preemption(extender: FakeExtender) -> None:
    """Code 2 (Unschedulable) may be resolved by evicting; 0 (taken as Error) and 3 may not."""
    extender.handlers["predicate"] = lambda body: (200, {"status": "busy", "code": int(body["node"]["Name"][-1]) + 1})
    ssn = open_session(
        cluster(node(name="node-1"), node(name="node-2"), pod(name="p")),
        parse_conf(conf(extender.url, predicateVerb="predicate"), REGISTRY),
        REGISTRY,
    )
    task = next(t for job in ssn.jobs.values() for t in job.tasks.values())
    assert [ssn.predicate(task, ssn.nodes[n]).resolvable for n in ("node-1", "node-2")] == [True, False]
    assert ssn.predicate_mask(task, for_preempt=True).tolist() == [True, False]
    close_session(ssn)


def test_prioritize_scores_every_candidate_in_one_call(extender: FakeExtender) -> None:
    """The extender's nodeScore decides between two equal nodes; one call carries both."""
    extender.handlers["prioritize"] = lambda body: (200, {"nodeScore": {"node-2": 50}})
    result = cycle(conf(extender.url, prioritizeVerb="prioritize"), *two_nodes_one_pod())
    assert binds(result) == {"p": "node-2"}
    assert [[n["Name"] for n in c.body["nodes"]] for c in extender.calls] == [["node-1", "node-2"]]


def test_job_enqueueable_vote_holds_a_job(extender: FakeExtender) -> None:
    """A reject keeps the PodGroup pending (enqueue asks only jobs with minResources, as Volcano); the job's
    wire form carries Volcano's field names."""
    extender.handlers["jobEnqueueable"] = lambda body: (200, {"status": -1})
    result = cycle(
        conf(extender.url, jobEnqueueableVerb="jobEnqueueable"),
        node(name="node-1"),
        pod_group(name="g", min_member=1, min_resources={"cpu": "1"}),
        pod(name="p", group="g"),
    )
    assert binds(result) == {}
    job = extender.calls[0].body["job"]
    task = next(iter(job["Tasks"].values()))
    assert (job["UID"], job["MinAvailable"], task["Name"], task["Status"]) == ("default/g", 1, "p", 1)


def test_victims_are_the_evictees_the_extender_names(extender: FakeExtender) -> None:
    """preemptable answers victims (matched by UID) and a vote."""
    extender.handlers["preemptable"] = lambda body: (200, {"status": 1, "victims": [body["evictees"][1]]})
    ssn = open_session(
        cluster(node(name="n"), pod(name="a", node_name="n"), pod(name="b", node_name="n"), pod(name="c")),
        parse_conf(
            conf(extender.url, preemptableVerb="preemptable").replace(
                "- name: gang", "- name: gang\n    enablePreemptable: false"
            ),
            REGISTRY,
        ),
        REGISTRY,
    )
    tasks = {t.name: t for job in ssn.jobs.values() for t in job.tasks.values()}
    assert ssn.preemptable(tasks["c"], [tasks["a"], tasks["b"]]) == [tasks["b"]]
    close_session(ssn)


@pytest.mark.parametrize(("ignorable", "bound"), [(False, {}), (True, {"p": "node-1"})])
def test_a_timeout_fails_the_point_and_stops_the_sessions_calls(
    extender: FakeExtender, ignorable: bool, bound: dict[str, str]
) -> None:
    """An answer slower than extender.httpTimeout is a failure: the node is refused unless ignorable, and
    the session sends no more calls (one timeout per cycle, not one per node)."""
    extender.delay = 0.5
    text = conf(extender.url, predicateVerb="predicate", ignorable=str(ignorable).lower())
    result = cycle(text, node(name="node-1"), node(name="node-2"), pod(name="p"))
    assert binds(result) == bound
    assert len(extender.calls) == 1


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param((500, {}), id="http-500"),
        pytest.param((200, b"not json"), id="not-json"),
        pytest.param((200, b"[]"), id="not-an-object"),
        pytest.param((200, b'{"padding": "' + b"a" * MAX_ANSWER_BYTES + b'"}'), id="over-10-MiB"),
    ],
)
def test_an_unusable_answer_is_a_failed_call(extender: FakeExtender, answer: Any) -> None:
    """A strict extender's unusable answer refuses the node."""
    extender.handlers["predicate"] = lambda body: answer
    assert binds(cycle(conf(extender.url, predicateVerb="predicate"), node(name="n"), pod(name="p"))) == {}


def test_a_failed_session_open_registers_nothing_unless_ignorable(extender: FakeExtender) -> None:
    """Volcano returns from OnSessionOpen when the call fails and the extender is not ignorable: its points
    are then not consulted at all."""
    extender.handlers["onSessionOpen"] = lambda body: (503, {})
    extender.handlers["predicate"] = lambda body: (200, {"status": "never", "code": 3})
    text = conf(extender.url, onSessionOpenVerb="onSessionOpen", predicateVerb="predicate")
    assert binds(cycle(text, node(name="n"), pod(name="p"))) == {"p": "n"}
    assert extender.verbs() == ["onSessionOpen"]


def test_session_open_and_close_carry_the_snapshot(extender: FakeExtender) -> None:
    """onSessionOpen sends jobs, nodes and queues under Volcano's keys; onSessionClose follows the cycle."""
    text = conf(extender.url, onSessionOpenVerb="open", onSessionCloseVerb="close")
    cycle(text, node(name="n", labels={"volcano.sh/revocable-zone": "rz"}), pod(name="p"))
    assert extender.verbs() == ["open", "close"]
    opened = extender.calls[0].body
    assert sorted(opened) == ["Jobs", "NamespaceInfo", "NodeList", "Nodes", "Queues", "RevocableNodes"]
    assert opened["Nodes"]["n"]["Allocatable"]["MilliCPU"] == 4000.0
    assert list(opened["RevocableNodes"]) == ["n"]
    assert "default" in opened["Queues"]


def test_managed_resources_limit_which_tasks_are_sent(extender: FakeExtender) -> None:
    """With extender.managedResources, a task requesting none of them is never sent."""
    extender.handlers["predicate"] = lambda body: (200, {"status": "no", "code": 3})
    gpu = pod(name="gpu")
    gpu["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": "1"}
    text = conf(extender.url, predicateVerb="predicate") + "        extender.managedResources: [nvidia.com/gpu]\n"
    result = cycle(text, node(name="n", scalars={"nvidia.com/gpu": "4"}), pod(name="cpu"), gpu)
    assert binds(result) == {"cpu": "n"}
    assert {c.body["task"]["Name"] for c in extender.calls} == {"gpu"}


def test_overused_and_job_ready(extender: FakeExtender) -> None:
    """queueOverused and jobReady are asked with Volcano's request shapes; a point without a verb is not."""
    extender.handlers["overused"] = lambda body: (200, {"overused": body["queue"]["Name"] == "default"})
    extender.handlers["ready"] = lambda body: (200, {"status": True})
    ssn: Session = open_session(
        cluster(node(name="n"), pod(name="p", node_name="n")),
        parse_conf(
            conf(extender.url, queueOverusedVerb="overused", jobReadyVerb="ready"),
            REGISTRY,
        ),
        REGISTRY,
    )
    job = next(iter(ssn.jobs.values()))
    assert ssn.overused(ssn.queues[job.queue]) is True
    assert ssn.job_ready(job) is True
    assert extender.verbs() == ["overused", "ready"]
    assert ssn.job_enqueueable(job) is True
    close_session(ssn)


def test_allocations_are_reported_to_the_allocate_verb(extender: FakeExtender) -> None:
    """allocateFuncVerb hears of each task allocated, with the node it went to."""
    text = conf(extender.url, allocateFuncVerb="allocated", deallocateFuncVerb="deallocated")
    cycle(text, node(name="n"), pod(name="p"))
    assert [(c.verb, c.body["task"]["Name"], c.body["task"]["NodeName"]) for c in extender.calls] == [
        ("allocated", "p", "n")
    ]
