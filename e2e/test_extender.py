"""The extender plugin in a real `py-volcano run` on the real API server, talking to an HTTP extender the test
serves on 127.0.0.1: placement steered by its predicate and prioritize answers, a strict extender that
times out holding pods while an ignorable one lets them bind, and a victim it names evicted through
the API server.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from e2e.harness import Nodes, Rest, Scheduler, pod, token, wait_for
from tests.extender_server import FakeExtender, serving

pytest_plugins = ["e2e.fixtures"]


def conf(url: str, *, actions: str = "enqueue, allocate", **verbs: str) -> str:
    arguments = "".join(f"        extender.{key}: {value}\n" for key, value in verbs.items())
    return f"""actions: {actions}
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: predicates
  - name: extender
    arguments:
        extender.urlPrefix: {url}
{arguments}"""


@pytest.fixture
def extender() -> Iterator[FakeExtender]:
    """An extender served on loopback for the test."""
    with serving(FakeExtender()) as served:
        yield served


def run(control_plane: Any, tmp_path: Any, scheduler: str, text: str, cycles: int) -> Scheduler:
    path = tmp_path / f"{token('conf')}.conf"
    path.write_text(text)
    process = Scheduler(
        control_plane.kubeconfig,
        f"--scheduler-name={scheduler}",
        f"--cycles={cycles}",
        "--no-leader-elect",
        "--log-level=debug",
        f"--scheduler-conf={path}",
        name="extender",
    )
    assert process.wait() == 0, process.tail()
    return process


def test_predicate_and_prioritize_answers_steer_placement(
    control_plane: Any,
    rest: Rest,
    namespace: str,
    nodes: Nodes,
    scheduler_name: str,
    tmp_path: Any,
    extender: FakeExtender,
) -> None:
    """The extender refuses the first node and scores the third highest: every pod lands on the third; it is
    told when the session opens and closes, and asked with Volcano's request shapes."""
    names = [nodes.add(cpu="8") for _ in range(3)]
    refused, preferred = names[0], names[2]
    extender.handlers["predicate"] = lambda body: (
        200,
        {"status": "reserved for others" if body["node"]["Name"] == refused else "", "code": 3},
    )
    extender.handlers["prioritize"] = lambda body: (200, {"nodeScore": {preferred: 100}})
    for i in range(2):
        rest.create(pod(f"p-{i}", namespace, scheduler=scheduler_name))
    text = conf(
        extender.url,
        onSessionOpenVerb="onSessionOpen",
        onSessionCloseVerb="onSessionClose",
        predicateVerb="predicate",
        prioritizeVerb="prioritize",
    )
    run(control_plane, tmp_path, scheduler_name, text, cycles=1)
    assert {rest.node_of(namespace, f"p-{i}") for i in range(2)} == {preferred}
    verbs = extender.verbs()
    assert verbs[0] == "onSessionOpen" and verbs[-1] == "onSessionClose"
    opened = extender.calls[0].body
    assert set(names) <= set(opened["Nodes"]) and f"{namespace}/p-0" in {
        task["Namespace"] + "/" + task["Name"] for job in opened["Jobs"].values() for task in job["Tasks"].values()
    }
    asked = {call.body["node"]["Name"] for call in extender.calls if call.verb == "predicate"}
    assert asked == set(names)


@pytest.mark.parametrize(("ignorable", "binds"), [(False, False), (True, True)])
def test_an_extender_slower_than_its_timeout(
    control_plane: Any,
    rest: Rest,
    namespace: str,
    nodes: Nodes,
    scheduler_name: str,
    tmp_path: Any,
    extender: FakeExtender,
    ignorable: bool,
    binds: bool,
) -> None:
    """Answers slower than extender.httpTimeout fail: a strict extender holds the pod, an ignorable one lets it
    bind; a cycle waits for one timeout at most (its later calls are not sent)."""
    nodes.add()
    nodes.add()
    extender.delay = 1.0
    rest.create(pod("p", namespace, scheduler=scheduler_name))
    text = conf(extender.url, predicateVerb="predicate", httpTimeout="200ms", ignorable=str(ignorable).lower())
    process = run(control_plane, tmp_path, scheduler_name, text, cycles=2)
    assert bool(rest.node_of(namespace, "p")) is binds
    # Two nodes, two cycles: without the stop after the first failure there would be two calls per cycle.
    assert 1 <= len(extender.calls) <= 2, extender.verbs()
    assert [line["verb"] for line in process.events("extender_call_failed")] == ["predicate"] * len(extender.calls)


def test_the_victim_the_extender_names_is_evicted(
    control_plane: Any,
    rest: Rest,
    namespace: str,
    nodes: Nodes,
    scheduler_name: str,
    tmp_path: Any,
    extender: FakeExtender,
) -> None:
    """preempt asks about both running pods of the full node; the extender names only the second, which is
    evicted on the API server while the first keeps running (gang offers neither, so its tier defers)."""
    node = nodes.add(cpu="2")
    rest.create(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": f"{namespace}-hi"},
            "value": 1000,
        }
    )
    try:
        for name in ("first", "second"):
            rest.create(pod(name, namespace, scheduler=scheduler_name, node_name=node))
        wait_for(
            "both running",
            lambda: all(
                (rest.get("Pod", n, namespace) or {}).get("status", {}).get("phase") == "Running"
                for n in ("first", "second")
            ),
        )
        extender.handlers["preemptable"] = lambda body: (
            200,
            {"status": 1, "victims": [task for task in body["evictees"] if task["Name"] == "second"]},
        )
        rest.create(pod("urgent", namespace, scheduler=scheduler_name, priority_class=f"{namespace}-hi"))
        text = conf(extender.url, actions="enqueue, allocate, preempt", preemptableVerb="preemptable")
        process = run(control_plane, tmp_path, scheduler_name, text, cycles=1)
        assert [line["task"] for line in process.events("task_evicted")] == [f"{namespace}/second"]
        wait_for("second gone or terminating", lambda: _leaving(rest, namespace, "second"))
        assert not _leaving(rest, namespace, "first")
    finally:
        rest.delete("PriorityClass", f"{namespace}-hi")


def _leaving(rest: Rest, namespace: str, name: str) -> bool:
    found = rest.get("Pod", name, namespace)
    return found is None or bool(found["metadata"].get("deletionTimestamp"))
