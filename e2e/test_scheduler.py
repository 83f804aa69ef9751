"""`py-volcano run` as a real process against the real API server: binding, others' pods, capacity,
PodDisruptionBudgets, leader failover, an API server restart, configuration reloads, the default Queue,
exit codes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import re
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from structlog.testing import capture_logs

from e2e.harness import REPO, Nodes, Rest, Scheduler, node, pod, pod_group, py_volcano, queue, token, wait_for
from py_volcano.cache.client import ApiClient
from py_volcano.cache.leader import LeaderElector
from py_volcano.settings import LeaderSettings

pytest_plugins = ["e2e.fixtures"]

ALLOCATE_ONLY = """actions: enqueue, allocate
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: predicates
"""


def _create_all(rest: Rest, objects: list[dict[str, Any]]) -> None:
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(rest.create, objects))


def _running(rest: Rest, namespace: str, *names: str) -> bool:
    pods = rest.pods(namespace)
    return all(((pods.get(n) or {}).get("status") or {}).get("phase") == "Running" for n in names)


def _nodes_of(rest: Rest, namespace: str) -> dict[str, str]:
    return {name: str(p["spec"].get("nodeName") or "") for name, p in rest.pods(namespace).items()}


def _bound(rest: Rest, namespace: str, name: str) -> bool:
    return bool(_nodes_of(rest, namespace).get(name))


def _exposes(instance: Scheduler, pattern: re.Pattern[str]) -> bool:
    """Whether the instance's /metrics page has a line `pattern` matches."""
    return pattern.search(instance.metrics()) is not None


def _kept(instance: Scheduler, since: datetime | None = None, quiet: float = 1.0) -> bool:
    """The instance's last cycle ended after `since` and kept its session for the fast path, nothing ended
    it since, and no cycle ran for `quiet` seconds."""
    lines = instance.events()
    cycles = [at for at, line in enumerate(lines) if line.get("event") == "cycle_done" and "kept" in line]
    if not cycles or not lines[cycles[-1]]["kept"]:
        return False
    if any(line.get("event") == "fast_path_ended" for line in lines[cycles[-1] + 1 :]):
        return False
    ended = datetime.fromisoformat(str(lines[cycles[-1]]["timestamp"]))
    return (since is None or ended > since) and (datetime.now(UTC) - ended).total_seconds() >= quiet


def _timeline(instance: Scheduler, last: int = 12) -> list[str]:
    """The instance's last cycles, fast-path turns and binds, one short line each (for a failure message)."""
    shown = ("cycle_done", "fast_path", "fast_path_ended", "task_bound")
    lines = [
        line
        for line in instance.events()
        if line.get("event") in shown and (line["event"] != "cycle_done" or "kept" in line)  # the runner's line
    ]
    keys = ("jobs", "left", "binds", "kept", "reason", "task")
    return [
        f"{line['timestamp']} {line['event']} " + " ".join(f"{key}={line[key]}" for key in keys if key in line)
        for line in lines[-last:]
    ]


def _fast_path_placements(instance: Scheduler) -> float:
    """The instance's `volcano_fast_path_placements_total`."""
    found = re.search(r"^volcano_fast_path_placements_total (\S+)$", instance.metrics(), re.MULTILINE)
    assert found, "volcano_fast_path_placements_total is not exposed"
    return float(found.group(1))


def _in_queue(name: str, manifest: dict[str, Any]) -> dict[str, Any]:
    manifest["metadata"]["annotations"] = {"scheduling.volcano.sh/queue-name": name}
    return manifest


def _run_cycles(control_plane: Any, scheduler: str, cycles: int, *args: str) -> Scheduler:
    process = Scheduler(
        control_plane.kubeconfig,
        f"--scheduler-name={scheduler}",
        f"--cycles={cycles}",
        "--no-leader-elect",
        *args,
    )
    code = process.wait()
    assert code == 0, process.tail()
    return process


def test_a_gang_binds_all_or_nothing(
    control_plane: Any, rest: Rest, namespace: str, nodes: Nodes, scheduler_name: str
) -> None:
    """A 3-pod gang of which only two pods fit binds none of them; a 2-pod gang that fits binds both."""
    for _ in range(2):
        nodes.add(cpu="2")
    objects = [pod_group("big", namespace, min_member=3), pod_group("small", namespace, min_member=2)]
    objects += [pod(f"big-{i}", namespace, scheduler=scheduler_name, cpu="2", group="big") for i in range(3)]
    objects += [pod(f"small-{i}", namespace, scheduler=scheduler_name, cpu="1", group="small") for i in range(2)]
    _create_all(rest, objects)

    _run_cycles(control_plane, scheduler_name, 3)

    placed = _nodes_of(rest, namespace)
    assert [placed[f"big-{i}"] for i in range(3)] == ["", "", ""]
    assert all(placed[f"small-{i}"] in nodes.names for i in range(2)), placed
    events = rest.ok("GET", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events")["items"]
    scheduled = {e["regarding"]["name"] for e in events if e.get("reason") == "Scheduled"}
    assert {"small-0", "small-1"} <= scheduled, sorted(scheduled)
    assert not scheduled & {"big-0", "big-1", "big-2"}


def test_pods_of_other_schedulers_are_untouched_but_their_usage_counts(
    control_plane: Any, rest: Rest, namespace: str, nodes: Nodes, scheduler_name: str
) -> None:
    """Another scheduler's pending pod is never written to; another's running pod takes node capacity."""
    name = nodes.add(cpu="4")
    rest.create(pod("theirs-running", namespace, scheduler="default-scheduler", cpu="3", node_name=name))
    pending = rest.create(pod("theirs-pending", namespace, scheduler="someone-else", cpu="1"))
    wait_for("theirs-running Running", lambda: _running(rest, namespace, "theirs-running"))
    _create_all(
        rest,
        [
            pod("ours-big", namespace, scheduler=scheduler_name, cpu="2"),
            pod("ours-small", namespace, scheduler=scheduler_name, cpu="1"),
        ],
    )

    _run_cycles(control_plane, scheduler_name, 2)

    placed = _nodes_of(rest, namespace)
    assert placed == {"theirs-running": name, "theirs-pending": "", "ours-big": "", "ours-small": name}
    after = rest.get("Pod", "theirs-pending", namespace) or {}
    assert after["metadata"]["resourceVersion"] == pending["metadata"]["resourceVersion"], "their pod was written"


def test_a_node_filled_by_a_running_pod_is_never_overcommitted(
    control_plane: Any, rest: Rest, namespace: str, nodes: Nodes, scheduler_name: str
) -> None:
    """Fast cycles (0.2 s) never place more on the free node than it holds, nor anything on the full one;
    once nothing changes no more cycles run; the process is ready, counts its binds in /metrics, and exits
    0 on SIGTERM."""
    full, free = nodes.add(cpu="2"), nodes.add(cpu="2")
    rest.create(pod("filler", namespace, scheduler=scheduler_name, cpu="2", node_name=full))
    wait_for("filler Running", lambda: _running(rest, namespace, "filler"))
    _create_all(rest, [pod(f"p-{i}", namespace, scheduler=scheduler_name, cpu="1") for i in range(3)])

    with Scheduler(
        control_plane.kubeconfig,
        f"--scheduler-name={scheduler_name}",
        "--schedule-period=0.2",
        "--no-leader-elect",
    ) as process:
        process.wait_event("cycle_done", binds=2)

        def bound_and_running() -> bool:
            bound = [name for name, at in _nodes_of(rest, namespace).items() if at and name != "filler"]
            return len(bound) == 2 and _running(rest, namespace, *bound)

        wait_for("the 2 bound pods Running", bound_and_running)
        time.sleep(1.0)  # the last echoes (kwok's Running, our own status writes) are cycled over
        cycles_before = len(process.events("cycle_done"))
        time.sleep(2.0)  # ten periods of an unchanged cluster
        idle = len(process.events("cycle_done")) - cycles_before
        assert idle <= 2, f"{idle} cycles in 10 periods of an unchanged cluster"
        metrics = process.metrics()
        assert re.search(r'^volcano_pod_binds_total\{result="success"\} 2\.0$', metrics, re.M), metrics
        assert process.terminate() == 0, process.tail()

    placed = _nodes_of(rest, namespace)
    assert sorted(placed[f"p-{i}"] for i in range(3)) == ["", free, free]
    cycles = process.events("cycle_done")
    assert sum(line["binds"] for line in cycles) == 2
    # Each cycle's CPU: the worker's within the cycle's wall time, and some spent (the snapshot's too).
    assert all(0 <= line["cycle_cpu_ms"] <= line["duration_ms"] + 0.01 for line in cycles), cycles
    assert min(line["cycle_cpu_ms"] for line in cycles) > 0 and min(line["snapshot_cpu_ms"] for line in cycles) > 0
    assert process.events("scheduler_stopped")


@pytest.fixture
def priority_classes(rest: Rest) -> Iterator[dict[str, str]]:
    """Two PriorityClasses of this test's own: low (100) and high (1000)."""
    names = {"low": token("low"), "high": token("high")}
    for level, value in (("low", 100), ("high", 1000)):
        manifest = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "value": value}
        rest.create(manifest | {"metadata": {"name": names[level]}})
    yield names
    for name in names.values():
        rest.delete("PriorityClass", name)


PREEMPT_CONF = """actions: enqueue, allocate, preempt, backfill
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


def test_a_pod_disruption_budget_blocks_an_eviction_without_breaking_the_loop(
    control_plane: Any,
    rest: Rest,
    namespace: str,
    nodes: Nodes,
    scheduler_name: str,
    priority_classes: dict[str, str],
    tmp_path: Path,
) -> None:
    """preempt evicts a low-priority pod protected by a PDB: the API server answers 429, the eviction
    counts as blocked, the pod stays, and every later cycle still runs."""
    name = nodes.add(cpu="2")
    for group, level in (("low-job", "low"), ("high-job", "high")):
        rest.create(pod_group(group, namespace, min_member=1, priorityClassName=priority_classes[level]))
    low = [
        pod(
            f"low-{i}",
            namespace,
            scheduler=scheduler_name,
            cpu="1",
            group="low-job",
            node_name=name,
            priority_class=priority_classes["low"],
            labels={"app": "low"},
        )
        for i in range(2)
    ]
    _create_all(rest, low)
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "keep-low", "namespace": namespace},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "low"}}},
    }
    rest.create(pdb)
    wait_for("low pods Running", lambda: _running(rest, namespace, "low-0", "low-1"))

    def budget_computed() -> bool:
        status = (rest.get("PodDisruptionBudget", "keep-low", namespace) or {}).get("status") or {}
        return status.get("currentHealthy") == 2 and status.get("disruptionsAllowed") == 0

    wait_for("the PDB's status", budget_computed)
    high = pod("high-0", namespace, scheduler=scheduler_name, cpu="1", group="high-job")
    rest.create(high | {"spec": high["spec"] | {"priorityClassName": priority_classes["high"]}})
    conf = tmp_path / "preempt.conf"
    conf.write_text(PREEMPT_CONF)

    process = _run_cycles(control_plane, scheduler_name, 4, f"--scheduler-conf={conf}", "--schedule-period=0.2")

    blocked = process.events("eviction_blocked")
    assert blocked, process.tail()
    assert {line["task"] for line in blocked} <= {f"{namespace}/low-0", f"{namespace}/low-1"}
    assert not process.events("eviction_failed")
    assert len(process.events("cycle_done")) == 4
    pods = rest.pods(namespace)
    assert all(not pods[f"low-{i}"]["metadata"].get("deletionTimestamp") for i in range(2))
    assert not pods["high-0"]["spec"].get("nodeName")


VGPU_CONF = """actions: enqueue, allocate
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: predicates
  - name: deviceshare
    arguments:
      deviceshare.VGPUEnable: true
      deviceshare.SchedulePolicy: binpack
"""


def test_deviceshare_writes_the_devices_on_the_pod_before_binding_it(
    control_plane: Any, rest: Rest, namespace: str, nodes: Nodes, scheduler_name: str, tmp_path: Path
) -> None:
    """Two vGPU pods of one cycle on a node registering two 16000 cards: each takes its own card, and the
    annotations Volcano's vGPU device plugin reads (`volcano.sh/vgpu-ids-new` and the rest) are on the pod
    on the API server once it is bound."""
    manifest = node(token("vgpu"), cpu="8")
    vgpu = {"volcano.sh/vgpu-number": "20", "volcano.sh/vgpu-memory": "32000", "volcano.sh/vgpu-cores": "200"}
    manifest["status"] = {key: value | vgpu for key, value in manifest["status"].items()}
    register = "".join(f"GPU-e2e-{i},10,16000,NVIDIA-Tesla T4,true,hami-core:" for i in range(2))
    manifest["metadata"]["annotations"]["volcano.sh/node-vgpu-register"] = register
    name = nodes.create(manifest)
    pods = []
    for i in range(2):
        body = pod(f"infer-{i}", namespace, scheduler=scheduler_name)
        limits = {"volcano.sh/vgpu-number": "1", "volcano.sh/vgpu-memory": "10000"}
        body["spec"]["containers"][0]["resources"]["limits"] = limits
        pods.append(body)
    _create_all(rest, pods)
    conf = tmp_path / "vgpu.conf"
    conf.write_text(VGPU_CONF)

    _run_cycles(control_plane, scheduler_name, 1, f"--scheduler-conf={conf}")

    cards = set()
    for i in range(2):
        written = rest.get("Pod", f"infer-{i}", namespace) or {}
        assert written["spec"].get("nodeName") == name, written["spec"]
        annotations = written["metadata"].get("annotations") or {}
        ids = annotations.get("volcano.sh/vgpu-ids-new", "")
        assert re.fullmatch(r"GPU-e2e-[01],NVIDIA,10000,0:", ids), annotations
        assert annotations["volcano.sh/devices-to-allocate"] == ids
        assert annotations["volcano.sh/vgpu-node"] == name
        assert annotations["volcano.sh/bind-phase"] == "allocating"
        cards.add(ids)
    assert len(cards) == 2


def _lease_holder(rest: Rest, namespace: str, name: str) -> str | None:
    lease = rest.get("Lease", name, namespace)
    return None if lease is None else str(lease["spec"].get("holderIdentity") or "")


def _timestamp(line: dict[str, Any]) -> float:
    return datetime.fromisoformat(str(line["timestamp"]).replace("Z", "+00:00")).timestamp()


def test_a_killed_leader_is_replaced_and_no_pod_is_bound_twice(
    control_plane: Any, rest: Rest, namespace: str, nodes: Nodes, scheduler_name: str
) -> None:
    """SIGKILL the leader while it binds a batch: the standby takes over within the lease duration,
    binds the rest, and no pod is bound by both (nor refused as already bound)."""
    for _ in range(2):
        nodes.add(cpu="100", memory="64Gi", pods="500")
    lease = token("lease")
    common = (
        f"--scheduler-name={scheduler_name}",
        f"--leader-elect-namespace={namespace}",
        f"--leader-elect-lease-name={lease}",
        "--schedule-period=0.5",
        "--log-level=debug",
    )
    with Scheduler(control_plane.kubeconfig, *common, "--bind-concurrency=2", name="leader") as first:
        first.wait_event("leader_elected")
        with Scheduler(control_plane.kubeconfig, *common, name="standby") as second:
            second.wait_event("cache_synced")
            second.wait_event("leader_observed")
            _create_all(rest, [pod(f"p-{i}", namespace, scheduler=scheduler_name, cpu="100m") for i in range(300)])
            first.wait_event("task_bound", timeout=60)
            first.kill()
            killed_at = time.time()
            elected = second.wait_event("leader_elected", timeout=40)
            takeover = _timestamp(elected) - killed_at
            wait_for("all pods bound", lambda: all(_nodes_of(rest, namespace).values()), timeout=90)
            assert second.terminate() == 0, second.tail()
            by_first, by_second = set(first.bound()), set(second.bound())
    print(f"takeover {takeover:.1f}s after SIGKILL; leader bound {len(by_first)}, standby {len(by_second)}")
    assert 0 < takeover <= 16.0, f"standby took over {takeover:.1f}s after the leader died"
    assert by_second, "the standby bound nothing: the leader finished before it was killed"
    assert not by_first & by_second
    assert not [line for line in second.events("bind_failed")], second.events("bind_failed")
    assert _lease_holder(rest, namespace, lease) == "", "the Lease was not released on SIGTERM"


def test_a_leader_whose_lease_is_taken_stops_scheduling_until_the_lease_expires(
    control_plane: Any, rest: Rest, namespace: str, nodes: Nodes, scheduler_name: str
) -> None:
    """Another holder writes the Lease: at its next renewal the leader steps down and runs no cycle,
    binds nothing; when the intruder's Lease expires (15 s, never renewed) it leads and binds again."""
    nodes.add(cpu="8")
    lease = token("lease")
    with Scheduler(
        control_plane.kubeconfig,
        f"--scheduler-name={scheduler_name}",
        f"--leader-elect-namespace={namespace}",
        f"--leader-elect-lease-name={lease}",
        "--schedule-period=0.2",
    ) as process:
        process.wait_event("leader_elected")
        taken = rest.get("Lease", lease, namespace) or {}
        taken_at = time.time()
        renew = datetime.fromtimestamp(taken_at, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        taken["spec"] |= {"holderIdentity": "intruder", "renewTime": renew, "leaseDurationSeconds": 15}
        rest.ok("PUT", Rest.path("Lease", namespace, lease), taken)
        lost = process.wait_event("leadership_lost", timeout=10)
        rest.create(pod("late", namespace, scheduler=scheduler_name))
        wait_for("leading again", lambda: len(process.events("leader_elected")) == 2, timeout=30)
        regained = process.events("leader_elected")[1]
        between = (_timestamp(lost), _timestamp(regained))
        idle_cycles = sum(1 for line in process.events("cycle_done") if between[0] < _timestamp(line) < between[1])
        wait_for("late bound", lambda: rest.node_of(namespace, "late"), timeout=10)
        assert process.terminate() == 0, process.tail()
    print(
        f"stepped down {_timestamp(lost) - taken_at:.1f}s after the Lease was taken, led again after "
        f"{_timestamp(regained) - taken_at:.1f}s"
    )
    assert _timestamp(lost) - taken_at <= 2.5, "the leader kept leading after losing its Lease"
    assert idle_cycles <= 1, f"{idle_cycles} cycles ended without the Lease (one may have begun before)"
    assert 13.0 <= _timestamp(regained) - taken_at <= 17.0


def test_a_release_during_a_renewal_waits_for_it_and_frees_the_lease(
    control_plane: Any, rest: Rest, namespace: str
) -> None:
    """SIGTERM may come while the leader's renewal is on the wire: the release waits for that write and
    then empties the Lease's holder. (A release that read the Lease before the renewal wrote it got 409
    Conflict and left the Lease held until it expired: CI saw it once in the chart's upgrade test.) The
    renewal's PUT is held on its way to the real API server until the release's own PUT is about to go
    out, or a second at most: the order in which, without the wait, the release's write is the stale one."""
    lease = token("lease")

    async def scenario() -> tuple[bool, list[str]]:
        client = await ApiClient.connect(kubeconfig=str(control_plane.kubeconfig))
        settings = LeaderSettings(namespace=namespace, lease_name=lease, identity="e2e-leader")
        elector = LeaderElector(client, settings)
        send = client.request
        release_writes, renewal_written = asyncio.Event(), asyncio.Event()
        puts = 0

        async def on_the_wire(method: str, path: str, **kwargs: Any) -> Any:
            nonlocal puts
            if method != "PUT" or path != elector.path:
                return await send(method, path, **kwargs)
            puts += 1
            if puts == 1:  # the renewal
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(release_writes.wait(), timeout=1.0)
                try:
                    return await send(method, path, **kwargs)
                finally:
                    renewal_written.set()
            release_writes.set()
            await renewal_written.wait()
            return await send(method, path, **kwargs)

        try:
            assert await elector.try_acquire_or_renew()
            setattr(client, "request", on_the_wire)  # noqa: B010 (an instance attribute, for this test)
            with capture_logs() as logs:
                renewal = asyncio.create_task(elector.try_acquire_or_renew())
                await asyncio.sleep(0.05)
                await elector.release()
                await renewal
            return elector.is_leader(), [str(line["event"]) for line in logs]
        finally:
            await client.close()

    leading, events = asyncio.run(scenario())
    assert "lease_released" in events and "lease_release_failed" not in events, events
    assert not leading
    assert _lease_holder(rest, namespace, lease) == "", "the Lease is still held after the release"


def test_an_api_server_restart_under_load_loses_no_pod_and_binds_nothing_twice(
    control_plane: Any, rest: Rest, namespace: str, nodes: Nodes, scheduler_name: str
) -> None:
    """Pods created before, during and after a kube-apiserver restart are all bound, each once."""
    if getattr(control_plane, "external", False):
        pytest.skip("restarting the API server needs the local control plane (E2E_KUBECONFIG is set)")
    for _ in range(2):
        nodes.add(cpu="100", memory="64Gi", pods="500")
    with Scheduler(
        control_plane.kubeconfig,
        f"--scheduler-name={scheduler_name}",
        "--no-leader-elect",
        "--schedule-period=0.3",
        "--bind-concurrency=4",
        "--log-level=debug",
    ) as process:
        process.wait_event("cache_synced")
        _create_all(rest, [pod(f"a-{i}", namespace, scheduler=scheduler_name, cpu="100m") for i in range(150)])
        process.wait_event("task_bound")
        downtime = control_plane.restart_apiserver(downtime=2.0)
        _create_all(rest, [pod(f"b-{i}", namespace, scheduler=scheduler_name, cpu="100m") for i in range(150)])
        wait_for("all 300 pods bound", lambda: all(_nodes_of(rest, namespace).values()), timeout=120)
        assert len(rest.pods(namespace)) == 300
        assert process.proc.poll() is None, process.tail()
        assert process.terminate() == 0, process.tail()
        bound = process.bound()
    print(f"API server down {downtime:.1f}s; {len(bound)} binds logged")
    assert len(bound) == len(set(bound)), "a pod was bound twice"
    assert not [line for line in process.events("bind_failed") if line.get("status") == 409]


def _swap_conf(directory: Path, text: str) -> None:
    """Replace the configuration the way a ConfigMap volume does: a new dir, then swap the ..data link."""
    version = directory / f"..{token('v')}"
    version.mkdir()
    (version / "volcano-scheduler.conf").write_text(text)
    staging = directory / "..data_tmp"
    staging.symlink_to(version.name)
    os.replace(staging, directory / "..data")


def test_a_broken_configuration_file_keeps_the_previous_configuration(
    control_plane: Any, rest: Rest, namespace: str, nodes: Nodes, scheduler_name: str, tmp_path: Path
) -> None:
    """A ConfigMap-style swap to a broken file is logged and scheduling goes on with the previous one;
    a later valid file (no allocate action) takes effect."""
    name = nodes.add(cpu="8")
    _swap_conf(tmp_path, ALLOCATE_ONLY)
    (tmp_path / "volcano-scheduler.conf").symlink_to("..data/volcano-scheduler.conf")
    with Scheduler(
        control_plane.kubeconfig,
        f"--scheduler-name={scheduler_name}",
        f"--scheduler-conf={tmp_path / 'volcano-scheduler.conf'}",
        "--schedule-period=0.2",
        "--no-leader-elect",
    ) as process:
        rest.create(pod("p-1", namespace, scheduler=scheduler_name))
        wait_for("p-1 bound", lambda: rest.node_of(namespace, "p-1"))

        broken = (
            "actions: enqueue, allocate\ntiers:\n- plugins:\n  - name: binpack\n    arguments:\n"
            "      binpack.weight: abc\n"
        )
        _swap_conf(tmp_path, broken)
        invalid = process.wait_event("scheduler_conf_invalid")
        assert "plugin binpack: argument binpack.weight: 'abc' is not an integer" in invalid["reason"]
        rest.create(pod("p-2", namespace, scheduler=scheduler_name))
        wait_for("p-2 bound under the previous configuration", lambda: rest.node_of(namespace, "p-2"))

        _swap_conf(tmp_path, "actions: enqueue\ntiers:\n- plugins:\n  - name: gang\n")
        process.wait_event("scheduler_conf_reloaded", actions=["enqueue"])
        rest.create(pod("p-3", namespace, scheduler=scheduler_name))
        process.wait_event("cycle_done", jobs=3)
        time.sleep(2.0)
        assert rest.node_of(namespace, "p-3") == ""
        assert process.terminate() == 0, process.tail()
    assert rest.node_of(namespace, "p-1") == rest.node_of(namespace, "p-2") == name


def _service_account_kubeconfig(control_plane: Any, rest: Rest, namespace: str, account: str, path: Path) -> Path:
    """Write a kubeconfig that authenticates as ServiceAccount `namespace/account` (a TokenRequest token)."""
    admin = yaml.safe_load(Path(control_plane.kubeconfig).read_text())
    cluster = admin["clusters"][0]["cluster"]
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}}
    answer = rest.ok("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token", request)
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "e2e", "cluster": cluster}],
        "users": [{"name": account, "user": {"token": answer["status"]["token"]}}],
        "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": account, "namespace": namespace}}],
        "current-context": "e2e",
    }
    path.write_text(yaml.safe_dump(config))
    return path


def test_the_documented_rbac_is_all_the_scheduler_needs(
    control_plane: Any, rest: Rest, namespace: str, nodes: Nodes, scheduler_name: str, tmp_path: Path
) -> None:
    """As a ServiceAccount holding only the chart's ClusterRole and leader-election Role (the RBAC table of
    docs/operations.md), the scheduler syncs, leads, creates the default Queue, binds, writes status and
    events, and the API server refuses it nothing."""
    docs = [d for d in yaml.safe_load_all((REPO / "deploy" / "py-volcano.yaml").read_text()) if d]
    roles = {d["metadata"]["name"]: d["rules"] for d in docs if d["kind"] == "ClusterRole"}
    cluster_rules = roles["py-volcano"]
    lease_rules = next(d["rules"] for d in docs if d["kind"] == "Role")
    account = token("sched")
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    subject = [{"kind": "ServiceAccount", "name": account, "namespace": namespace}]
    rest.ok("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts", {"metadata": {"name": account}})
    rest.ok("POST", f"{rbac}/clusterroles", {"metadata": {"name": account}, "rules": cluster_rules})
    try:
        role_ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": account}
        binding = {"metadata": {"name": account}, "roleRef": role_ref, "subjects": subject}
        rest.ok("POST", f"{rbac}/clusterrolebindings", binding)
        rest.ok("POST", f"{rbac}/namespaces/{namespace}/roles", {"metadata": {"name": account}, "rules": lease_rules})
        role_binding = binding | {"roleRef": role_ref | {"kind": "Role"}}
        rest.ok("POST", f"{rbac}/namespaces/{namespace}/rolebindings", role_binding)
        kubeconfig = _service_account_kubeconfig(control_plane, rest, namespace, account, tmp_path / "sa.kubeconfig")
        rest.delete("Queue", "default")
        nodes.add(cpu="2")
        rest.create(pod_group("gang", namespace, min_member=2))
        _create_all(rest, [pod(f"g-{i}", namespace, scheduler=scheduler_name, group="gang") for i in range(2)])
        rest.create(pod("too-big", namespace, scheduler=scheduler_name, cpu="8"))

        process = Scheduler(
            kubeconfig, f"--scheduler-name={scheduler_name}", f"--leader-elect-namespace={namespace}", "--cycles=3"
        )
        code = process.wait()
    finally:
        rest.request("DELETE", f"{rbac}/clusterrolebindings/{account}")
        rest.request("DELETE", f"{rbac}/clusterroles/{account}")
    log = process.log_path.read_text()
    assert code == 0, process.tail()
    assert "forbidden" not in log.lower(), [line for line in log.splitlines() if "forbidden" in line.lower()]
    assert rest.node_of(namespace, "g-0") and rest.node_of(namespace, "g-1")
    assert rest.get("Queue", "default") is not None
    written = (rest.get("PodGroup", "gang", namespace) or {}).get("status") or {}
    assert written.get("phase") == "Running", written
    too_big = rest.get("Pod", "too-big", namespace) or {}
    conditions = {c["type"]: c for c in too_big["status"].get("conditions") or []}
    assert conditions.get("PodScheduled", {}).get("status") == "False", too_big["status"]


def test_two_shard_instances_bind_each_pod_once_on_their_own_nodes_within_queue_capability(
    control_plane: Any, rest: Rest, namespace: str, nodes: Nodes, scheduler_name: str
) -> None:
    """Two instances on two NodeShards filled from node labels by `py-volcano shard`: every pod is bound
    exactly once, each instance only onto its shard's nodes, and a queue's capability holds across both
    (each counts the pods the other bound)."""
    import subprocess

    label = token("pool")
    # Each shard holds every pod of the test (24 of 500m), whichever instance owns how many: a pod its owner's
    # shard cannot hold waits for another instance's takeover, not for the fast path.
    shard_nodes = {shard: [nodes.add(cpu="8", pool=f"{label}-{shard}") for _ in range(2)] for shard in "ab"}
    shards = {shard: f"{label}-{shard}" for shard in "ab"}
    command = [py_volcano(), "shard", f"--kubeconfig={control_plane.kubeconfig}"]
    command += [f"--shard={name}=pool={name}" for name in shards.values()]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert yaml.safe_load(result.stdout) == {name: 2 for name in shards.values()}
    limited = token("q")
    rest.create(queue(limited, capability={"cpu": "3"}))

    try:
        instances = [
            Scheduler(
                control_plane.kubeconfig,
                f"--scheduler-name={scheduler_name}",
                "--no-leader-elect",
                "--schedule-period=0.5",
                "--log-level=debug",
                "--scheduler-sharding-mode=hard",
                f"--scheduler-sharding-name={shards[shard]}",
                # pods stay one-pod jobs: the controller of either instance may give a pod its PodGroup
                # before the owner's fast path takes it, and a pod in a PodGroup waits for a cycle
                "--no-podgroup-controller",
                name=f"shard-{shard}",
            )
            for shard in "ab"
        ]
        with instances[0] as first, instances[1] as second:
            first.wait_event("node_shard_changed", nodes=2)
            second.wait_event("node_shard_changed", nodes=2)
            objects = [pod(f"p-{i}", namespace, scheduler=scheduler_name, cpu="500m") for i in range(16)]
            queued = [pod(f"q-{i}", namespace, scheduler=scheduler_name, cpu="500m") for i in range(6)]
            objects += [_in_queue(limited, manifest) for manifest in queued]
            _create_all(rest, objects)
            wait_for("all pods bound", lambda: all(_nodes_of(rest, namespace).values()), timeout=90)
            # Each instance counts the other's binds once their echoes reach its watch: until then it may
            # still place a pod of the queue (an instance cannot count a bind it has not seen).
            full = re.compile(rf'^volcano_queue_allocated_milli_cpu\{{queue_name="{limited}"\}} 3000\.0$', re.M)
            for instance in (first, second):
                wait_for("the queue counted full", functools.partial(_exposes, instance, full), timeout=30)
            # the queue is full (6 x 500m = its capability): more of its pods wait in both shards
            late = [pod(f"late-{i}", namespace, scheduler=scheduler_name, cpu="500m") for i in range(2)]
            _create_all(rest, [_in_queue(limited, manifest) for manifest in late])
            # both instances idle, their sessions kept though the late pods wait: a pod of the default queue
            # goes to the fast path of the instance that owns it, which counts the other's binds instead of
            # waiting for a cycle
            before = sum(_fast_path_placements(instance) for instance in (first, second))
            settled = None
            for i in range(2):
                for instance in (first, second):
                    idle = functools.partial(_kept, instance, settled)
                    wait_for(f"{instance.log_path.name} idle, its session kept", idle)
                _create_all(rest, [pod(f"fast-{i}", namespace, scheduler=scheduler_name, cpu="500m")])
                # every change to a pod (the bind's echo, kwok's Running) starts a cycle at the next period,
                # which would take a pod arriving meanwhile: the next pod comes once one ran after them all
                wait_for(f"fast-{i} running", functools.partial(_running, rest, namespace, f"fast-{i}"))
                settled = datetime.now(UTC)
            fast = sum(_fast_path_placements(instance) for instance in (first, second)) - before
            placed = _nodes_of(rest, namespace)
            bound = {
                shard: instance.events("task_bound") for shard, instance in zip("ab", (first, second), strict=True)
            }
            conflicts = [line for instance in (first, second) for line in instance.events("bind_failed")]
    finally:
        rest.delete("Queue", limited)
    assert placed["late-0"] == placed["late-1"] == "", placed
    by_shard = {shard: {str(line["task"]) for line in lines} for shard, lines in bound.items()}
    assert not by_shard["a"] & by_shard["b"], "a pod was bound by both instances"
    assert by_shard["a"] | by_shard["b"] == {f"{namespace}/{name}" for name, host in placed.items() if host}
    for shard, lines in bound.items():
        assert {line["node"] for line in lines} <= set(shard_nodes[shard]), (shard, lines)
    assert all(line["status"] == 409 for line in conflicts), conflicts  # only the other instance's wins
    timelines = {instance.log_path.name: _timeline(instance) for instance in (first, second)}
    assert fast == 2, ("the fast path placed the pods that came while both instances were idle", timelines)
    print(f"bound by shard a: {len(by_shard['a'])}, by shard b: {len(by_shard['b'])}, conflicts: {len(conflicts)}")


def test_pods_arriving_between_cycles_are_placed_by_the_fast_path_within_queue_capability(
    control_plane: Any, rest: Rest, namespace: str, nodes: Nodes, scheduler_name: str
) -> None:
    """With cycles a minute apart, pods without a PodGroup created after the first cycle are bound within
    seconds by the fast path, through their queue's quota: of three 1-CPU pods in a queue capped at 2 CPU,
    two are bound by no cycle and the third waits (it starts a cycle at the gap, which places nothing)."""
    nodes.add(cpu="4")
    if rest.get("Queue", "default") is None:  # else the scheduler creates it: a change its kept session misses
        rest.create(queue("default"))
    limited = token("q")
    rest.create(queue(limited, capability={"cpu": "2"}))

    try:
        with Scheduler(
            control_plane.kubeconfig,
            f"--scheduler-name={scheduler_name}",
            "--no-leader-elect",
            "--schedule-period=60",
            "--no-podgroup-controller",  # its PodGroups are new work, which starts a cycle at the gap
            "--log-level=debug",
        ) as process:
            process.wait_event("cycle_done")
            for name in ("f-0", "f-1", "f-2"):
                rest.create(_in_queue(limited, pod(name, namespace, scheduler=scheduler_name, cpu="1")))
                if name != "f-2":
                    wait_for(f"{name} bound", functools.partial(_bound, rest, namespace, name), timeout=15)
            process.wait_event("fast_path", left=1)
            time.sleep(1)  # the cycle the pod left for starts at the gap (0.1 s) and places nothing
            placed = _nodes_of(rest, namespace)
            cycles = [line for line in process.events("cycle_done") if "jobs" in line]
            exposition = process.metrics()
    finally:
        rest.delete("Queue", limited)
    assert placed["f-2"] == "", placed
    assert [line["binds"] for line in cycles] == [0, 0], cycles
    assert re.search(r"^volcano_fast_path_placements_total 2\.0$", exposition, re.MULTILINE), exposition
    assumed = r'^volcano_task_scheduling_latency_milliseconds_count\{stage="Assumed"\} (\S+)$'
    bound = re.search(assumed, exposition, re.MULTILINE)
    assert bound is not None and float(bound.group(1)) == 2.0


def test_the_default_queue_is_created_when_missing(control_plane: Any, rest: Rest, scheduler_name: str) -> None:
    """Without a `default` Queue the scheduler creates one: weight 1, reclaimable."""
    rest.delete("Queue", "default")
    wait_for("no default queue", lambda: rest.get("Queue", "default") is None)

    _run_cycles(control_plane, scheduler_name, 1)

    created = rest.get("Queue", "default")
    assert created is not None
    assert created["spec"]["weight"] == 1
    assert created["spec"]["reclaimable"] is True


def test_other_queues_are_left_alone(control_plane: Any, rest: Rest, scheduler_name: str) -> None:
    """An existing Queue keeps its spec: the scheduler only creates `default`."""
    name = token("q")
    rest.create(queue(name, weight=3))
    try:
        _run_cycles(control_plane, scheduler_name, 1)
        assert (rest.get("Queue", name) or {})["spec"]["weight"] == 3
    finally:
        rest.delete("Queue", name)


def test_a_metrics_address_in_use_exits_2(control_plane: Any, rest: Rest, scheduler_name: str) -> None:
    """A --listen-address that cannot be listened on is a configuration error: exit 2, named in the log."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        process = Scheduler(
            control_plane.kubeconfig,
            f"--scheduler-name={scheduler_name}",
            "--no-leader-elect",
            port=busy.getsockname()[1],
        )
        code = process.wait()
    assert code == 2, process.tail()
    assert any("cannot listen" in line.get("reason", "") for line in process.events("task_failed"))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--scheduler-conf=/nonexistent/volcano.conf"], "cannot read", id="missing-conf"),
        pytest.param(["--scheduler-conf={broken}"], "no-such-action", id="broken-conf"),
        pytest.param(["--kubeconfig=/nonexistent/kubeconfig"], "kubeconfig", id="missing-kubeconfig"),
        pytest.param(["--schedule-period=0"], "must be > 0", id="bad-period"),
        pytest.param(["--listen-address=8080"], "HOST:PORT", id="bad-address"),
    ],
)
def test_bad_usage_exits_2(args: list[str], message: str, tmp_path: Path) -> None:
    """Unusable flags, configuration or kubeconfig stop `py-volcano run` at once with exit code 2."""
    import subprocess

    broken = tmp_path / "broken.conf"
    broken.write_text("actions: enqueue, no-such-action\n")
    command = [py_volcano(), "run", *(arg.format(broken=broken) for arg in args)]
    if not any(arg.startswith("--kubeconfig") for arg in args):
        command.append(f"--kubeconfig={tmp_path / 'unused-kubeconfig'}")
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
