"""The operator's commands against the real API server, with `py-volcano run` scheduling: `queues` shows
the figures the scheduler computed, `jobs` lists PodGroups, `explain` says why a pod waits and where it
stands, `queue close` keeps new jobs out of a queue and `queue open` lets them in; `kubectl py-volcano`
runs the same commands."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from e2e.harness import Nodes, Rest, Scheduler, pod, pod_group, py_volcano, queue, token, wait_for
from py_volcano.api.quantity import parse_quantity

pytest_plugins = ["e2e.fixtures"]

EXPLAIN = "scheduling.py-volcano.io/explain"
#: A node selector no node matches: the pods wait with "no node fits", whatever the queue holds.
NOWHERE = {"zone": "nowhere"}


def ctl(control_plane: Any, *args: str, expect: int = 0) -> str:
    """Run `py-volcano ARGS --kubeconfig ...`; return its output, failing on another exit code."""
    done = subprocess.run(
        [py_volcano(), *args, f"--kubeconfig={control_plane.kubeconfig}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == expect, f"py-volcano {' '.join(args)} exited {done.returncode}:\n{done.stderr}"
    return done.stdout


def ctl_json(control_plane: Any, *args: str) -> Any:
    return json.loads(ctl(control_plane, *args, "-o", "json"))


@pytest.fixture
def test_queue(rest: Rest) -> Iterator[str]:
    """A Queue of this test's own, deleted afterwards."""
    name = token("q")
    rest.create(queue(name))
    yield name
    rest.delete("Queue", name)


@pytest.fixture
def scheduler(control_plane: Any, scheduler_name: str) -> Iterator[Scheduler]:
    """`py-volcano run` scheduling this test's pods, a cycle every 0.3 s."""
    with Scheduler(
        control_plane.kubeconfig,
        f"--scheduler-name={scheduler_name}",
        "--schedule-period=0.3",
        "--no-leader-elect",
        "--log-level=debug",
    ) as process:
        yield process


def _stuck_gang(rest: Rest, name: str, namespace: str, scheduler: str, q: str) -> None:
    """A 2-pod gang whose pods no node selects."""
    rest.create(pod_group(name, namespace, min_member=2, queue=q))
    for i in range(2):
        manifest = pod(f"{name}-{i}", namespace, scheduler=scheduler, group=name, cpu="500m")
        manifest["spec"]["nodeSelector"] = NOWHERE
        rest.create(manifest)


def _explained(rest: Rest, namespace: str, group: str) -> dict[str, Any] | None:
    obj = rest.get("PodGroup", group, namespace) or {}
    text = ((obj.get("metadata") or {}).get("annotations") or {}).get(EXPLAIN)
    return json.loads(text) if text else None


def _metric(page: str, name: str, queue_name: str) -> float:
    found = re.search(rf'^{name}\{{queue_name="{queue_name}"\}} (\S+)$', page, re.M)
    assert found, f"{name} of {queue_name} not on /metrics"
    return float(found.group(1))


def test_queues_jobs_and_explain_show_what_the_scheduler_decided(
    control_plane: Any,
    rest: Rest,
    namespace: str,
    nodes: Nodes,
    scheduler_name: str,
    test_queue: str,
    scheduler: Scheduler,
) -> None:
    """A gang that fits runs; two gangs whose pods no node selects wait, first and second in line.
    `queues` shows the deserved share and share the scheduler exports on /metrics, `jobs` the three
    PodGroups, `explain` the reason (no node fits, by node) and each pod's place in line."""
    nodes.add(cpu="4")
    rest.create(pod_group("fits", namespace, min_member=2, queue=test_queue))
    for i in range(2):
        rest.create(pod(f"fits-{i}", namespace, scheduler=scheduler_name, group="fits"))
    _stuck_gang(rest, "first", namespace, scheduler_name, test_queue)
    _stuck_gang(rest, "second", namespace, scheduler_name, test_queue)

    wait_for("fits Running", lambda: (rest.get("PodGroup", "fits", namespace) or {}).get("status", {}).get("phase")
             == "Running", timeout=90)
    first = wait_for("first explained", lambda: _explained(rest, namespace, "first"), timeout=60)
    second = wait_for("second explained", lambda: _explained(rest, namespace, "second"), timeout=60)
    assert (first["reason"], first["action"], first["queuePosition"]) == ("NoNodeFits", "allocate", "1")
    assert second["queuePosition"] == "2"
    assert first["nodes"] == {"node(s) didn't match Pod's node affinity/selector": len(rest.list("Node"))}

    def figures_settled() -> dict[str, Any] | None:
        rows: dict[str, dict[str, Any]] = {row["name"]: row for row in ctl_json(control_plane, "queues")}
        row = rows.get(test_queue)
        if row is None or row["share"] is None or row["podGroups"]["running"] != 1:
            return None
        return row if row["resources"]["cpu"]["allocated"] == "2" else None

    row = wait_for("queue figures written", figures_settled, timeout=60)
    assert row["state"] == "Open" and row["podGroups"]["inqueue"] == 2
    page = scheduler.metrics()
    deserved = _metric(page, "volcano_queue_deserved_milli_cpu", test_queue)
    assert parse_quantity(row["resources"]["cpu"]["deserved"]) * 1000 == pytest.approx(deserved)
    assert row["share"] == round(_metric(page, "volcano_queue_share", test_queue), 3)
    table = ctl(control_plane, "queues")
    assert re.search(rf"^{re.escape(test_queue)}\s+Open\s+1\s+-\s+\S+\s+0\s+2\s+1\s+2/", table, re.M), table

    def job_rows() -> dict[str, tuple[Any, ...]]:
        jobs = ctl_json(control_plane, "jobs", "-n", namespace)
        return {r["name"]: (r["phase"], r["minMember"], r["running"], r["pending"], r["waiting"]) for r in jobs}

    expected = {"fits": ("Running", 2, 2, 0, ""), "first": ("Inqueue", 2, 0, 2, "NoNodeFits"),
                "second": ("Inqueue", 2, 0, 2, "NoNodeFits")}
    # fits is Running once its pods are bound; they start (running 2, pending 0) when kwok marks them Running
    deadline, rows = time.monotonic() + 60, job_rows()
    while rows != expected and time.monotonic() < deadline:
        time.sleep(0.5)
        rows = job_rows()
    assert rows == expected
    assert [r["name"] for r in ctl_json(control_plane, "jobs", "--queue", test_queue)] == ["first", "fits", "second"]

    why = ctl_json(control_plane, "explain", "second-1", "-n", namespace)
    assert (why["waiting"], why["reason"], why["queuePosition"], why["podGroup"]) == (True, "NoNodeFits", "2", "second")
    text = ctl(control_plane, "explain", "pod/second-1", "-n", namespace)
    assert f"2nd in queue {test_queue}" in text, text
    assert "held by:     allocate (NoNodeFits)" in text, text
    assert "change the pods' node selector or affinity, or label nodes to match" in text, text
    assert "does not wait" in ctl(control_plane, "explain", "fits-0", "-n", namespace)
    assert "podgroup missing/none not found" in _failure(control_plane, "explain", "pg/none", "-n", "missing")


def _failure(control_plane: Any, *args: str) -> str:
    done = subprocess.run([py_volcano(), *args, f"--kubeconfig={control_plane.kubeconfig}"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1, done
    return done.stderr


def test_a_closed_queue_enqueues_no_new_job_until_it_is_opened(
    control_plane: Any,
    rest: Rest,
    namespace: str,
    nodes: Nodes,
    scheduler_name: str,
    test_queue: str,
    scheduler: Scheduler,
) -> None:
    """`queue close` sets the state the scheduler honours: a new PodGroup stays Pending and its pod
    unbound, explained as held by enqueue; `queue open` admits and binds it."""
    nodes.add(cpu="4")
    assert ctl(control_plane, "queue", "close", test_queue).strip() == f"queue {test_queue} Closed"
    assert (rest.get("Queue", test_queue) or {})["status"]["state"] == "Closed"
    rest.create(pod_group("late", namespace, min_member=1, queue=test_queue, minResources={"cpu": "1"}))
    rest.create(pod("late-0", namespace, scheduler=scheduler_name, group="late"))

    held = wait_for("late explained", lambda: _explained(rest, namespace, "late"), timeout=60)
    assert (held["reason"], held["action"]) == ("QueueClosed", "enqueue")
    assert (rest.get("PodGroup", "late", namespace) or {})["status"]["phase"] == "Pending"
    assert rest.node_of(namespace, "late-0") == ""
    assert {row["name"]: row["state"] for row in ctl_json(control_plane, "queues")}[test_queue] == "Closed"
    assert f"open the queue: py-volcano queue open {test_queue}" in ctl(control_plane, "explain", "late-0", "-n",
                                                                         namespace)

    assert ctl_json(control_plane, "queue", "open", test_queue)["state"] == "Open"
    wait_for("late-0 bound", lambda: rest.node_of(namespace, "late-0") in nodes.names, timeout=60)
    wait_for("late's explanation removed", lambda: _explained(rest, namespace, "late") is None, timeout=60)
    assert "not found" in _failure(control_plane, "queue", "close", token("absent"))


def test_kubectl_runs_the_commands_as_a_plugin(control_plane: Any, rest: Rest, test_queue: str) -> None:
    """`kubectl py-volcano queues` finds the `kubectl-py_volcano` script on the PATH."""
    kubectl = control_plane.binary("kubectl")
    scripts = Path(py_volcano()).parent
    env = {**os.environ, "PATH": f"{scripts}{os.pathsep}{os.environ.get('PATH', '')}",
           "KUBECONFIG": str(control_plane.kubeconfig)}
    done = subprocess.run([kubectl, "py-volcano", "queues", "-o", "json"], capture_output=True, text=True,
                          env=env, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert test_queue in {row["name"] for row in json.loads(done.stdout)}
    listed = subprocess.run([kubectl, "plugin", "list"], capture_output=True, text=True, env=env, timeout=60,
                            check=False)
    assert "kubectl-py_volcano" in listed.stdout, listed
