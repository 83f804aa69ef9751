"""Every scenario file on the real API server: its objects applied, `py-volcano run --cycles N`, its `expect`.

Scenario files: tests/scenarios/*.yaml and every folder listed in $E2E_SCENARIO_DIR (separated by
the OS path separator); a listed folder that holds no scenario stops collection (tests/scenario_files.py).
The format and what each expectation means: docs/scenarios.md.

How the real run is set up (docs/scenarios.md, "Between cycles" and "On a real API server"):
* each scenario gets fresh namespaces (`<prefix>-<its namespace>`, kube-system excepted, whose name
  conformance reads; keys are mapped back for the checks),
  a scheduler name of its own, no Queue but its own (all Queues are deleted first, the scheduler
  creates `default` when the scenario has none), and only its own nodes (every kwok node is deleted
  first). Nodes are kwok fake nodes carrying the manifest's status (a NotReady one is not kwok's, which
  would make it Ready); a manifest's `status` is written through the status subresource; pods the
  manifest shows Running are waited for until Running. Queues, PodGroups and Pods are created in
  listing order one second apart, so creationTimestamps order them as listing positions do in the
  simulator. Every other kind the scenario holds (RuntimeClasses, LimitRanges, ResourceQuotas, ...) is
  created first, through the API server's discovery, so its admission plugins change the pods as
  `py-volcano simulate` plays them (docs/scenarios.md, "What the API server does").
* a scenario with `nodeUsage` gets a Prometheus of its own, scraping a node-exporter stand-in that
  serves that usage (e2e/node_exporter.py), waited for until it answers the usage plugin's queries
  with it; the scheduler's configuration gets a `metrics` section pointing at it.
* the scheduler runs exactly `cycles` cycles; each starts once the previous one's binds and evictions
  are observed in its cache. A scenario's `now` is its `--clock-start`.

Where each expectation is read (the same `py_volcano.simulation.expect.check` judges them):
* `bound`, `unbound`: the pods' `spec.nodeName` on the API server after the run;
* `boundCount`, `evicted*`: the binds and evictions the scheduler logged (`task_bound`, `task_evicted`);
* `podGroupPhase`: the PodGroup `status.phase` the scheduler wrote;
* `queues`: the scheduler's /metrics, scraped after its last cycle (`volcano_queue_*` gauges; the
  capability gauge is the real capability).
"""

from __future__ import annotations

import copy
import os
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import ExitStack
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from e2e.controlplane import KWOK_NODE_ANNOTATION, KWOK_NODE_ANNOTATION_VALUE
from e2e.harness import KINDS, Nodes, Rest, Scheduler, create_namespace, token, wait_for
from e2e.node_exporter import measured
from e2e.prometheus import Prometheus
from py_volcano.api import CPU, MEMORY, QueueFigures, Resource
from py_volcano.api.quantity import parse_quantity
from py_volcano.simulation.expect import Outcome, check
from py_volcano.simulation.scenario import Scenario, load_scenario
from tests.scenario_files import SCENARIO_DIR, configured_dirs, scenario_files

pytest_plugins = ["e2e.fixtures"]

FILES = scenario_files(SCENARIO_DIR, *configured_dirs(os.environ))

#: Scenarios a real API server cannot play as written, and why (strict: once fixed, drop the entry).
DIVERGENT: dict[str, str] = {}

#: Created in listing order, one second apart; every other kind is created first, in any order.
_ORDERED = ("Queue", "PodGroup", "Pod")

#: Label on every scenario Node (kwok-managed or not), so a later run may delete it.
SCENARIO_LABEL = "py-volcano.e2e/scenario"


#: Namespaces whose name carries meaning (conformance protects kube-system): used as they are.
SYSTEM_NAMESPACES = frozenset({"kube-system"})


class Names:
    """The scenario's namespaces as this run's fresh ones, and back."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def namespace(self, name: str) -> str:
        """Return the real namespace of the scenario's `name`."""
        return name if name in SYSTEM_NAMESPACES else f"{self.prefix}-{name}"

    def key(self, key: str) -> str:
        """Return the real `ns/name` of a scenario key."""
        namespace, _, name = key.partition("/")
        return f"{self.namespace(namespace)}/{name}"

    def scenario_key(self, key: str) -> str:
        """Return the scenario's `ns/name` of a real key."""
        namespace, _, name = key.partition("/")
        return f"{namespace.removeprefix(self.prefix + '-')}/{name}"


class ApiCluster:
    """What `check` reads of a cluster (`pod(key)`), answered by the API server in scenario terms."""

    def __init__(self, rest: Rest, names: Names) -> None:
        self.rest = rest
        self.names = names

    def pod(self, key: str) -> dict[str, Any] | None:
        """Return the pod `ns/name` (scenario namespace) as the API server has it now."""
        namespace, _, name = self.names.key(key).partition("/")
        return self.rest.get("Pod", name, namespace)


class Discovery:
    """Where the API server serves a kind: (collection prefix, plural, namespaced), read from discovery."""

    def __init__(self, rest: Rest) -> None:
        self.rest = rest
        self._groups: dict[str, dict[str, tuple[str, bool]]] = {}

    def resource(self, obj: Mapping[str, Any]) -> tuple[str, str, bool]:
        """Return (prefix, plural, namespaced) of the manifest's apiVersion and kind."""
        api_version, kind = str(obj["apiVersion"]), str(obj["kind"])
        prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        if prefix not in self._groups:
            listing = self.rest.ok("GET", prefix)
            self._groups[prefix] = {
                r["kind"]: (r["name"], bool(r["namespaced"])) for r in listing["resources"] if "/" not in r["name"]
            }
        found = self._groups[prefix].get(kind)
        if found is None:
            pytest.fail(f"the API server serves no {kind} in {api_version}", pytrace=False)
        return prefix, found[0], found[1]

    def namespaced(self, obj: Mapping[str, Any]) -> bool:
        """Return whether the manifest's kind lives in a namespace."""
        return self.resource(obj)[2]

    def path(self, obj: Mapping[str, Any], *, name: bool = False) -> str:
        """Return the manifest's collection path, or its own path with `name`."""
        prefix, plural, namespaced = self.resource(obj)
        meta = obj["metadata"]
        path = (
            f"{prefix}/namespaces/{meta.get('namespace') or 'default'}/{plural}" if namespaced else f"{prefix}/{plural}"
        )
        return f"{path}/{meta['name']}" if name else path


def _real(obj: Mapping[str, Any], names: Names, scheduler: str, *, namespaced: bool) -> dict[str, Any]:
    """Return the manifest as created in this run: namespace mapped, our scheduler name, kwok nodes."""
    real = copy.deepcopy(dict(obj))
    meta = real.setdefault("metadata", {})
    kind = real["kind"]
    if kind == "Namespace":
        meta["name"] = names.namespace(meta["name"])
    elif namespaced:
        meta["namespace"] = names.namespace(meta.get("namespace") or "default")
    if kind == "Node":
        meta.setdefault("labels", {})[SCENARIO_LABEL] = "true"
    if kind == "Node" and _ready(real):
        meta.setdefault("annotations", {})[KWOK_NODE_ANNOTATION] = KWOK_NODE_ANNOTATION_VALUE
    if kind == "Pod":
        spec = real.setdefault("spec", {})
        if spec.get("schedulerName") == "py-volcano":
            spec["schedulerName"] = scheduler
    return real


def _ready(node: Mapping[str, Any]) -> bool:
    """Return whether a Node manifest is Ready; kwok would make a NotReady one Ready, so it gets none."""
    conditions = (node.get("status") or {}).get("conditions") or []
    return not any(c.get("type") == "Ready" and c.get("status") != "True" for c in conditions)


def _namespaces(scenario: Scenario, discovery: Discovery) -> set[str]:
    found = {str(o["metadata"]["name"]) for o in scenario.objects if o["kind"] == "Namespace"}
    for obj in scenario.objects:
        if obj["kind"] != "Namespace" and discovery.namespaced(obj):
            found.add(str(obj["metadata"].get("namespace") or "default"))
    return found


def _clean_cluster(rest: Rest) -> None:
    """Leave no Queue and no kwok node; refuse a cluster with real nodes (their pods would interfere)."""
    for node in rest.list("Node"):
        if (node["metadata"].get("annotations") or {}).get(KWOK_NODE_ANNOTATION) != KWOK_NODE_ANNOTATION_VALUE:
            pytest.skip(f"scenarios need a cluster of kwok nodes only; {node['metadata']['name']} is real")
        rest.delete("Node", node["metadata"]["name"])
    for queue in rest.list("Queue"):
        rest.delete("Queue", queue["metadata"]["name"])
    wait_for("no Queue and no Node left", lambda: not rest.list("Queue") and not rest.list("Node"))


#: The cycle counter's sample on a /metrics page (read without parsing the page: scrapes stay fast).
_CYCLES_SAMPLE = re.compile(r"^volcano_scheduling_cycles_total(?:\{[^}]*\})? (\S+)$", re.MULTILINE)


class MetricsScraper:
    """Scrape a scheduler's /metrics while it runs; keep the last page (and its cycle count).

    A bounded run (`--cycles`) shows its last cycle on /metrics for a whole `--schedule-period` before it
    stops; each scrape reads only the cycle counter, so the loop comes round well within that window.
    """

    def __init__(self, process: Scheduler) -> None:
        self.process = process
        self.page = ""
        self.cycles = 0
        self._thread = threading.Thread(target=self._run, name="metrics-scraper", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        url = f"http://127.0.0.1:{self.process.port}/metrics"
        while self.process.proc.poll() is None:
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    page = response.read().decode()
            except (urllib.error.URLError, OSError):
                time.sleep(0.01)
                continue
            found = _CYCLES_SAMPLE.search(page)
            cycles = int(float(found.group(1))) if found else 0
            if cycles >= self.cycles:
                self.page, self.cycles = page, cycles

    def join(self) -> None:
        """Wait for the scraper to notice the process exited."""
        self._thread.join(timeout=10)


def _sample(page: str, name: str) -> float:
    for family in text_string_to_metric_families(page):
        for sample in family.samples:
            if sample.name == name:
                return float(sample.value)
    return 0.0


#: `volcano_queue_<name>_*` gauges -> the QueueFigures field they show.
_FIGURE_METRICS = {
    "allocated": "allocated",
    "request": "request",
    "deserved": "deserved",
    "real_capacity": "real_capability",
}


def queue_figures(page: str) -> dict[str, QueueFigures]:
    """Rebuild each queue's figures from the `volcano_queue_*` gauges of a /metrics page."""
    figures: dict[str, QueueFigures] = {}
    resources: dict[tuple[str, str], Resource] = {}
    for family in text_string_to_metric_families(page):
        for sample in family.samples:
            queue = sample.labels.get("queue_name")
            if queue is None or not sample.name.startswith("volcano_queue_"):
                continue
            entry = figures.setdefault(queue, QueueFigures())
            stem = sample.name.removeprefix("volcano_queue_")
            field = next((name for name in _FIGURE_METRICS if stem.startswith(f"{name}_")), "")
            dimension = stem.removeprefix(f"{field}_")
            if sample.name == "volcano_queue_share":
                entry.share = float(sample.value)
            elif sample.name == "volcano_queue_overused":
                entry.overused = sample.value >= 1
            elif sample.name == "volcano_queue_weight":
                entry.weight = int(sample.value)
            elif field:
                resource = resources.setdefault((queue, field), Resource())
                if dimension == "milli_cpu":
                    resource.set(CPU, float(sample.value))
                elif dimension == "memory_bytes":
                    resource.set(MEMORY, float(sample.value))
                elif dimension == "scalar_resources":
                    resource.set(sample.labels["resource"], float(sample.value))
    for (queue, field), resource in resources.items():
        setattr(figures[queue], _FIGURE_METRICS[field], resource)
    return figures


class ScenarioRun:
    """One scenario applied to the API server, run, checked and cleaned up."""

    def __init__(self, control_plane: Any, rest: Rest, scenario: Scenario, workdir: Path) -> None:
        self.control_plane = control_plane
        self.rest = rest
        self.scenario = scenario
        self.workdir = workdir
        self.names = Names(token("sc"))
        self.scheduler = token("pv")
        self.nodes = Nodes(rest)
        self.namespaces: list[str] = []
        self.cluster_scoped: list[tuple[str, str]] = []
        self.system_objects: list[tuple[str, str, str]] = []
        self.discovery = Discovery(rest)
        self.process: Scheduler | None = None  # the last run's scheduler and /metrics page, for extra checks
        self.page = ""
        self.other_paths: list[str] = []  # objects of other kinds that outlive the namespaces: deleted by path
        self.prometheus: Prometheus | None = None  # serving the scenario's `nodeUsage`, when it has one
        self.resources = ExitStack()  # what stops in `clean`: that Prometheus and its node-exporter stand-in

    def apply(self) -> None:
        """Create every object, statuses included, and wait until the cluster shows them.

        Every kind but Queues, PodGroups and Pods comes first (namespaces, PriorityClasses, nodes, PDBs,
        RuntimeClasses, LimitRanges, ResourceQuotas, whose status the quota controller must have written
        before a pod is admitted). Then Queues, and PodGroups with Pods, each in listing order and each
        in a later second than the one before: creationTimestamp has one-second resolution, and the
        scheduler orders jobs, tasks and queues by it (ties by uid), as the simulator orders them by
        listing position.
        """
        _clean_cluster(self.rest)
        if self.scenario.node_usage:
            load = {name: (usage.cpu, usage.memory) for name, usage in self.scenario.node_usage.items()}
            self.prometheus = self.resources.enter_context(measured(self.workdir / "prometheus", load))
        for namespace in sorted(_namespaces(self.scenario, self.discovery) - SYSTEM_NAMESPACES):
            self.namespaces.append(create_namespace(self.rest, self.names.namespace(namespace)))
        objects = [
            _real(o, self.names, self.scheduler, namespaced=o["kind"] != "Namespace" and self.discovery.namespaced(o))
            for o in self.scenario.objects
        ]
        for obj in (o for o in objects if o["kind"] not in _ORDERED):
            self._create(obj)
        for quota in (o for o in objects if o["kind"] == "ResourceQuota"):
            wait_for(f"ResourceQuota {quota['metadata']['name']} counted", partial(self._quota_counted, quota))
        queues = [o for o in objects if o["kind"] == "Queue"]
        jobs = [o for o in objects if o["kind"] in ("PodGroup", "Pod")]
        created_at = 0.0
        for position in range(max(len(queues), len(jobs))):
            delay = created_at + 1.05 - time.time()
            if delay > 0:
                time.sleep(delay)
            for sequence in (queues, jobs):
                if position < len(sequence):
                    created_at = max(created_at, self._create(sequence[position]))
        for obj in objects:
            meta = obj["metadata"]
            if obj["kind"] == "Pod" and (obj.get("status") or {}).get("phase") == "Running":
                namespace, name = meta["namespace"], meta["name"]
                wait_for(
                    f"pod {namespace}/{name} Running",
                    partial(self._is_running, namespace, name),
                )
        for quota in (o for o in objects if o["kind"] == "ResourceQuota" and (o.get("status") or {}).get("used")):
            wait_for(f"ResourceQuota {quota['metadata']['name']} used as written", partial(self._quota_used, quota))

    def _create(self, obj: dict[str, Any]) -> float:
        """Create one object; return its creationTimestamp (epoch seconds)."""
        kind, meta = obj["kind"], obj["metadata"]
        if kind == "Namespace":
            return 0.0
        if kind == "Node":
            if KWOK_NODE_ANNOTATION in (meta.get("annotations") or {}):
                self.nodes.create(obj)
            else:
                self.rest.create(obj)
                self.nodes.names.append(meta["name"])
            return 0.0
        if kind not in KINDS:
            return self._create_other(obj)
        if kind == "PriorityClass":
            self.rest.delete("PriorityClass", meta["name"])
        if kind in ("PriorityClass", "Queue"):
            self.cluster_scoped.append((kind, meta["name"]))
        if meta.get("namespace") in SYSTEM_NAMESPACES:
            self.system_objects.append((kind, meta["name"], meta["namespace"]))
        created = self.rest.create(obj)
        stamp = created["metadata"]["creationTimestamp"]
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()

    def _create_other(self, obj: dict[str, Any]) -> float:
        """Create an object of a kind the harness has no name for, through discovery; its status too, but
        a ResourceQuota's, which the quota controller computes and admission charges (written here as well,
        a pod created next would be charged on top of the written figure)."""
        body = {key: value for key, value in obj.items() if key != "status"}
        self.rest.ok("POST", self.discovery.path(obj), body)
        if obj.get("status") and obj["kind"] != "ResourceQuota":
            patch = {"status": obj["status"]}
            self.rest.ok(
                "PATCH",
                self.discovery.path(obj, name=True) + "/status",
                patch,
                content_type="application/merge-patch+json",
            )
        if not self.discovery.namespaced(obj) or obj["metadata"].get("namespace") in SYSTEM_NAMESPACES:
            self.other_paths.append(self.discovery.path(obj, name=True))
        return 0.0

    def _quota_counted(self, quota: Mapping[str, Any]) -> bool:
        """The quota controller wrote the status the ResourceQuota admission plugin needs."""
        status, answer = self.rest.request("GET", self.discovery.path(quota, name=True))
        if status != 200:
            return False
        hard = set((quota.get("spec") or {}).get("hard") or {})
        written = (answer.get("status") or {}) if isinstance(answer, dict) else {}
        return hard <= set(written.get("hard") or {}) and hard <= set(written.get("used") or {})

    def _quota_used(self, quota: Mapping[str, Any]) -> bool:
        """The quota controller counted the scenario's pods: `status.used` is what the scenario says (the
        resourcequota plugin reads it, and the controller rewrites it as pods come)."""
        status, answer = self.rest.request("GET", self.discovery.path(quota, name=True))
        used = ((answer.get("status") or {}).get("used") or {}) if status == 200 and isinstance(answer, dict) else {}
        expected = quota["status"]["used"]
        return all(name in used and parse_quantity(used[name]) == parse_quantity(value)
                   for name, value in expected.items())

    def _is_running(self, namespace: str, name: str) -> bool:
        return ((self.rest.get("Pod", name, namespace) or {}).get("status") or {}).get("phase") == "Running"

    def run(self) -> tuple[Outcome, list[str]]:
        """Run the scheduler for the scenario's cycles; return what it did and the expectation failures."""
        conf = self.workdir / "volcano-scheduler.conf"
        args = [f"--scheduler-name={self.scheduler}", f"--cycles={self.scenario.cycles}", "--no-leader-elect"]
        # A scenario is the scheduler's alone, as in memory: no PodGroup controller turning its bare pods
        # into PodGroups (e2e/test_podgroup_controller.py tests the controller).
        args += ["--schedule-period=0.2", "--log-level=debug", "--no-podgroup-controller"]
        # Cycles 0.2 s apart replay the scenario's cycles, as `simulate` runs them back to back: a job woken
        # by a change is tried in the next one, not after a backoff longer than the whole run.
        args += ["--pod-initial-backoff-seconds=0.01", "--pod-max-backoff-seconds=0.01"]
        if self.scenario.now is not None:
            args.append(f"--clock-start={self.scenario.now.isoformat()}")
        conf_text = self.scenario.scheduler_config
        if self.prometheus is not None:
            conf_text = with_metrics(conf_text, self.prometheus.url)
        if conf_text is not None:
            conf.write_text(conf_text)
            args.append(f"--scheduler-conf={conf}")
        with Scheduler(self.control_plane.kubeconfig, *args, name=self.scenario.name) as process:
            scraper = MetricsScraper(process)
            code = process.wait(timeout=180)
            scraper.join()
        self.process, self.page = process, scraper.page
        assert code == 0, process.tail()
        # The cycles run come from the log (exact); the /metrics page matters only to `queues`.
        ran = [line.get("cycles") for line in process.events("scheduler_stopped")]
        assert ran == [self.scenario.cycles], f"cycles run {ran}, not {self.scenario.cycles} ({process.log_path})"
        if self.scenario.expect.queues is not None:
            assert scraper.cycles == self.scenario.cycles, (
                f"/metrics was last read after cycle {scraper.cycles} of {self.scenario.cycles}; "
                f"the process exited first ({process.log_path})"
            )
        outcome = Outcome(queues=queue_figures(scraper.page))
        for line in process.events("task_bound"):
            outcome.binds[self.names.scenario_key(line["task"])] = str(line["node"])
        for line in process.events("task_evicted"):
            key = self.names.scenario_key(line["task"])
            if key not in outcome.evictions:
                outcome.evictions.append(key)
        for obj in self.scenario.objects:
            if obj["kind"] == "PodGroup":
                key = f"{obj['metadata'].get('namespace') or 'default'}/{obj['metadata']['name']}"
                namespace, _, name = self.names.key(key).partition("/")
                written = (self.rest.get("PodGroup", name, namespace) or {}).get("status") or {}
                outcome.pod_groups[key] = str(written.get("phase") or "<no status written>")
        return outcome, check(self.scenario.expect, outcome, ApiCluster(self.rest, self.names))  # type: ignore[arg-type]

    def clean(self) -> None:
        """Delete what the scenario created, and every Queue.

        Pods (at once: kwok has no kubelet to wait for), PodGroups and PDBs are deleted by collection,
        which is immediate, so the next scenario's scheduler never sees them; the namespaces themselves,
        and what else they hold (LimitRanges, ResourceQuotas), are left to the namespace controller.
        """
        self.resources.close()
        for namespace in self.namespaces:
            for kind in ("Pod", "PodGroup", "PodDisruptionBudget"):
                self.rest.request("DELETE", Rest.path(kind, namespace), {"gracePeriodSeconds": 0})
            self.rest.delete("Namespace", namespace)
        for kind, name, namespace in self.system_objects:
            self.rest.delete(kind, name, namespace, grace=0)
        self.nodes.delete_all()
        for kind, name in self.cluster_scoped:
            self.rest.delete(kind, name)
        for path in self.other_paths:
            self.rest.request("DELETE", path)
        for queue in self.rest.list("Queue"):
            self.rest.delete("Queue", queue["metadata"]["name"])


def with_metrics(conf_text: str | None, address: str) -> str:
    """Return the scheduler configuration with a `metrics` section polling the Prometheus at `address`."""
    conf = yaml.safe_load(conf_text or "") or {}
    conf["metrics"] = {"type": "prometheus", "address": address, "interval": "2s"}
    return str(yaml.safe_dump(conf))


@pytest.fixture
def scenario_run(control_plane: Any, rest: Rest, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """Build the run of the parametrized scenario file; clean the cluster afterwards."""
    runs: list[ScenarioRun] = []

    def make(path: Path) -> ScenarioRun:
        runs.append(ScenarioRun(control_plane, rest, load_scenario(path), tmp_path))
        return runs[-1]

    yield make
    for run in runs:
        run.clean()


def _params() -> list[Any]:
    return [
        pytest.param(path, id=path.stem, marks=pytest.mark.xfail(reason=DIVERGENT[path.stem], strict=True))
        if path.stem in DIVERGENT
        else pytest.param(path, id=path.stem)
        for path in FILES
    ]


@pytest.mark.parametrize("path", _params())
def test_scenario_on_the_api_server(path: Path, scenario_run: Any) -> None:
    """The scenario's expectations hold on the real API server, as they do in `py-volcano simulate`."""
    run = scenario_run(path)
    run.apply()
    outcome, failures = run.run()
    assert not failures, "\n".join(failures) + f"\nbinds: {outcome.binds}\nevictions: {outcome.evictions}"


def test_unknown_names_in_the_configuration_are_logged_exported_and_skipped(scenario_run: Any) -> None:
    """A Volcano configuration naming an action and a plugin py-volcano lacks still schedules on a real API
    server; each name is an error log line and a `volcano_config_unsupported` series of 1."""
    run = scenario_run(SCENARIO_DIR / "config-unknown-names-are-skipped.yaml")
    run.apply()
    outcome, failures = run.run()
    assert not failures, "\n".join(failures) + f"\nbinds: {outcome.binds}"
    assert run.process is not None
    errors = {(line["kind"], line["name"]) for line in run.process.events("scheduler_conf_unsupported")}
    assert errors == {("action", "dance"), ("plugin", "magic")}
    assert all(line["level"] == "error" for line in run.process.events("scheduler_conf_unsupported"))
    series = {
        (sample.labels["kind"], sample.labels["name"]): sample.value
        for family in text_string_to_metric_families(run.page)
        for sample in family.samples
        if sample.name == "volcano_config_unsupported"
    }
    assert series == {("action", "dance"): 1.0, ("plugin", "magic"): 1.0}
