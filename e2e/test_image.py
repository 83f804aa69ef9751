"""The image, built from the Dockerfile and run as the chart runs it, schedules pods on the real API server.

`hack/build-image.sh` builds it (buildah here, on a Debian rootfs made by mmdebstrap: no registry serves
a base image; its steps are cached, so a warm build takes under a minute). The chart is installed; its
Deployment's container then runs under podman the way the kubelet would run it (e2e/chart_pods.py):
non-root uid 65532, read-only root filesystem, all capabilities dropped, no new privileges, the
ConfigMap and an emptyDir mounted, and in-cluster credentials of the release's ServiceAccount, so the
process holds the chart's RBAC and nothing else. Pods of a gang are then bound by it, and its /metrics
answers over HTTPS a token bound to the chart's metrics-reader role (the reviews use the chart's
system:auth-delegator binding).
"""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from e2e.chart_pods import ChartPod, in_cluster_credentials, manifest, podman_run
from e2e.controlplane import free_port
from e2e.harness import REPO, Nodes, Rest, create_namespace, delete_namespace, pod, pod_group, token, wait_for
from e2e.test_chart import CHART, find_helm, run

pytest_plugins = ["e2e.fixtures"]


@pytest.fixture(scope="module")
def image() -> str:
    """Build the image with hack/build-image.sh; return its reference as the chart names it."""
    for tool in ("podman", "buildah", "mmdebstrap"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} not on PATH: run `bash hack/install-tools.sh`", pytrace=False)
    result = subprocess.run(["bash", "hack/build-image.sh"], cwd=REPO, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    tag, size, unit = result.stdout.split()[-3:]
    print(f"image {tag}: {size} {unit}")
    assert unit == "MiB" and int(size) < 400, "wheels only, no compilers: the image stays small"
    return tag


@pytest.fixture
def helm() -> str:
    found = find_helm()
    if found is None:
        pytest.fail("helm not found (bash hack/build-control-plane.sh helm)", pytrace=False)
    return found


@pytest.fixture
def container(
    control_plane: Any, rest: Rest, helm: str, image: str, tmp_path: Path
) -> Iterator[tuple[str, int, str, int, str]]:
    """The chart's scheduler container running under podman; yields its scheduler name, probe port,
    container name, secure metrics port and the token of a ServiceAccount bound to the chart's
    metrics-reader ClusterRole."""
    release_ns = create_namespace(rest, token("pv-image"))
    name, scheduler, port, secure_port = token("pv"), token("pv-img"), free_port(), free_port()
    kubeconfig = Path(control_plane.kubeconfig)
    repository, _, tag = image.rpartition(":")
    run(helm, "install", name, str(CHART), "--namespace", release_ns, "--kubeconfig", str(kubeconfig),
        "--set", "crds.install=false", "--set", f"scheduler.name={scheduler}", "--set", f"metrics.port={port}",
        "--set", f"metrics.secure.port={secure_port}",
        "--set", f"image.repository={repository}", "--set", f"image.tag={tag}", "--wait=false")
    scraper = _scraper_token(rest, release_ns, f"{name}-py-volcano-metrics-reader")
    chart_pod = ChartPod.of(manifest(helm, name, release_ns, kubeconfig), name=token("pv-pod"), workdir=tmp_path)
    assert chart_pod.image == image
    credentials = in_cluster_credentials(kubeconfig, rest, release_ns, chart_pod.service_account, tmp_path / "sa")
    started = subprocess.run(podman_run(chart_pod, credentials, control_plane.server), capture_output=True, text=True,
                             check=False)
    try:
        assert started.returncode == 0, started.stderr
        yield scheduler, port, chart_pod.name, secure_port, scraper
    finally:
        logs = subprocess.run(["podman", "logs", chart_pod.name], capture_output=True, text=True, check=False)
        (tmp_path / "container.log").write_text(logs.stdout + logs.stderr)
        subprocess.run(["podman", "rm", "--force", "--time=10", chart_pod.name], capture_output=True, check=False)
        run(helm, "uninstall", name, "--namespace", release_ns, "--kubeconfig", str(kubeconfig), check=False)
        rest.request("DELETE", f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{name}-scraper")
        delete_namespace(rest, release_ns)


def _scraper_token(rest: Rest, namespace: str, role: str) -> str:
    """A ServiceAccount `scraper` bound to the ClusterRole `role`; return a ten-minute token of it."""
    rest.ok("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts", {"metadata": {"name": "scraper"}})
    rest.ok("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
        "metadata": {"name": role.replace("-py-volcano-metrics-reader", "-scraper")},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": "scraper", "namespace": namespace}],
    })
    answer = rest.ok(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/scraper/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 600}},
    )
    return str(answer["status"]["token"])


def _get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except (urllib.error.URLError, OSError):
        return 0


def test_the_image_schedules_pods_as_the_chart_runs_it(
    rest: Rest, nodes: Nodes, namespace: str, container: tuple[str, int, str, int, str]
) -> None:
    """The gang is bound; /metrics answers the scraper's token over HTTPS only; then SIGTERM (what the
    kubelet sends) stops it cleanly, Lease released."""
    scheduler, port, name, secure_port, scraper = container
    nodes.add(cpu="4")
    rest.create(pod_group("gang", namespace, min_member=2))
    for i in range(2):
        rest.create(pod(f"gang-{i}", namespace, scheduler=scheduler, group="gang"))
    wait_for("both gang pods bound by the container", lambda: all(
        rest.node_of(namespace, f"gang-{i}") for i in range(2)), timeout=120)
    assert _get(f"http://127.0.0.1:{port}/healthz") == 200
    assert _get(f"http://127.0.0.1:{port}/readyz") == 200
    assert _get(f"http://127.0.0.1:{port}/metrics") == 404, "/metrics is served securely only"
    unverified = ssl.create_default_context()
    unverified.check_hostname, unverified.verify_mode = False, ssl.CERT_NONE  # self-signed at start
    scrape = urllib.request.Request(
        f"https://127.0.0.1:{secure_port}/metrics", headers={"Authorization": f"Bearer {scraper}"}
    )
    with urllib.request.urlopen(scrape, timeout=10, context=unverified) as answer:
        page = answer.read().decode()
    assert 'volcano_pod_binds_total{result="success"} 2.0' in page
    subprocess.run(["podman", "stop", "--time=30", name], capture_output=True, check=True)
    state = subprocess.run(["podman", "inspect", name], capture_output=True, text=True, check=True)
    assert json.loads(state.stdout)[0]["State"]["ExitCode"] == 0
    logs = subprocess.run(["podman", "logs", name], capture_output=True, text=True, check=True)
    lines = (logs.stdout + logs.stderr).splitlines()
    events = [json.loads(line).get("event") for line in lines if line.startswith("{")]
    assert {"leader_elected", "lease_released", "scheduler_stopped"} <= set(events), events[-10:]
