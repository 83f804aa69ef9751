"""The scheduler pod of an installed chart release, run the way the kubelet would run it, without one.

The local control plane has kwok nodes only: nothing runs a Deployment's pods. `ChartPod` reads the
Deployment and the ConfigMap of `helm get manifest` and runs the scheduler container's arguments, with
its `$(VAR)` references expanded from its env (fieldRefs resolved for a pod name of our choosing), its
ConfigMap volume written to a folder, and a token of the release's ServiceAccount for credentials, so
the process holds exactly the chart's RBAC. As a local process (`start`) or, in e2e/test_image.py, in
the image under podman. Two things a host cannot share between pods are rewritten: the ConfigMap
mount path (a folder of the test's) and the listen address (a free loopback port).
"""

from __future__ import annotations

import base64
import re
import resource
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from e2e.controlplane import free_port
from e2e.harness import Rest, Scheduler

__all__ = ["ChartPod", "in_cluster_credentials", "manifest", "podman_run", "service_account_kubeconfig"]


def manifest(helm: str, release: str, namespace: str, kubeconfig: Path) -> list[dict[str, Any]]:
    """Return the objects of the release's current revision (`helm get manifest`)."""
    out = subprocess.run(
        [helm, "get", "manifest", release, "--namespace", namespace, "--kubeconfig", str(kubeconfig)],
        check=True, capture_output=True, text=True,
    ).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def service_account_kubeconfig(admin: Path, rest: Rest, namespace: str, account: str, where: Path) -> Path:
    """Write a kubeconfig holding a one-hour token of `namespace/account` (the API server of `admin`)."""
    config = yaml.safe_load(admin.read_text())
    cluster = dict(config["clusters"][0]["cluster"])
    answer = rest.ok(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}},
    )
    where.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "e2e", "cluster": cluster}],
                "users": [{"name": account, "user": {"token": answer["status"]["token"]}}],
                "contexts": [{"name": "sa", "context": {"cluster": "e2e", "user": account}}],
                "current-context": "sa",
            }
        )
    )
    return where


def _one(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [doc for doc in docs if doc["kind"] == kind]
    return found


@dataclass
class ChartPod:
    """One pod of the release's Deployment: its container's arguments and env, and its ConfigMap files."""

    name: str
    namespace: str
    args: list[str]
    env: dict[str, str]
    config_dir: Path
    mount_path: str
    service_account: str
    template: dict[str, Any]
    image: str
    security: dict[str, Any]
    scratch: list[str]

    @classmethod
    def of(cls, docs: list[dict[str, Any]], *, name: str, workdir: Path) -> ChartPod:
        """Build pod `name` from a release's objects; its ConfigMap files go under `workdir/name`."""
        deployment = _one(docs, "Deployment")
        namespace = deployment["metadata"]["namespace"]
        spec = deployment["spec"]["template"]["spec"]
        (container,) = spec["containers"]
        fields = {"metadata.namespace": namespace, "metadata.name": name}
        env = {}
        for item in container.get("env", []):
            field = (item.get("valueFrom") or {}).get("fieldRef", {}).get("fieldPath")
            env[item["name"]] = fields.get(field, item.get("value", ""))
        configmaps = {v["name"]: v["configMap"]["name"] for v in spec["volumes"] if "configMap" in v}
        (mount,) = [m for m in container["volumeMounts"] if m["name"] in configmaps]
        (configmap,) = [
            d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == configmaps[mount["name"]]
        ]
        config_dir = workdir / name
        config_dir.mkdir(parents=True)
        for key, text in configmap["data"].items():
            (config_dir / key).write_text(text)
        args = [re.sub(r"\$\((\w+)\)", lambda m: env.get(m.group(1), m.group(0)), arg) for arg in container["args"]]
        return cls(
            name=name,
            namespace=namespace,
            args=args,
            env=env,
            config_dir=config_dir,
            mount_path=mount["mountPath"],
            service_account=spec["serviceAccountName"],
            template=deployment["spec"]["template"],
            image=container["image"],
            security={**spec.get("securityContext", {}), **container.get("securityContext", {})},
            scratch=[m["mountPath"] for m in container["volumeMounts"] if any(
                v["name"] == m["name"] and "emptyDir" in v for v in spec["volumes"]
            )],
        )

    def local_args(self, port: int) -> list[str]:
        """The container's arguments for a process on this host: ConfigMap folder and listen ports rewritten
        (the secure one, when the chart serves it, to another free loopback port)."""
        args = [arg.replace(self.mount_path, str(self.config_dir), 1) for arg in self.args]
        kept = [arg for arg in args if not arg.startswith(("--listen-address=", "--log-format="))]
        return [
            f"--secure-listen-address=127.0.0.1:{free_port()}" if arg.startswith("--secure-listen-address=") else arg
            for arg in kept
        ] + [f"--listen-address=127.0.0.1:{port}"]

    def start(self, kubeconfig: Path) -> Scheduler:
        """Run the container's arguments as a local `py-volcano run` process (JSON logs, a free port)."""
        port = free_port()
        return Scheduler(kubeconfig, *self.local_args(port), name=self.name, port=port)


def in_cluster_credentials(admin: Path, rest: Rest, namespace: str, account: str, where: Path) -> Path:
    """Write what the kubelet mounts at /var/run/secrets/kubernetes.io/serviceaccount: a one-hour token of
    `namespace/account`, the API server's CA and the namespace; return the folder."""
    cluster = yaml.safe_load(admin.read_text())["clusters"][0]["cluster"]
    answer = rest.ok(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}},
    )
    where.mkdir(parents=True)
    (where / "token").write_text(answer["status"]["token"])
    (where / "ca.crt").write_bytes(base64.b64decode(cluster["certificate-authority-data"]))
    (where / "namespace").write_text(namespace)
    for path in where.iterdir():
        path.chmod(0o644)
    return where


def podman_run(pod: ChartPod, credentials: Path, server: str) -> list[str]:
    """Return the `podman run` of the pod's container as the kubelet would run it, on the host's network.

    Its user, read-only root, dropped capabilities and no-new-privileges come from the securityContext;
    its ConfigMap and emptyDir volumes and the ServiceAccount's credentials (`in_cluster_credentials`)
    are mounted where the pod has them; KUBERNETES_SERVICE_HOST/PORT name the API server. runc, and
    rlimits no higher than the sandbox allows: it lacks CAP_SYS_RESOURCE, so podman's default rlimits
    are refused (our open-files limit, and 4,096 processes, below conmon's 32,768, are not), and crun
    refuses its hybrid cgroup layout.
    """
    address = urlsplit(server)
    security = pod.security
    soft_nofile, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    command = [
        "podman", "run", "--detach", "--pull=never", f"--name={pod.name}", "--runtime=runc",
        f"--ulimit=nofile={soft_nofile}:{soft_nofile}", "--ulimit=nproc=4096:4096",
        "--network=host", f"--user={security['runAsUser']}:{security['runAsGroup']}",
        f"--volume={pod.config_dir}:{pod.mount_path}:ro",
        f"--volume={credentials}:/var/run/secrets/kubernetes.io/serviceaccount:ro",
        f"--env=KUBERNETES_SERVICE_HOST={address.hostname}", f"--env=KUBERNETES_SERVICE_PORT={address.port}",
        *(f"--env={name}={value}" for name, value in pod.env.items()),
        *(f"--tmpfs={path}" for path in pod.scratch),
    ]
    if security.get("readOnlyRootFilesystem"):
        command.append("--read-only")
    if security.get("allowPrivilegeEscalation") is False:
        command.append("--security-opt=no-new-privileges")
    command += [f"--cap-drop={cap}" for cap in security.get("capabilities", {}).get("drop", [])]
    return [*command, pod.image, *pod.args]
