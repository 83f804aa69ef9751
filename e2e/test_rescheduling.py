"""Evictions without a preemptor, by a real `py-volcano run` on the real API server: the shuffle action with
rescheduling's lowNodeUtilization (and its interval), and with tdm evicting the preemptable pods of a
revocable zone whose window is closed by the real clock.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from e2e.harness import Nodes, Rest, Scheduler, pod, token, wait_for

pytest_plugins = ["e2e.fixtures"]

RESCHEDULING = """actions: enqueue, allocate, backfill, shuffle
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
  - name: rescheduling
    arguments:
      interval: {interval}
      strategies:
      - name: lowNodeUtilization
        params:
          thresholds: {{cpu: 20, memory: 20}}
          targetThresholds: {{cpu: 50, memory: 50}}
- plugins:
  - name: predicates
  - name: proportion
"""

TDM = """actions: enqueue, allocate, backfill, shuffle
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: predicates
  - name: proportion
  - name: tdm
    arguments:
      tdm.revocable-zone.rz1: "{window}"
"""


def run(control_plane: Any, tmp_path: Any, scheduler: str, text: str, *args: str) -> Scheduler:
    path = tmp_path / f"{token('conf')}.conf"
    path.write_text(text)
    process = Scheduler(
        control_plane.kubeconfig,
        f"--scheduler-name={scheduler}",
        "--cycles=1",
        "--no-leader-elect",
        "--log-level=debug",
        f"--scheduler-conf={path}",
        *args,
        name="shuffle",
    )
    assert process.wait() == 0, process.tail()
    return process


def running_pods(rest: Rest, namespace: str, scheduler: str, node: str, *specs: tuple[str, dict[str, Any]]) -> None:
    """Create pods bound to `node` (kwok runs them) and wait until all run."""
    for name, extra in specs:
        manifest = pod(name, namespace, scheduler=scheduler, node_name=node, memory="1Gi")
        manifest["metadata"].setdefault("annotations", {}).update(extra.get("annotations", {}))
        manifest["spec"].update(extra.get("spec", {}))
        rest.create(manifest)
    names = [name for name, _ in specs]
    wait_for(
        f"{names} running",
        lambda: all(
            ((rest.get("Pod", n, namespace) or {}).get("status") or {}).get("phase") == "Running" for n in names
        ),
    )


def evicted(process: Scheduler, namespace: str) -> list[str]:
    return sorted(line["task"].removeprefix(f"{namespace}/") for line in process.events("task_evicted"))


def leaving(rest: Rest, namespace: str, name: str) -> bool:
    found = rest.get("Pod", name, namespace)
    return found is None or bool(found["metadata"].get("deletionTimestamp"))


def test_low_node_utilization_moves_the_lowest_priority_pods_off_the_busy_node(
    control_plane: Any, rest: Rest, namespace: str, nodes: Nodes, scheduler_name: str, tmp_path: Any
) -> None:
    """busy requests 75% of its CPU, idle nothing: p-low and p-mid are evicted through the API server (the
    room on idle is then used up), p-high stays. With the default interval (5m) a fresh scheduler moves
    nothing: the strategies first run five minutes after it starts."""
    busy, _idle = nodes.add(cpu="4", memory="8Gi"), nodes.add(cpu="4", memory="8Gi")
    classes = {f"{namespace}-high": 100, f"{namespace}-mid": 10}
    for name, value in classes.items():
        rest.create(
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}
        )
    try:
        running_pods(
            rest,
            namespace,
            scheduler_name,
            busy,
            ("p-high", {"spec": {"priorityClassName": f"{namespace}-high"}}),
            ("p-low", {}),
            ("p-mid", {"spec": {"priorityClassName": f"{namespace}-mid"}}),
        )
        waiting = run(control_plane, tmp_path, scheduler_name, RESCHEDULING.format(interval="5m"))
        assert evicted(waiting, namespace) == []
        process = run(control_plane, tmp_path, scheduler_name, RESCHEDULING.format(interval="0s"))
        assert evicted(process, namespace) == ["p-low", "p-mid"]
        wait_for(
            "p-low and p-mid leaving", lambda: leaving(rest, namespace, "p-low") and leaving(rest, namespace, "p-mid")
        )
        assert not leaving(rest, namespace, "p-high")
    finally:
        for name in classes:
            rest.delete("PriorityClass", name)


def test_tdm_evicts_preemptable_pods_of_a_closed_zone_by_the_real_clock(
    control_plane: Any, rest: Rest, namespace: str, nodes: Nodes, scheduler_name: str, tmp_path: Any
) -> None:
    """rz1's window starts two hours from now (in this machine's time zone, which the scheduler reads too),
    so it is closed: the preemptable pod on the revocable node is evicted, the pod marked not preemptable
    and the preemptable pod on an ordinary node stay."""
    revocable = nodes.add(**{"volcano.sh/revocable-zone": "rz1"})
    ordinary = nodes.add()
    preemptable = {"annotations": {"volcano.sh/preemptable": "true"}}
    running_pods(rest, namespace, scheduler_name, revocable, ("batch", preemptable))
    running_pods(
        rest, namespace, scheduler_name, revocable, ("kept", {"annotations": {"volcano.sh/preemptable": "false"}})
    )
    running_pods(rest, namespace, scheduler_name, ordinary, ("elsewhere", preemptable))
    now = datetime.now().astimezone()
    window = f"{(now + timedelta(hours=2)):%H:%M}-{(now + timedelta(hours=3)):%H:%M}"
    process = run(control_plane, tmp_path, scheduler_name, TDM.format(window=window))
    assert evicted(process, namespace) == ["batch"]
    wait_for("batch leaving", lambda: leaving(rest, namespace, "batch"))
    assert not leaving(rest, namespace, "kept") and not leaving(rest, namespace, "elsewhere")
