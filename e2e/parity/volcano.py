"""The two runs of one cluster, vc-scheduler's and py-volcano's, on the same API server, and what each decided.

Both runs reuse the scenario harness (e2e/test_scenarios.py `ScenarioRun`): fresh namespaces and a
scheduler name of its own per run, the cluster cleaned in between. vc-scheduler gets the PodGroups
Volcano's podgroup controller would make for bare pods (`podgroup-<pod uid>`, minMember 1, the queue of
the pod's `scheduling.volcano.sh/queue-name` annotation, minResources the pod's requests) and runs the
scenario's cycles: `--schedule-period` is longer than a cycle's binds take, and the process is killed once
its klog shows the last cycle ended and its binds and evictions had time to land. In a `nodeUsage`
scenario the pending pods wait behind a scheduling gate until vc-scheduler has read Prometheus (its first
session may open before its first metrics query returns, and then the usage plugin passes every node);
the scenario's cycles are counted from the gates' removal.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e.controlplane import free_port
from e2e.harness import ARTIFACTS, Rest, token, wait_for
from e2e.parity.known import RANDOM_TIES, job_of, loosen
from e2e.test_scenarios import SYSTEM_NAMESPACES, ScenarioRun, with_metrics
from py_volcano.api import MEMORY
from py_volcano.api.manifests import pod_requests
from py_volcano.framework import default_conf_text
from py_volcano.simulation.scenario import Scenario

#: Environment variable naming the vc-scheduler binary; unset skips the parity suite.
BINARY_ENV = "VOLCANO_SCHEDULER"

#: Seconds between vc-scheduler cycles: longer than binds and evictions take to reach the API server.
SCHEDULE_PERIOD = 3.0

#: Seconds to wait after the last cycle ended before reading the outcome (binds are asynchronous).
SETTLE = 1.5

GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"

#: The scheduling gate that holds a `nodeUsage` scenario's pending pods until vc-scheduler has metrics.
METRICS_GATE = "parity.py-volcano.io/metrics-read"

#: vc-scheduler's usage plugin logs each node's metrics time at session open; this is the zero time.
NO_METRICS = "metrics time is 0001-01-01"


SKIP_REASON = (
    f"{BINARY_ENV} is unset: the parity suite needs a vc-scheduler built from Volcano's source (docs/parity.md)"
)


def skip_without_volcano() -> pytest.MarkDecorator:
    """Return the mark that skips a parity module, before any control plane starts, when no binary is named."""
    return pytest.mark.skipif(not os.environ.get(BINARY_ENV), reason=SKIP_REASON)


def binary() -> str:
    """Return the vc-scheduler path of `VOLCANO_SCHEDULER`; skip the calling test when it is unset."""
    path = os.environ.get(BINARY_ENV, "")
    if not path:
        pytest.skip(SKIP_REASON)
    if not os.access(path, os.X_OK):
        pytest.fail(f"{BINARY_ENV}={path} is not an executable file", pytrace=False)
    return path


def install_volcano_crds(rest: Rest, vc_binary: str) -> None:
    """Create the CRDs Volcano watches that ours lack (from `crds/` beside the binary, docs/parity.md)."""
    for path in sorted((Path(vc_binary).resolve().parent / "crds").glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        status, answer = rest.request("POST", Rest.path("CustomResourceDefinition"), crd)
        if status not in (201, 409):
            pytest.fail(f"create CRD {path.name}: HTTP {status}: {answer}", pytrace=False)
        name = crd["metadata"]["name"]

        def established(name: str = name) -> bool:
            conditions = ((rest.get("CustomResourceDefinition", name) or {}).get("status") or {}).get("conditions")
            return any(c["type"] == "Established" and c["status"] == "True" for c in conditions or [])

        wait_for(f"CRD {name} Established", established)


PODGROUP_CRD = "podgroups.scheduling.volcano.sh"


def podgroup_status_subresource(rest: Rest, *, enabled: bool) -> None:
    """Serve PodGroup status as a subresource (py-volcano's CRD) or as part of the object (Volcano's).

    vc-scheduler writes a PodGroup's status with a plain update, which a status subresource would drop.
    """
    crd = rest.get("CustomResourceDefinition", PODGROUP_CRD) or {}
    wanted: dict[str, Any] = {"status": {}} if enabled else {}
    if all(version.get("subresources", {}) == wanted for version in crd["spec"]["versions"]):
        return
    for version in crd["spec"]["versions"]:
        version["subresources"] = wanted
    rest.ok("PUT", Rest.path("CustomResourceDefinition", name=PODGROUP_CRD), crd)
    time.sleep(SETTLE)  # the API server rebuilds the PodGroup handler asynchronously


@dataclass
class Decisions:
    """What one scheduler did to a cluster, in scenario keys (`ns/name`)."""

    binds: dict[str, str] = field(default_factory=dict)
    evictions: list[str] = field(default_factory=list)
    phases: dict[str, str] = field(default_factory=dict)

    def differences(self, other: Decisions) -> dict[str, list[str]]:
        """Return, by kind (`bind`, `eviction`, `phase`), each key on which `self` and `other` disagree."""
        found: dict[str, list[str]] = {}
        for kind, mine, theirs in (
            ("bind", self.binds, other.binds),
            ("eviction", dict.fromkeys(self.evictions, "yes"), dict.fromkeys(other.evictions, "yes")),
            ("phase", self.phases, other.phases),
        ):
            keys = sorted(k for k in mine.keys() | theirs.keys() if mine.get(k) != theirs.get(k))
            if keys:
                found[kind] = keys
        return found

    def loosened(self, jobs: dict[str, str]) -> Decisions:
        """Return the decisions up to a random tie (e2e/parity/known.py): nodes and which pod of a job go."""
        binds, evictions = loosen(self.binds, self.evictions, jobs)
        return Decisions(binds, evictions, dict(self.phases))

    def as_dict(self) -> dict[str, Any]:
        """Return the decisions as plain data (for reports and saved divergences)."""
        return {"binds": dict(sorted(self.binds.items())), "evictions": self.evictions, "phases": self.phases}


def read_decisions(run: ScenarioRun) -> Decisions:
    """Read what the run's scheduler did from the API server: binds, evictions, declared PodGroups' phases."""
    decisions = Decisions()
    for obj in run.scenario.objects:
        meta = obj["metadata"]
        key = f"{meta.get('namespace') or 'default'}/{meta['name']}"
        namespace, _, name = run.names.key(key).partition("/")
        if obj["kind"] == "Pod":
            before = str((obj.get("spec") or {}).get("nodeName") or "")
            now = run.rest.get("Pod", name, namespace)
            if before and (now is None or now["metadata"].get("deletionTimestamp")):
                decisions.evictions.append(key)
            elif not before and now is not None and now["spec"].get("nodeName"):
                decisions.binds[key] = str(now["spec"]["nodeName"])
        elif obj["kind"] == "PodGroup":
            written = (run.rest.get("PodGroup", name, namespace) or {}).get("status") or {}
            decisions.phases[key] = str(written.get("phase") or "<none>")
    return decisions


def _quantities(spec: dict[str, Any], name: str) -> dict[str, str]:
    """Return the pod's requests as quantities (Volcano's CalTaskRequests), for a PodGroup's minResources."""
    request = pod_requests(spec, name)
    return {
        dim: str(int(request.get(dim))) if dim == MEMORY else f"{int(request.get(dim))}m" for dim in request.names()
    }


def podgroup_for(pod: dict[str, Any], group: str, namespace: str) -> dict[str, Any]:
    """Return the PodGroup `group` Volcano's podgroup controller makes for a bare pod: minMember 1, the pod's
    requests as minResources, its priority class, the queue of its queue annotation, owned by the pod (when
    it has a uid), Pending."""
    meta = pod["metadata"]
    spec: dict[str, Any] = {"minMember": 1, "minResources": _quantities(pod["spec"], meta["name"])}
    if pod["spec"].get("priorityClassName"):
        spec["priorityClassName"] = pod["spec"]["priorityClassName"]
    if (meta.get("annotations") or {}).get(QUEUE_ANNOTATION):
        spec["queue"] = meta["annotations"][QUEUE_ANNOTATION]
    metadata: dict[str, Any] = {"name": group, "namespace": namespace}
    if meta.get("uid"):
        owner = {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"], "controller": True}
        metadata["ownerReferences"] = [owner]
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": metadata,
        "spec": spec,
        "status": {"phase": "Pending"},
    }


def system_queues(rest: Rest) -> list[str]:
    """Make the `root` and `default` queues vc-scheduler expects exist, Open as Volcano's queue controller
    leaves them (one without a state is opened; a state set is kept); return the names it created."""
    created = []
    for name, reclaimable in (("root", False), ("default", True)):
        queue = rest.get("Queue", name)
        if queue is None:
            spec = {"weight": 1, "reclaimable": reclaimable}
            body = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name}}
            rest.create({**body, "spec": spec, "status": {"state": "Open"}})
            created.append(name)
        elif not (queue.get("status") or {}).get("state"):
            path = Rest.path("Queue", name=name) + "/status"
            rest.ok("PATCH", path, {"status": {"state": "Open"}}, content_type="application/merge-patch+json")
    return created


class VolcanoRun(ScenarioRun):
    """A scenario applied to the API server and played by vc-scheduler."""

    def __init__(self, control_plane: Any, rest: Rest, scenario: Scenario, workdir: Path, vc_binary: str) -> None:
        super().__init__(control_plane, rest, scenario, workdir)
        self.vc_binary = vc_binary
        self.log_path = ARTIFACTS / f"{token('vc-' + scenario.name[:40])}.log"
        self.gated: list[tuple[str, str]] = []  # pending pods held until vc-scheduler read the metrics

    def _create(self, obj: dict[str, Any]) -> float:
        """Create the object as Volcano's controllers would leave it.

        A Queue with no state is Open (the queue controller's doing); a pod with no PodGroup gets the one
        the podgroup controller would make. A pending pod of a `nodeUsage` scenario is gated (`play`).
        """
        if obj["kind"] == "Queue" and not (obj.get("status") or {}).get("state"):
            obj = {**obj, "status": {**(obj.get("status") or {}), "state": "Open"}}
        meta = obj["metadata"]
        if self.scenario.node_usage and obj["kind"] == "Pod" and not obj["spec"].get("nodeName"):
            obj = {**obj, "spec": {**obj["spec"], "schedulingGates": [{"name": METRICS_GATE}]}}
            self.gated.append((meta["namespace"], meta["name"]))
        stamp = super()._create(obj)
        if obj["kind"] == "Pod" and GROUP_ANNOTATION not in (meta.get("annotations") or {}):
            self._own_group(meta["namespace"], meta["name"])
        return stamp

    def _own_group(self, namespace: str, name: str) -> None:
        pod = self.rest.get("Pod", name, namespace) or {}
        group = f"podgroup-{pod['metadata']['uid']}"
        self.rest.create(podgroup_for(pod, group, namespace))
        if namespace in SYSTEM_NAMESPACES:
            self.system_objects.append(("PodGroup", group, namespace))
        patch = {"metadata": {"annotations": {GROUP_ANNOTATION: group}}}
        path = Rest.path("Pod", namespace, name)
        self.rest.ok("PATCH", path, patch, content_type="application/merge-patch+json")

    def play(self) -> None:
        """Run vc-scheduler for the scenario's cycles, then stop it."""
        system_queues(self.rest)
        args = [
            self.vc_binary,
            f"--kubeconfig={self.control_plane.kubeconfig}",
            f"--scheduler-name={self.scheduler}",
            f"--schedule-period={SCHEDULE_PERIOD}s",
            "--leader-elect=false",
            f"--listen-address=127.0.0.1:{free_port()}",
            f"--healthz-address=127.0.0.1:{free_port()}",
            "--cache-dumper=false",
            "-v=4",
        ]
        # Without a configuration of its own a scenario runs py-volcano's default (Volcano's shipped one,
        # with binpack); vc-scheduler's built-in default lacks binpack, so it is given ours.
        conf = self.workdir / f"{self.scheduler}.conf"
        config = self.scenario.scheduler_config
        text = default_conf_text() if config is None else config
        if self.prometheus is not None:  # a `nodeUsage` scenario: the Prometheus `apply` started serves it
            text = with_metrics(text, self.prometheus.url)
        conf.write_text(text)
        args.append(f"--scheduler-conf={conf}")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "wb") as out:
            # PANIC_ON_ERROR=false: Volcano's assertions log instead of exiting (tdm's victims are the node's
            # own task objects, and evicting one makes the node subtract its release from zero)
            env = {**os.environ, "PANIC_ON_ERROR": "false"}
            proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=env)
        try:
            counted_from = self._ungate_after_metrics(proc) if self.gated else 0
            wait_for(
                f"{self.scenario.cycles} vc-scheduler cycles ({self.log_path})",
                lambda: self._cycles_ended() >= counted_from + self.scenario.cycles or proc.poll() is not None,
                timeout=60 + self.scenario.cycles * SCHEDULE_PERIOD,
            )
            assert proc.poll() is None, f"vc-scheduler exited {proc.returncode}:\n{self.tail()}"
            time.sleep(SETTLE)
        finally:
            proc.kill()
            proc.wait(timeout=30)

    def _ungate_after_metrics(self, proc: subprocess.Popen[bytes]) -> int:
        """Wait until a session of vc-scheduler opened with metrics on every node, then, right after a
        cycle ends (the next is a period away), remove the gates; return the cycles ended by then."""

        def metrics_read() -> bool:
            lines = [line for line in self._log().splitlines() if "metrics time is " in line]
            return bool(lines) and all(NO_METRICS not in line for line in lines[-len(self.nodes.names) :])

        wait_for(f"vc-scheduler's metrics read ({self.log_path})", lambda: metrics_read() or proc.poll() is not None)
        ended = self._cycles_ended()
        wait_for(f"a vc-scheduler cycle ended ({self.log_path})", lambda: self._cycles_ended() > ended)
        for namespace, name in self.gated:
            path = Rest.path("Pod", namespace, name)
            ungate = [{"op": "remove", "path": "/spec/schedulingGates"}]
            self.rest.ok("PATCH", path, ungate, content_type="application/json-patch+json")
        return self._cycles_ended()

    def _log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def _cycles_ended(self) -> int:
        return self._log().count("End scheduling ...")

    def tail(self, lines: int = 30) -> str:
        """Return the last lines of vc-scheduler's log."""
        return "\n".join(self._log().splitlines()[-lines:])


@dataclass
class Comparison:
    """One cluster's decisions by both schedulers."""

    name: str
    volcano: Decisions
    py_volcano: Decisions
    tie: str = ""
    """The random tie Volcano breaks in this cluster (e2e/parity/known.py), or empty."""
    jobs: dict[str, str] = field(default_factory=dict)
    """Each pod's job, for comparing evictions up to a tie."""

    @classmethod
    def for_scenario(
        cls, scenario: Scenario, volcano: Decisions, py_volcano: Decisions, *, tie: bool = True
    ) -> Comparison:
        """Compare one scenario's decisions, up to the random tie e2e/parity/known.py names for it (if `tie`)."""
        reason = RANDOM_TIES.get(scenario.name, "") if tie else ""
        return cls(scenario.name, volcano, py_volcano, tie=reason, jobs=job_of(scenario.objects))

    @property
    def differences(self) -> dict[str, list[str]]:
        """Keys on which the schedulers disagree, by kind; empty when they agree (up to `tie`, if any)."""
        if self.tie:
            return self.volcano.loosened(self.jobs).differences(self.py_volcano.loosened(self.jobs))
        return self.volcano.differences(self.py_volcano)

    def report(self) -> str:
        """Return a short text naming each difference and both outcomes."""
        return yaml.safe_dump(
            {
                "case": self.name,
                "random tie, compared up to it": self.tie or None,
                "differences": self.differences,
                "volcano": self.volcano.as_dict(),
                "py-volcano": self.py_volcano.as_dict(),
            },
            sort_keys=False,
        )


class Parity:
    """Plays clusters with both schedulers, one after the other, on one API server."""

    def __init__(self, control_plane: Any, rest: Rest, workdir: Path, vc_binary: str) -> None:
        self.control_plane = control_plane
        self.rest = rest
        self.workdir = workdir
        self.vc_binary = vc_binary

    def compare(self, scenario: Scenario) -> Comparison:
        """Play `scenario` with vc-scheduler, then with py-volcano; return both decisions."""
        volcano_run = VolcanoRun(self.control_plane, self.rest, scenario, self.workdir, self.vc_binary)
        try:
            volcano_run.apply()
            podgroup_status_subresource(self.rest, enabled=False)
            volcano_run.play()
            volcano = read_decisions(volcano_run)
        finally:
            podgroup_status_subresource(self.rest, enabled=True)
            volcano_run.clean()
        py_run = ScenarioRun(self.control_plane, self.rest, scenario, self.workdir)
        try:
            py_run.apply()
            py_run.run()
            py_volcano = read_decisions(py_run)
        finally:
            py_run.clean()
        return Comparison.for_scenario(scenario, volcano, py_volcano)
