"""deploy/py-volcano.yaml (the chart rendered with default values) against docs/operations.md.

e2e/test_chart.py proves the file is a fresh render of the chart; these tests read the file.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from . import operations_doc

REPO = Path(__file__).resolve().parents[3]
MANIFEST = REPO / "deploy" / "py-volcano.yaml"
DOCKERFILE = REPO / "Dockerfile"
NAMESPACE = "volcano-system"


def documents() -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(MANIFEST.read_text()) if doc]


def of_kind(kind: str) -> list[dict[str, Any]]:
    return [doc for doc in documents() if doc["kind"] == kind]


def one(kind: str) -> dict[str, Any]:
    (found,) = of_kind(kind)
    return dict(found)


def named(kind: str, name: str) -> dict[str, Any]:
    (found,) = [doc for doc in of_kind(kind) if doc["metadata"]["name"] == name]
    return dict(found)


def pod_spec() -> dict[str, Any]:
    return dict(one("Deployment")["spec"]["template"]["spec"])


def container() -> dict[str, Any]:
    (found,) = pod_spec()["containers"]
    return dict(found)


def args() -> dict[str, str | None]:
    """Container args as {flag: value}; a bare flag maps to None."""
    parsed: dict[str, str | None] = {}
    for arg in container()["args"]:
        flag, _, value = arg.partition("=")
        parsed[flag] = value or None
    return parsed


def rule_triples(rules: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


# --- objects --------------------------------------------------------------------------------------


def test_namespace_comes_first_and_holds_everything() -> None:
    docs = documents()
    assert docs[0] == {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    cluster_scoped = {"Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding"}
    for doc in docs:
        if doc["kind"] not in cluster_scoped:
            assert doc["metadata"]["namespace"] == NAMESPACE, doc["kind"]


def test_crds_are_the_top_level_crds_kept_on_uninstall() -> None:
    """The chart's CRD templates render crds/ with the release's labels and Helm's keep policy."""
    shipped = {doc["metadata"]["name"]: doc for doc in of_kind("CustomResourceDefinition")}
    expected = {}
    for path in sorted((REPO / "crds").glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        expected[crd["metadata"]["name"]] = crd
    assert shipped.keys() == expected.keys()
    for name, crd in shipped.items():
        assert {key: crd[key] for key in ("apiVersion", "kind", "spec")} == {
            key: expected[name][key] for key in ("apiVersion", "kind", "spec")
        }
        assert crd["metadata"]["annotations"] == {"helm.sh/resource-policy": "keep"}
        assert expected[name]["metadata"]["labels"].items() <= crd["metadata"]["labels"].items()
        assert crd["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "Helm"


# --- RBAC -----------------------------------------------------------------------------------------


def test_rbac_is_exactly_the_operations_table() -> None:
    cluster_rules = named("ClusterRole", "py-volcano")["rules"]
    lease_rules = one("Role")["rules"]
    granted = rule_triples(cluster_rules) | rule_triples(lease_rules)
    documented = operations_doc.rbac()
    assert granted - documented == set(), "granted but not in docs/operations.md"
    assert documented - granted == set(), "in docs/operations.md but not granted"
    assert {(group, resource) for group, resource, _ in rule_triples(lease_rules)} == {
        ("coordination.k8s.io", "leases")
    }
    for rule in cluster_rules + lease_rules:
        assert rule.keys() == {"apiGroups", "resources", "verbs"}, rule
        assert "*" not in rule["apiGroups"] + rule["resources"] + rule["verbs"], rule


def test_rbac_is_bound_to_the_scheduler_service_account() -> None:
    account = pod_spec()["serviceAccountName"]
    assert one("ServiceAccount")["metadata"]["name"] == account
    bindings = [
        (named("ClusterRoleBinding", "py-volcano"), "ClusterRole", "py-volcano"),
        (one("RoleBinding"), "Role", one("Role")["metadata"]["name"]),
        (named("ClusterRoleBinding", "py-volcano-auth-delegator"), "ClusterRole", "system:auth-delegator"),
    ]
    for binding, role_kind, role in bindings:
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role}
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}]
    assert len(of_kind("ClusterRoleBinding")) == 2, "the metrics reader role is for scrapers, bound by the user"


def test_scrapers_get_a_role_that_reads_metrics_only() -> None:
    assert named("ClusterRole", "py-volcano-metrics-reader")["rules"] == [
        {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}
    ]


# --- the scheduler Deployment ---------------------------------------------------------------------


def test_args_are_documented_flags() -> None:
    assert args().keys() - operations_doc.flags() == set()


def test_args_wire_the_contract() -> None:
    flags = args()
    assert flags["--scheduler-name"] == "py-volcano"
    assert float(flags["--schedule-period"] or "nan") > 0
    assert "--leader-elect" in flags and flags["--leader-elect"] is None
    assert "--no-leader-elect" not in flags
    assert flags["--leader-elect-namespace"] == "$(POD_NAMESPACE)"
    env = {item["name"]: item for item in container()["env"]}
    assert env["POD_NAMESPACE"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}


def test_scheduler_conf_is_the_mounted_configmap() -> None:
    conf_path = Path(args()["--scheduler-conf"] or "")
    (mount,) = [m for m in container()["volumeMounts"] if conf_path.parent == Path(m["mountPath"])]
    (volume,) = [v for v in pod_spec()["volumes"] if v["name"] == mount["name"]]
    configmap = one("ConfigMap")
    assert volume["configMap"]["name"] == configmap["metadata"]["name"]
    assert "subPath" not in mount, "a subPath mount is never updated, so the conf could not be reloaded"
    conf = yaml.safe_load(configmap["data"][conf_path.name])
    assert conf_path.name == "volcano-scheduler.conf"
    assert conf["actions"] == "enqueue, allocate, backfill"
    assert [[plugin["name"] for plugin in tier["plugins"]] for tier in conf["tiers"]] == [
        ["priority", "gang", "conformance"],
        ["overcommit", "drf", "predicates", "proportion", "nodeorder", "binpack"],
    ]


def test_metrics_are_secure_and_probes_plain() -> None:
    """/metrics over HTTPS on its own port (self-signed: no TLS flags), the probes on the plain one."""
    flags = args()
    plain = int((flags["--listen-address"] or "").rpartition(":")[2])
    secure = int((flags["--secure-listen-address"] or "").rpartition(":")[2])
    assert "--tls-cert-file" not in flags and "--tls-private-key-file" not in flags
    assert container()["ports"] == [
        {"name": "metrics", "containerPort": secure, "protocol": "TCP"},
        {"name": "probes", "containerPort": plain, "protocol": "TCP"},
    ]
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        assert container()[probe]["httpGet"] == {"path": path, "port": "probes"}
    service = one("Service")
    assert service["spec"]["ports"][0]["targetPort"] == "metrics"
    assert of_kind("NetworkPolicy") == [], "the NetworkPolicy is an option, off by default"
    pod_labels = one("Deployment")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert one("Deployment")["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()


def test_runs_locked_down() -> None:
    pod = pod_spec()["securityContext"]
    assert pod["runAsNonRoot"] is True
    assert pod["runAsUser"] == 65532
    assert pod["seccompProfile"] == {"type": "RuntimeDefault"}
    ctx = container()["securityContext"]
    assert ctx["runAsNonRoot"] is True
    assert ctx["runAsUser"] == 65532
    assert ctx["readOnlyRootFilesystem"] is True
    assert ctx["allowPrivilegeEscalation"] is False
    assert ctx["capabilities"] == {"drop": ["ALL"]}
    assert ctx["seccompProfile"] == {"type": "RuntimeDefault"}
    assert container()["resources"]["requests"], "requests make the scheduler's own placement predictable"


def test_a_rollout_starts_the_new_pod_before_stopping_the_old() -> None:
    """Under leader election the old pod hands the Lease to a new one that is already synced."""
    assert one("Deployment")["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
    }


def test_single_replica_has_no_blocking_disruption_budget() -> None:
    assert one("Deployment")["spec"]["replicas"] == 1
    assert of_kind("PodDisruptionBudget") == []


# --- the image ------------------------------------------------------------------------------------


def dockerfile_instructions() -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    return [
        (line.split(None, 1)[0].upper(), line.split(None, 1)[1].strip() if " " in line.strip() else "")
        for line in text.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


@pytest.mark.parametrize(
    ("instruction", "value"),
    [
        pytest.param("ENTRYPOINT", '["py-volcano", "run"]', id="entrypoint"),
        pytest.param("USER", "65532:65532", id="user"),
        pytest.param("EXPOSE", "8080", id="expose"),
    ],
)
def test_image_matches_the_deployment(instruction: str, value: str) -> None:
    assert (instruction, value) in dockerfile_instructions()


def test_image_is_multi_stage_on_a_base_given_as_argument() -> None:
    """Builder and runtime share BASE_IMAGE (python:3.11-slim unless hack/build-image.sh gives another);
    the builder installs wheels only; the runtime stage copies the builder's virtualenv and installs
    nothing, so no compiler or package manager runs there."""
    instructions = dockerfile_instructions()
    args_ = dict(value.split("=", 1) for kind, value in instructions if kind == "ARG" and "=" in value)
    assert args_["BASE_IMAGE"] == "python:3.11-slim"
    stages = [value for kind, value in instructions if kind == "FROM"]
    assert stages == ["${BASE_IMAGE} AS builder", "${BASE_IMAGE}"]
    last_from = max(index for index, (kind, _) in enumerate(instructions) if kind == "FROM")
    builder, final = instructions[:last_from], instructions[last_from + 1 :]
    builder_runs = " ".join(value for kind, value in builder if kind == "RUN")
    assert "--only-binary=:all:" in builder_runs, "dependencies come from wheels, never built from source"
    final_runs = " ".join(value for kind, value in final if kind == "RUN")
    assert not re.search(r"\b(pip|apt-get|gcc|build-essential)\b", final_runs)
    assert ("COPY", "--from=builder /opt/py-volcano /opt/py-volcano") in final
    # the Deployment's user and port are the image's
    assert str(container()["securityContext"]["runAsUser"]) == "65532"
    (probes,) = [port for port in container()["ports"] if port["name"] == "probes"]
    assert str(probes["containerPort"]) == "8080"
