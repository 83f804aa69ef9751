"""Installing py-volcano the way users do, against the real API server: `helm install` creates every
object the chart renders; the scheduler runs with nothing but the chart's RBAC (least privilege that is
still enough); the README quick start (`hack/demo.sh`) works as written.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e.controlplane import free_port
from e2e.harness import (
    REPO,
    Nodes,
    Rest,
    Scheduler,
    create_namespace,
    delete_namespace,
    pod,
    pod_group,
    token,
    wait_for,
)
from e2e.test_chart import CHART, find_helm

pytest_plugins = ["e2e.fixtures"]

#: kind -> path of its collection (namespaced ones take the namespace)
COLLECTIONS = {
    "ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
    "ConfigMap": "/api/v1/namespaces/{ns}/configmaps",
    "Service": "/api/v1/namespaces/{ns}/services",
    "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
    "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
    "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
    "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    "PodDisruptionBudget": "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets",
    "CustomResourceDefinition": "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
}


@pytest.fixture
def helm() -> str:
    found = find_helm()
    if found is None:
        pytest.fail("helm not found (bash hack/build-control-plane.sh helm)", pytrace=False)
    return found


@pytest.fixture
def release(control_plane: Any, rest: Rest, helm: str) -> Any:
    """`helm install` of the chart into a fresh namespace (two replicas: leader election and a PDB).

    The cluster has the CRDs already (installed for every test): the release takes them over, as a
    release of chart 0.1.0 moving to CRD templates does, and keeps them when uninstalled.
    """
    namespace = create_namespace(rest, token("pv-install"))
    name = token("pv")
    values = ["--set", "replicaCount=2"]
    subprocess.run(
        [helm, "install", name, str(CHART), "--namespace", namespace, "--kubeconfig", str(control_plane.kubeconfig),
         *values, "--take-ownership", "--wait=false"],
        check=True, capture_output=True, text=True, cwd=REPO,
    )
    yield name, namespace, render_release(helm, name, namespace, values)
    subprocess.run(
        [helm, "uninstall", name, "--namespace", namespace, "--kubeconfig", str(control_plane.kubeconfig)],
        check=False, capture_output=True, text=True, cwd=REPO,
    )
    delete_namespace(rest, namespace)


def render_release(helm: str, name: str, namespace: str, values: list[str]) -> list[dict[str, Any]]:
    out = subprocess.run(
        [helm, "template", name, str(CHART), "--namespace", namespace, *values],
        check=True, capture_output=True, text=True, cwd=REPO,
    ).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def test_helm_install_creates_every_object(rest: Rest, release: Any) -> None:
    """Every object of the rendered chart exists in the cluster after `helm install`."""
    _, namespace, docs = release
    assert {doc["kind"] for doc in docs} >= {"Deployment", "ClusterRole", "ConfigMap", "Service", "PodDisruptionBudget"}
    for doc in docs:
        path = COLLECTIONS[doc["kind"]].format(ns=namespace) + "/" + doc["metadata"]["name"]
        status, _ = rest.request("GET", path)
        assert status == 200, f"{doc['kind']} {doc['metadata']['name']} was not created"


def _token_kubeconfig(control_plane: Any, rest: Rest, namespace: str, account: str, where: Path) -> Path:
    admin = yaml.safe_load(Path(control_plane.kubeconfig).read_text())
    cluster = dict(admin["clusters"][0]["cluster"])
    answer = rest.ok(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}},
    )
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "e2e", "cluster": cluster}],
        "users": [{"name": account, "user": {"token": answer["status"]["token"]}}],
        "contexts": [{"name": "sa", "context": {"cluster": "e2e", "user": account}}],
        "current-context": "sa",
    }
    where.write_text(yaml.safe_dump(config))
    return where


def test_scheduler_runs_with_only_the_charts_rbac(
    control_plane: Any, rest: Rest, release: Any, nodes: Nodes, tmp_path: Path
) -> None:
    """With the chart's ServiceAccount and nothing else, the leader schedules a gang and writes status."""
    name, namespace, docs = release
    account = next(doc["metadata"]["name"] for doc in docs if doc["kind"] == "ServiceAccount")
    kubeconfig = _token_kubeconfig(control_plane, rest, namespace, account, tmp_path / "sa.kubeconfig")
    scheduler = token("pv-rbac")
    workload = create_namespace(rest, token("pv-rbac"))
    try:
        nodes.add(cpu="4")
        rest.create(pod_group("gang", workload, min_member=2))
        for i in range(2):
            rest.create(pod(f"gang-{i}", workload, scheduler=scheduler, group="gang"))
        with Scheduler(kubeconfig, f"--scheduler-name={scheduler}", f"--leader-elect-namespace={namespace}",
                       f"--leader-elect-lease-name={name}") as process:
            wait_for("both gang pods bound", lambda: all(rest.node_of(workload, f"gang-{i}") for i in range(2)),
                     timeout=90)
            wait_for("PodGroup status written", lambda: ((rest.get("PodGroup", "gang", workload) or {})
                                                          .get("status") or {}).get("phase") == "Running", timeout=60)
            assert process.terminate() == 0, process.tail()
        forbidden = [line for line in process.events() if "HTTP 403" in str(line) or "forbidden" in str(line).lower()]
        assert not forbidden, forbidden[:3]
    finally:
        delete_namespace(rest, workload)


def test_readme_quick_start(tmp_path: Path) -> None:
    """`hack/demo.sh` (the README's first command) brings the scheduler up and schedules the demo workload."""
    env = {**os.environ, "DEMO_SECONDS": "0", "DEMO_PORT": str(free_port()), "TMPDIR": str(tmp_path)}
    result = subprocess.run(["bash", "hack/demo.sh"], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert any(line.split()[:3] == ["train", "Running", "4"] for line in lines), result.stdout
    assert any(line.split()[:2] == ["too-big", "Inqueue"] for line in lines), result.stdout
    # the batch/v1 Job: its four pods in one PodGroup made by the controller, each on a node
    render = [line.split() for line in lines if line.startswith("render-") and len(line.split()) == 3]
    assert len(render) == 4 and len({group for _, group, _ in render}) == 1, result.stdout
    assert all(group.startswith("podgroup-") and node.startswith("demo-node-") for _, group, node in render)
    assert "Unschedulable: " in result.stdout
    assert 'volcano_queue_deserved_milli_cpu{queue_name="research"}' in result.stdout
