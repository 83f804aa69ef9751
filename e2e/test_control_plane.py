"""The local control plane (or E2E_KUBECONFIG cluster) behaves like a real cluster."""

from __future__ import annotations

import secrets
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from e2e import controlplane
from e2e.controlplane import KWOK_NODE_ANNOTATION, KWOK_NODE_ANNOTATION_VALUE

T = TypeVar("T")

KWOK_TAINT_KEY = "kwok.x-k8s.io/node"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"


def wait_for(what: str, fn: Callable[[], T | None], timeout: float = 60.0, interval: float = 0.2) -> T:
    """Poll ``fn`` until it returns something truthy; fail with ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    last_exc: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = fn()
            if value:
                return value
        except ApiException as e:
            last_exc = e
        time.sleep(interval)
    pytest.fail(
        f"timed out after {timeout:.0f}s waiting for {what}"
        + (f" (last error: {last_exc})" if last_exc else "")
    )


def _name(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(3)}"


@pytest.fixture
def core(kube: Any) -> client.CoreV1Api:
    return client.CoreV1Api(kube)


@pytest.fixture
def namespace(core: client.CoreV1Api) -> Iterator[str]:
    """A fresh namespace whose default ServiceAccount exists (pods can be created)."""
    name = _name("e2e")
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    wait_for(f"ServiceAccount {name}/default", lambda: core.read_namespaced_service_account("default", name))
    yield name
    try:
        core.delete_namespace(name)
    except ApiException as e:
        if e.status != 404:
            raise


@pytest.fixture(scope="module")
def fake_node(kube: Any) -> Iterator[str]:
    """A kwok fake node, registered the way a kubelet would (with the not-ready taint)."""
    core = client.CoreV1Api(kube)
    name = _name("kwok-node")
    node = client.V1Node(
        metadata=client.V1ObjectMeta(
            name=name,
            annotations={KWOK_NODE_ANNOTATION: KWOK_NODE_ANNOTATION_VALUE},
            labels={"type": "kwok", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux"},
        ),
        spec=client.V1NodeSpec(
            taints=[
                client.V1Taint(key=NOT_READY_TAINT, effect="NoSchedule"),
                client.V1Taint(key=KWOK_TAINT_KEY, value="fake", effect="NoSchedule"),
            ]
        ),
    )
    core.create_node(node)
    yield name
    core.delete_node(name)


def _pod(name: str, node: str | None = None, labels: dict[str, str] | None = None) -> client.V1Pod:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels=labels or {"app": name}),
        spec=client.V1PodSpec(
            node_name=node,
            containers=[client.V1Container(name="main", image="registry.k8s.io/pause:3.10")],
            tolerations=[client.V1Toleration(key=KWOK_TAINT_KEY, operator="Exists", effect="NoSchedule")],
            termination_grace_period_seconds=0,
        ),
    )


def _node_ready(core: client.CoreV1Api, name: str) -> client.V1Node | None:
    node = core.read_node(name)
    conditions = {c.type: c.status for c in (node.status.conditions or [])}
    taints = {t.key for t in (node.spec.taints or [])}
    if conditions.get("Ready") == "True" and NOT_READY_TAINT not in taints:
        return node
    return None


def _pod_running(core: client.CoreV1Api, ns: str, name: str) -> client.V1Pod | None:
    pod = core.read_namespaced_pod(name, ns)
    return pod if pod.status.phase == "Running" else None


def _gone(read: Callable[[], object]) -> bool:
    try:
        read()
    except ApiException as e:
        if e.status == 404:
            return True
        raise
    return False


def test_api_server_answers(kube: Any, control_plane: Any) -> None:
    info = client.VersionApi(kube).get_code()
    assert info.git_version.startswith("v1."), info.git_version
    assert info.major == "1"
    resp = kube.call_api("GET", f"{kube.configuration.host}/readyz")
    resp.read()
    assert resp.status == 200
    assert resp.data == b"ok"


def test_rbac_is_enforced(kube: Any, namespace: str) -> None:
    """The admin is system:masters; an arbitrary ServiceAccount is denied by RBAC."""
    review = client.AuthorizationV1Api(kube).create_subject_access_review(
        client.V1SubjectAccessReview(
            spec=client.V1SubjectAccessReviewSpec(
                user=f"system:serviceaccount:{namespace}:default",
                resource_attributes=client.V1ResourceAttributes(
                    namespace=namespace, verb="list", resource="secrets"
                ),
            )
        )
    )
    assert review.status.allowed is False
    mine = client.AuthorizationV1Api(kube).create_self_subject_access_review(
        client.V1SelfSubjectAccessReview(
            spec=client.V1SelfSubjectAccessReviewSpec(
                resource_attributes=client.V1ResourceAttributes(verb="*", resource="*", group="*")
            )
        )
    )
    assert mine.status.allowed is True


def test_namespace_create_and_delete(core: client.CoreV1Api) -> None:
    name = _name("e2e-ns")
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    core.create_namespaced_config_map(
        name, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="data"), data={"k": "v"})
    )
    core.delete_namespace(name)
    # The namespace controller empties it and removes the kubernetes finalizer.
    wait_for(
        f"namespace {name} to be finalized and removed", lambda: _gone(lambda: core.read_namespace(name))
    )


def test_default_service_account_appears(core: client.CoreV1Api) -> None:
    name = _name("e2e-sa")
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    try:
        sa = wait_for("default ServiceAccount", lambda: core.read_namespaced_service_account("default", name))
        assert sa.metadata.name == "default"
        # The serviceaccount-token controller needs the signing key: a token can be issued.
        token = core.create_namespaced_service_account_token(
            "default", name, client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[]))
        )
        assert token.status.token.count(".") == 2
        # kube-root-ca is not needed, but the namespace is usable: a ConfigMap can be created.
    finally:
        core.delete_namespace(name)


def test_kwok_node_becomes_ready(core: client.CoreV1Api, fake_node: str) -> None:
    node = wait_for(f"node {fake_node} Ready without {NOT_READY_TAINT}", lambda: _node_ready(core, fake_node))
    assert (node.status.allocatable or {})["pods"]
    assert node.status.node_info.kubelet_version.startswith("kwok-")
    # kwok keeps the node's Lease alive.
    lease = wait_for(
        "node lease",
        lambda: client.CoordinationV1Api(core.api_client).read_namespaced_lease(fake_node, "kube-node-lease"),
    )
    assert lease.spec.holder_identity  # kwok's controller id
    assert lease.spec.renew_time is not None


def test_pod_bound_to_fake_node_runs_and_is_deleted(
    core: client.CoreV1Api, fake_node: str, namespace: str
) -> None:
    wait_for(f"node {fake_node} Ready", lambda: _node_ready(core, fake_node))
    core.create_namespaced_pod(namespace, _pod("bound", node=fake_node))
    pod = wait_for("pod Running", lambda: _pod_running(core, namespace, "bound"))
    assert pod.status.pod_ip
    assert all(cs.ready for cs in pod.status.container_statuses)
    core.delete_namespaced_pod("bound", namespace)
    # kwok plays the kubelet's part: the deleted pod goes away for good.
    wait_for("deleted pod to disappear", lambda: _gone(lambda: core.read_namespaced_pod("bound", namespace)))


def test_pdb_status_is_filled(kube: Any, core: client.CoreV1Api, fake_node: str, namespace: str) -> None:
    wait_for(f"node {fake_node} Ready", lambda: _node_ready(core, fake_node))
    for i in range(2):
        core.create_namespaced_pod(namespace, _pod(f"guarded-{i}", node=fake_node, labels={"app": "guarded"}))
    for i in range(2):
        wait_for(f"pod guarded-{i} Running", partial(_pod_running, core, namespace, f"guarded-{i}"))
    policy = client.PolicyV1Api(kube)
    policy.create_namespaced_pod_disruption_budget(
        namespace,
        client.V1PodDisruptionBudget(
            metadata=client.V1ObjectMeta(name="guard"),
            spec=client.V1PodDisruptionBudgetSpec(
                min_available=1, selector=client.V1LabelSelector(match_labels={"app": "guarded"})
            ),
        ),
    )

    def filled() -> client.V1PodDisruptionBudget | None:
        pdb = policy.read_namespaced_pod_disruption_budget("guard", namespace)
        s = pdb.status
        ok = s is not None and s.observed_generation == 1 and s.current_healthy == 2 and s.expected_pods == 2
        return pdb if ok else None

    pdb = wait_for("PDB status from the disruption controller", filled)
    assert pdb.status.disruptions_allowed == 1
    assert pdb.status.desired_healthy == 1


def test_kubectl_apply_server_dry_run(control_plane: Any, core: client.CoreV1Api, namespace: str) -> None:
    manifest = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dry\n"
        f"  namespace: {namespace}\ndata:\n  key: value\n"
    )
    res = subprocess.run(
        [
            control_plane.binary("kubectl"),
            f"--kubeconfig={control_plane.kubeconfig}",
            "apply",
            "--dry-run=server",
            "-f",
            "-",
        ],
        input=manifest,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    assert "configmap/dry created (server dry run)" in res.stdout
    assert _gone(lambda: core.read_namespaced_config_map("dry", namespace))
    # Server-side validation runs in dry-run too.
    bad = manifest.replace("kind: ConfigMap", "kind: ConfigMap\nspec: {}")
    res = subprocess.run(
        [
            control_plane.binary("kubectl"),
            f"--kubeconfig={control_plane.kubeconfig}",
            "apply",
            "--dry-run=server",
            "--validate=strict",
            "-f",
            "-",
        ],
        input=bad,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert res.returncode != 0
    assert "spec" in res.stderr


def test_kube_scheduler_binds_pod(
    control_plane: Any, core: client.CoreV1Api, fake_node: str, namespace: str
) -> None:
    if control_plane.external:
        pytest.skip("kube-scheduler is managed by the external cluster")
    wait_for(f"node {fake_node} Ready", lambda: _node_ready(core, fake_node))
    control_plane.start_kube_scheduler()
    try:
        core.create_namespaced_pod(namespace, _pod("scheduled"))
        pod = wait_for("pod scheduled and Running", lambda: _pod_running(core, namespace, "scheduled"))
        assert pod.spec.node_name == fake_node
    finally:
        control_plane.stop_kube_scheduler()


def test_restart_apiserver(control_plane: Any, kube: Any, core: client.CoreV1Api, namespace: str) -> None:
    if control_plane.external:
        pytest.skip("cannot restart the API server of an external cluster")
    core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="survivor"), data={"k": "v"})
    )
    elapsed = control_plane.restart_apiserver()
    assert elapsed < 120
    assert core.read_namespaced_config_map("survivor", namespace).data == {"k": "v"}
    # The controllers reconnect: a new namespace still gets its ServiceAccount.
    name = _name("e2e-after-restart")
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    try:
        wait_for(
            "ServiceAccount after restart", lambda: core.read_namespaced_service_account("default", name)
        )
    finally:
        core.delete_namespace(name)


def test_a_port_taken_before_its_bind_starts_the_plane_again_on_new_ports(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A port `free_port` gave out that another process bound before the component did (a parallel test
    worker, say: it failed the README's quick start in CI once) starts the plane again on new ports."""
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = int(taken.getsockname()[1])
    asked = iter(range(1000))
    real = controlplane.free_port
    monkeypatch.setattr(controlplane, "free_port", lambda: port if next(asked) == 2 else real())  # the API server's
    try:
        with controlplane.ControlPlane(tmp_path / "plane", keep_work_dir=False) as plane:
            assert plane.running("kube-apiserver") and plane.ports["kube-apiserver"] != port
        assert "kube-apiserver exited (code 1): its port was taken" in capsys.readouterr().err  # the first start
    finally:
        taken.close()
