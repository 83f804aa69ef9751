"""The Helm chart, deploy/py-volcano.yaml and the CRDs, checked with the real helm and a real API server:
the values schema refuses invalid values at `helm install`, and a CRD changed by a new chart reaches the
cluster through `helm upgrade`.

helm is looked up at ``${PY_VOLCANO_CACHE:-$HOME/.cache/py-volcano}/bin/helm`` (built by
hack/build-control-plane.sh), then on PATH. Without it these tests FAIL: they are the only check
that the committed manifest is what the chart renders.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import signal
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e.harness import Nodes, Rest, py_volcano, token, wait_for
from e2e.test_scheduler import _service_account_kubeconfig

pytest_plugins = ["e2e.fixtures"]

REPO = Path(__file__).resolve().parent.parent
CHART = REPO / "charts" / "py-volcano"
DEPLOY_MANIFEST = REPO / "deploy" / "py-volcano.yaml"
RENDER_SCRIPT = REPO / "hack" / "render-deploy.sh"
FIXTURES = REPO / "tests" / "unit" / "deploy" / "fixtures"
CRD_NAMES = (
    "queues.scheduling.volcano.sh",
    "podgroups.scheduling.volcano.sh",
    "numatopologies.nodeinfo.volcano.sh",
    "nodeshards.shard.volcano.sh",
    "hypernodes.topology.volcano.sh",
)


def find_helm() -> str | None:
    cache = Path(os.environ.get("PY_VOLCANO_CACHE") or Path.home() / ".cache" / "py-volcano")
    cached = cache / "bin" / "helm"
    if cached.is_file() and os.access(cached, os.X_OK):
        return str(cached)
    return shutil.which("helm")


@pytest.fixture(scope="module")
def helm() -> str:
    found = find_helm()
    if found is None:
        pytest.fail(
            "helm not found: expected ${PY_VOLCANO_CACHE:-$HOME/.cache/py-volcano}/bin/helm "
            "(build it with `bash hack/build-control-plane.sh helm`) or helm on PATH",
            pytrace=False,
        )
    return found


def run(
    *args: str, env: dict[str, str] | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(args, capture_output=True, text=True, env=env, cwd=REPO, check=False)
    if check and result.returncode != 0:
        pytest.fail(
            f"{' '.join(args)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}", pytrace=False
        )
    return result


def render(helm: str, *values: str) -> list[dict[str, Any]]:
    out = run(helm, "template", "py-volcano", str(CHART), "--namespace", "volcano-system", *values).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def one(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [doc for doc in docs if doc["kind"] == kind]
    return found


def container_args(docs: list[dict[str, Any]]) -> list[str]:
    (container,) = one(docs, "Deployment")["spec"]["template"]["spec"]["containers"]
    return list(container["args"])


# --- helm ------------------------------------------------------------------------------------------

VARIANTS = [
    pytest.param([], id="defaults"),
    pytest.param(["--set", "replicaCount=2"], id="two-replicas"),
    pytest.param(["--set", "leaderElection.enabled=false"], id="no-leader-election"),
    pytest.param(
        ["--set", "serviceMonitor.enabled=true", "--set", "podDisruptionBudget.enabled=true"], id="extras"
    ),
    pytest.param(
        ["--set", "networkPolicy.enabled=true", "--set", "networkPolicy.metricsFrom[0].podSelector.matchLabels.a=b"],
        id="network-policy",
    ),
    pytest.param(["--set", "metrics.secure.enabled=false", "--set", "networkPolicy.enabled=true"], id="plain-metrics"),
    pytest.param(["--set", "sharding.enabled=true", "--set", "replicaCount=2"], id="sharded"),
]


@pytest.mark.parametrize("values", VARIANTS)
def test_helm_lint(helm: str, values: list[str]) -> None:
    run(helm, "lint", "--strict", str(CHART), *values)


def test_deploy_manifest_is_a_fresh_render(helm: str) -> None:
    """deploy/py-volcano.yaml is exactly what hack/render-deploy.sh makes of the chart now."""
    env = {**os.environ, "HELM": helm}
    fresh = run("bash", str(RENDER_SCRIPT), "-", env=env).stdout
    assert fresh == DEPLOY_MANIFEST.read_text(), "deploy/py-volcano.yaml is stale: run hack/render-deploy.sh"


def test_default_render(helm: str) -> None:
    docs = render(helm, "--include-crds")
    kinds = sorted(doc["kind"] for doc in docs)
    assert kinds == sorted(
        [
            *["CustomResourceDefinition"] * len(CRD_NAMES),
            "ServiceAccount",
            "ConfigMap",
            "ClusterRole",
            "ClusterRoleBinding",
            "ClusterRole",  # <fullname>-metrics-reader, for scrapers
            "ClusterRoleBinding",  # to system:auth-delegator, for the reviews of secure /metrics
            "Role",
            "RoleBinding",
            "Service",
            "Deployment",
        ]
    )
    args = container_args(docs)
    assert "--leader-elect" in args
    assert "--leader-elect-namespace=$(POD_NAMESPACE)" in args
    assert "--scheduler-name=py-volcano" in args
    conf = yaml.safe_load(one(docs, "ConfigMap")["data"]["volcano-scheduler.conf"])
    assert conf["actions"] == "enqueue, allocate, backfill"
    assert [[plugin["name"] for plugin in tier["plugins"]] for tier in conf["tiers"]] == [
        ["priority", "gang", "conformance"],
        ["overcommit", "drf", "predicates", "proportion", "nodeorder", "binpack"],
    ]


def test_two_replicas_get_a_disruption_budget_and_leader_election(helm: str) -> None:
    docs = render(helm, "--set", "replicaCount=2")
    assert one(docs, "PodDisruptionBudget")["spec"]["minAvailable"] == 1
    assert one(docs, "Deployment")["spec"]["replicas"] == 2
    assert "--leader-elect" in container_args(docs)


def test_without_leader_election_the_rollout_recreates(helm: str) -> None:
    docs = render(helm, "--set", "leaderElection.enabled=false")
    args = container_args(docs)
    assert "--no-leader-elect" in args
    assert not any(arg.startswith("--leader-elect") for arg in args)
    assert one(docs, "Deployment")["spec"]["strategy"] == {"type": "Recreate"}
    assert not [doc for doc in docs if doc["kind"] == "PodDisruptionBudget"]


def test_replicas_without_leader_election_are_refused(helm: str) -> None:
    result = run(
        helm,
        "template",
        "py-volcano",
        str(CHART),
        "--set",
        "replicaCount=2",
        "--set",
        "leaderElection.enabled=false",
        check=False,
    )
    assert result.returncode != 0
    assert "leaderElection.enabled must be true" in result.stderr


def test_service_monitor_scrapes_the_metrics_service(helm: str) -> None:
    docs = render(helm, "--set", "serviceMonitor.enabled=true")
    monitor = one(docs, "ServiceMonitor")
    service = one(docs, "Service")
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert selector.items() <= service["metadata"]["labels"].items()
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] == service["spec"]["ports"][0]["name"] == "metrics"
    assert endpoint["path"] == "/metrics"
    assert (endpoint["scheme"], endpoint["tlsConfig"]) == ("https", {"insecureSkipVerify": True}), "self-signed"
    assert endpoint["bearerTokenFile"] == "/var/run/secrets/kubernetes.io/serviceaccount/token"
    verified = render(helm, "--set", "serviceMonitor.enabled=true", "--set", "serviceMonitor.tlsCA.secret=metrics-ca")
    (endpoint,) = one(verified, "ServiceMonitor")["spec"]["endpoints"]
    assert endpoint["tlsConfig"] == {
        "ca": {"secret": {"name": "metrics-ca", "key": "ca.crt"}},
        "serverName": "py-volcano-metrics.volcano-system.svc",
    }
    plain = render(helm, "--set", "serviceMonitor.enabled=true", "--set", "metrics.secure.enabled=false")
    (endpoint,) = one(plain, "ServiceMonitor")["spec"]["endpoints"]
    assert endpoint.keys() == {"port", "path", "interval"}


def test_secure_metrics_take_a_certificate_secret_and_can_be_turned_off(helm: str) -> None:
    docs = render(helm, "--set", "metrics.secure.certSecret=metrics-tls")
    spec = one(docs, "Deployment")["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    assert {"--tls-cert-file=/etc/py-volcano-tls/tls.crt", "--tls-private-key-file=/etc/py-volcano-tls/tls.key"} <= set(
        container["args"]
    )
    assert {"name": "tls", "mountPath": "/etc/py-volcano-tls", "readOnly": True} in container["volumeMounts"]
    assert {"name": "tls", "secret": {"secretName": "metrics-tls"}} in spec["volumes"]
    plain = render(helm, "--set", "metrics.secure.enabled=false")
    args = container_args(plain)
    assert not [arg for arg in args if arg.startswith(("--secure-listen-address", "--tls-"))]
    names = {(doc["kind"], doc["metadata"]["name"]) for doc in plain}
    assert ("ClusterRoleBinding", "py-volcano-auth-delegator") not in names
    assert ("ClusterRole", "py-volcano-metrics-reader") not in names


def test_the_network_policy_admits_scrapers_by_selector_and_probes_from_anywhere(helm: str) -> None:
    docs = render(
        helm,
        "--set", "networkPolicy.enabled=true",
        "--set", "networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.team=monitoring",
        "--set", "networkPolicy.apiServer.cidrs[0]=10.0.0.1/32",
    )
    policy = one(docs, "NetworkPolicy")["spec"]
    assert policy["podSelector"]["matchLabels"].items() <= one(docs, "Deployment")["spec"]["template"]["metadata"][
        "labels"
    ].items()
    assert policy["ingress"] == [
        {"ports": [{"port": 8080, "protocol": "TCP"}]},
        {
            "from": [{"namespaceSelector": {"matchLabels": {"team": "monitoring"}}}],
            "ports": [{"port": 8443, "protocol": "TCP"}],
        },
    ]
    assert policy["egress"] == [
        {
            "ports": [{"port": 443, "protocol": "TCP"}, {"port": 6443, "protocol": "TCP"}],
            "to": [{"ipBlock": {"cidr": "10.0.0.1/32"}}],
        }
    ]
    closed = one(render(helm, "--set", "networkPolicy.enabled=true"), "NetworkPolicy")["spec"]
    assert closed["ingress"] == [{"ports": [{"port": 8080, "protocol": "TCP"}]}], "no scraper named: no scrape"


@pytest.mark.parametrize(
    ("values", "message"),
    [
        pytest.param(["--set", "replicaCount=-1"], "/replicaCount", id="negative-replicas"),
        pytest.param(["--set", "scheduler.schedulePeriod=abc"], "/scheduler/schedulePeriod", id="period-abc"),
        pytest.param(["--set", "scheduler.schedulePeriod=0"], "/scheduler/schedulePeriod", id="period-zero"),
        pytest.param(["--set", "scheduler.logLevel=verbose"], "/scheduler/logLevel", id="log-level"),
        pytest.param(["--set", "metrics.port=70000"], "/metrics/port", id="port"),
        pytest.param(["--set", "metrics.secure.port=0"], "/metrics/secure/port", id="secure-port"),
        pytest.param(["--set", "networkPolicy.metricsFrom[0].team=x"], "/networkPolicy/metricsFrom/0", id="peer"),
        pytest.param(["--set", "replicaCout=2"], "replicaCout", id="typo"),
    ],
)
def test_the_schema_refuses_invalid_values(helm: str, values: list[str], message: str) -> None:
    result = run(helm, "template", "py-volcano", str(CHART), *values, check=False)
    assert result.returncode != 0
    assert "values don't meet the specifications of the schema" in result.stderr
    assert message in result.stderr


def test_leader_election_rolls_out_new_pod_first(helm: str) -> None:
    """The new pod starts (as a standby) before the old one stops, which hands the Lease over."""
    strategy = one(render(helm), "Deployment")["spec"]["strategy"]
    assert strategy == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}


def test_crds_are_templates_kept_on_uninstall(helm: str) -> None:
    docs = render(helm)
    crds = [doc for doc in docs if doc["kind"] == "CustomResourceDefinition"]
    assert sorted(doc["metadata"]["name"] for doc in crds) == sorted(CRD_NAMES)
    assert all(doc["metadata"]["annotations"] == {"helm.sh/resource-policy": "keep"} for doc in crds)
    assert not [doc for doc in render(helm, "--set", "crds.install=false") if doc["kind"] == "CustomResourceDefinition"]
    assert not (CHART / "crds").exists(), "Helm installs a chart's crds/ once and never upgrades it"


def test_settings_reach_the_flags(helm: str) -> None:
    docs = render(
        helm,
        "--set",
        "scheduler.name=batch",
        "--set",
        "scheduler.schedulePeriod=0.5",
        "--set",
        "metrics.port=9090",
        "--set",
        "scheduler.logLevel=debug",
    )
    args = container_args(docs)
    assert {
        "--scheduler-name=batch",
        "--schedule-period=0.5",
        "--listen-address=0.0.0.0:9090",
        "--log-level=debug",
    } <= set(args)
    (container,) = one(docs, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert container["ports"] == [
        {"name": "metrics", "containerPort": 8443, "protocol": "TCP"},
        {"name": "probes", "containerPort": 9090, "protocol": "TCP"},
    ]
    docs = render(helm, "--set", "metrics.port=9090", "--set", "metrics.secure.enabled=false")
    (container,) = one(docs, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert container["ports"] == [{"name": "metrics", "containerPort": 9090, "protocol": "TCP"}]
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}


# --- a real API server --------------------------------------------------------------------------

_SERVER_SET_METADATA = ("creationTimestamp", "generation", "resourceVersion", "uid", "selfLink")


def _fixture_documents() -> list[Any]:
    params = []
    for path in sorted(FIXTURES.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            params.append(pytest.param(doc, id=path.stem))
    return params


@pytest.fixture(scope="module")
def kubectl(control_plane: Any) -> Iterator[Any]:
    """kubectl against the e2e cluster, with the CRDs installed and Established."""
    binary = shutil.which("kubectl") or control_plane.binary("kubectl")

    def kubectl_(
        *args: str, input: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [binary, f"--kubeconfig={control_plane.kubeconfig}", *args],
            input=input,
            capture_output=True,
            text=True,
            check=False,
        )
        if check and result.returncode != 0:
            pytest.fail(
                f"kubectl {' '.join(args)} exited {result.returncode}:\n{result.stderr}", pytrace=False
            )
        return result

    kubectl_("apply", "--server-side", "--force-conflicts", "-f", str(REPO / "crds"))
    kubectl_("wait", "--for=condition=Established", "--timeout=60s", *(f"crd/{name}" for name in CRD_NAMES))
    yield kubectl_


@pytest.mark.parametrize("doc", _fixture_documents())
def test_volcano_manifests_are_accepted_by_the_api_server(kubectl: Any, doc: dict[str, Any]) -> None:
    """Strict field validation: a field the CRD lacks is an error, not silently pruned.

    Metadata the server sets (the website examples are `kubectl get -o yaml` dumps) is dropped first.
    """
    doc = copy.deepcopy(doc)
    for obj in doc["items"] if doc["kind"] == "List" else [doc]:
        for key in _SERVER_SET_METADATA:
            obj["metadata"].pop(key, None)
    kubectl("create", "--dry-run=server", "--validate=strict", "-f", "-", input=yaml.safe_dump(doc))


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        pytest.param(
            {"kind": "Queue", "metadata": {"name": "w0"}, "spec": {"weight": 0}}, "spec.weight", id="weight"
        ),
        pytest.param(
            {"kind": "Queue", "metadata": {"name": "cap"}, "spec": {"capability": {"cpu": "two"}}},
            "spec.capability",
            id="quantity",
        ),
        pytest.param(
            {
                "kind": "PodGroup",
                "metadata": {"name": "neg", "namespace": "default"},
                "spec": {"minMember": -1},
            },
            "spec.minMember",
            id="minMember",
        ),
        pytest.param(
            {
                "kind": "PodGroup",
                "metadata": {"name": "extra", "namespace": "default"},
                "spec": {"minAvailable": 1},
            },
            "minAvailable",
            id="unknown-field",
        ),
    ],
)
def test_invalid_objects_are_refused(kubectl: Any, manifest: dict[str, Any], message: str) -> None:
    manifest = {"apiVersion": "scheduling.volcano.sh/v1beta1", **manifest}
    result = kubectl(
        "create", "--dry-run=server", "--validate=strict", "-f", "-", input=json.dumps(manifest), check=False
    )
    assert result.returncode != 0
    assert message in result.stderr


def test_schema_defaults_apply(kubectl: Any) -> None:
    queue = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "defaults"}}
    created = json.loads(
        kubectl("create", "--dry-run=server", "-o", "json", "-f", "-", input=json.dumps(queue)).stdout
    )
    assert created["spec"] == {"weight": 1, "reclaimable": True}
    group = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "defaults", "namespace": "default"},
        "spec": {"minMember": 1},
    }
    created = json.loads(
        kubectl("create", "--dry-run=server", "-o", "json", "-f", "-", input=json.dumps(group)).stdout
    )
    assert created["spec"]["queue"] == "default"


def test_short_names_and_printer_columns(kubectl: Any) -> None:
    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "chart-e2e"},
        "spec": {"weight": 3},
    }
    kubectl("apply", "-f", "-", input=json.dumps(queue))
    try:
        header, row = kubectl("get", "q", "chart-e2e").stdout.splitlines()
        assert header.split()[:3] == ["NAME", "WEIGHT", "STATE"]
        assert row.split()[:2] == ["chart-e2e", "3"]
        assert kubectl("get", "pg", "-A").returncode == 0
    finally:
        kubectl("delete", "queue", "chart-e2e", "--ignore-not-found")


def test_deploy_manifest_is_accepted_by_the_api_server(kubectl: Any) -> None:
    """Every object of deploy/py-volcano.yaml passes server-side validation (dry run; real Namespace)."""
    namespace_existed = kubectl("get", "namespace", "volcano-system", check=False).returncode == 0
    if not namespace_existed:
        kubectl("create", "namespace", "volcano-system")
    try:
        kubectl("apply", "--server-side", "--dry-run=server", "--validate=strict", "-f", str(DEPLOY_MANIFEST))
    finally:
        if not namespace_existed:
            kubectl("delete", "namespace", "volcano-system", "--wait=false")


def test_the_optional_metrics_objects_are_accepted_by_the_api_server(kubectl: Any, helm: str, tmp_path: Path) -> None:
    """The NetworkPolicy and the TLS Secret mount of secure metrics pass server-side validation (dry run)."""
    manifest = tmp_path / "options.yaml"
    manifest.write_text(run(
        helm, "template", "py-volcano", str(CHART), "--namespace", "default", "--set", "crds.install=false",
        "--set", "networkPolicy.enabled=true", "--set", "metrics.secure.certSecret=metrics-tls",
        "--set", "networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.team=monitoring",
        "--set", "networkPolicy.apiServer.cidrs[0]=10.0.0.1/32",
    ).stdout)
    kubectl("apply", "--server-side", "--dry-run=server", "--validate=strict", "-f", str(manifest))


def test_the_sharded_chart_is_accepted_by_the_api_server(kubectl: Any, helm: str, tmp_path: Path) -> None:
    """A Deployment, a Lease and a PodDisruptionBudget per shard, the shard controller's Deployment,
    ServiceAccount and RBAC pass server-side validation (dry run)."""
    shards = [{"name": "shard-a", "selector": "pool=a"}, {"name": "shard-b", "selector": "pool in (b,c)"}]
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"sharding": {"enabled": True, "shards": shards}, "replicaCount": 2}))
    template = [helm, "template", "py-volcano", str(CHART), "--namespace", "default", "--set", "crds.install=false"]
    manifest = tmp_path / "sharded.yaml"
    manifest.write_text(run(*template, "-f", str(values)).stdout)
    docs = [doc for doc in yaml.safe_load_all(manifest.read_text()) if doc]
    deployments = sorted(doc["metadata"]["name"] for doc in docs if doc["kind"] == "Deployment")
    assert deployments == ["py-volcano-shard-a", "py-volcano-shard-b", "py-volcano-shard-controller"]
    kubectl("apply", "--server-side", "--dry-run=server", "--validate=strict", "-f", str(manifest))


def test_the_charts_shard_controller_keeps_node_shards_current_under_its_own_rbac(
    control_plane: Any, kubectl: Any, helm: str, rest: Rest, namespace: str, nodes: Nodes, tmp_path: Path
) -> None:
    """The shard controller's command, as the chart renders it, run as the chart's controller ServiceAccount
    with only its ClusterRole: it fills both NodeShards, moves a node that joins later into its shard at the
    next resync, is refused nothing, and exits 0 on SIGTERM."""
    label, release = token("pool"), token("pv")
    shards = {shard: f"{label}-{shard}" for shard in "ab"}
    values = tmp_path / "values.yaml"
    listed = [{"name": name, "selector": f"pool={name}"} for name in shards.values()]
    values.write_text(yaml.safe_dump({"sharding": {"enabled": True, "shards": listed, "resyncSeconds": 1}}))
    template = [helm, "template", release, str(CHART), "--namespace", namespace, "--set", "crds.install=false"]
    docs = [doc for doc in yaml.safe_load_all(run(*template, "-f", str(values)).stdout) if doc]
    controller = f"{release}-py-volcano-shard-controller"
    own = [doc for doc in docs if doc["metadata"]["name"] == controller]
    assert sorted(doc["kind"] for doc in own) == ["ClusterRole", "ClusterRoleBinding", "Deployment", "ServiceAccount"]
    (deployment,) = [doc for doc in own if doc["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    first = nodes.add(pool=shards["a"])
    kubectl("apply", "-f", "-", input=yaml.safe_dump_all([doc for doc in own if doc["kind"] != "Deployment"]))
    log = tmp_path / "shard-controller.log"
    try:
        kubeconfig = _service_account_kubeconfig(control_plane, rest, namespace, controller, tmp_path / "sa.kubeconfig")
        command = [py_volcano(), *container["command"][1:], *container["args"], f"--kubeconfig={kubeconfig}"]
        with open(log, "wb") as out:
            process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        try:
            filled = {shards["a"]: [first], shards["b"]: []}
            wait_for("both NodeShards filled", lambda: _desired(rest, shards.values()) == filled)
            second = nodes.add(pool=shards["b"])
            wait_for("the joining node in shard b", lambda: _desired(rest, [shards["b"]]) == {shards["b"]: [second]})
            process.send_signal(signal.SIGTERM)
            code = process.wait(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=30)
    finally:
        kubectl("delete", "clusterrolebinding,clusterrole", controller, "--ignore-not-found")
        for name in shards.values():
            rest.request("DELETE", f"{NODE_SHARDS}/{name}")
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    assert code == 0, log.read_text()
    assert "forbidden" not in log.read_text().lower(), log.read_text()
    updated = [line for line in lines if line["event"] == "node_shard_updated"]
    assert [(line["node_shard"], line["added"], line["removed"]) for line in updated] == [(shards["b"], [second], [])]


NODE_SHARDS = "/apis/shard.volcano.sh/v1alpha1/nodeshards"


def _desired(rest: Rest, names: Any) -> dict[str, list[str]]:
    """spec.nodesDesired of each NodeShard that exists."""
    found = {}
    for name in names:
        status, body = rest.request("GET", f"{NODE_SHARDS}/{name}")
        if status == 200:
            found[name] = sorted((body.get("spec") or {}).get("nodesDesired") or [])
    return found


# --- helm install and upgrade against the API server ----------------------------------------------------


@pytest.fixture
def release(control_plane: Any, kubectl: Any, helm: str) -> Iterator[tuple[str, str, Any]]:
    """A release name and namespace (created), and a `helm` runner on the e2e cluster; uninstalled after."""
    name, namespace = f"pv-{uuid.uuid4().hex[:6]}", f"pv-chart-{uuid.uuid4().hex[:6]}"
    kubectl("create", "namespace", namespace)

    def helm_(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run(helm, *args, "--namespace", namespace, "--kubeconfig", str(control_plane.kubeconfig), check=check)

    yield name, namespace, helm_
    helm_("uninstall", name, check=False)
    kubectl("delete", "namespace", namespace, "--wait=false", check=False)


def test_helm_install_refuses_invalid_values(kubectl: Any, release: tuple[str, str, Any]) -> None:
    """The schema stops `helm install` itself: nothing reaches the cluster."""
    name, namespace, helm_ = release
    result = helm_("install", name, str(CHART), "--set", "replicaCount=-1", check=False)
    assert result.returncode != 0 and "/replicaCount" in result.stderr
    assert helm_("status", name, check=False).returncode != 0
    assert kubectl("get", "deployments", "-n", namespace, "-o", "name").stdout == ""


def _printer_columns(kubectl: Any, crd: str) -> list[str]:
    found = json.loads(kubectl("get", "crd", crd, "-o", "json").stdout)
    (version,) = found["spec"]["versions"]
    return [column["name"] for column in version.get("additionalPrinterColumns", [])]


def test_helm_upgrade_brings_a_changed_crd_to_the_cluster(
    kubectl: Any, release: tuple[str, str, Any], tmp_path: Path
) -> None:
    """Install (taking over the CRDs the cluster has), upgrade to a chart whose Queue CRD has one more
    printer column, see it served, upgrade back; uninstall keeps the CRDs."""
    name, _, helm_ = release
    queues = "queues.scheduling.volcano.sh"
    helm_("install", name, str(CHART), "--take-ownership", "--set", "replicaCount=0")
    annotations = json.loads(kubectl("get", "crd", queues, "-o", "json").stdout)["metadata"]["annotations"]
    assert annotations["meta.helm.sh/release-name"] == name
    assert annotations["helm.sh/resource-policy"] == "keep"
    before = _printer_columns(kubectl, queues)

    changed = tmp_path / "py-volcano"
    shutil.copytree(CHART, changed)
    crd_file = changed / "files" / "crds" / "scheduling.volcano.sh_queues.yaml"
    crd = yaml.safe_load(crd_file.read_text())
    crd["spec"]["versions"][0]["additionalPrinterColumns"].append(
        {"name": "Reclaimable", "type": "boolean", "jsonPath": ".spec.reclaimable"}
    )
    crd_file.write_text(yaml.safe_dump(crd))
    helm_("upgrade", name, str(changed), "--set", "replicaCount=0")
    assert _printer_columns(kubectl, queues) == [*before, "Reclaimable"]
    queue = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name}}
    kubectl("create", "-f", "-", input=json.dumps(queue))
    try:
        header, row = kubectl("get", "queue", name).stdout.splitlines()
    finally:
        kubectl("delete", "queue", name)
    assert header.split()[-1] == "RECLAIMABLE" and row.split()[-1] == "true", "the schema's default, served"

    helm_("upgrade", name, str(CHART), "--set", "replicaCount=0")
    assert _printer_columns(kubectl, queues) == before
    helm_("uninstall", name)
    assert kubectl("get", "crd", queues, check=False).returncode == 0, "helm.sh/resource-policy: keep"
