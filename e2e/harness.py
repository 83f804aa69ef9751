"""What the scheduler e2e tests share: raw REST on the test cluster, object builders, a `py-volcano run`
subprocess with its JSON log; their fixtures are in `e2e/fixtures.py`.

Objects are plain dicts, as `kubectl apply` takes them, so the scenario harness and the behaviour tests
create them the same way. Every test gets its own `--scheduler-name`, so pods another test left behind
are never this test's to schedule.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from e2e.controlplane import KWOK_NODE_ANNOTATION, KWOK_NODE_ANNOTATION_VALUE, free_port

T = TypeVar("T")

REPO = Path(__file__).resolve().parent.parent
CRD_DIR = REPO / "crds"
ARTIFACTS = REPO / ".e2e" / "scheduler-logs"

#: kind -> (API prefix, plural, namespaced)
KINDS: dict[str, tuple[str, str, bool]] = {
    "Namespace": ("/api/v1", "namespaces", False),
    "Node": ("/api/v1", "nodes", False),
    "Pod": ("/api/v1", "pods", True),
    "PriorityClass": ("/apis/scheduling.k8s.io/v1", "priorityclasses", False),
    "PodDisruptionBudget": ("/apis/policy/v1", "poddisruptionbudgets", True),
    "Queue": ("/apis/scheduling.volcano.sh/v1beta1", "queues", False),
    "PodGroup": ("/apis/scheduling.volcano.sh/v1beta1", "podgroups", True),
    "Lease": ("/apis/coordination.k8s.io/v1", "leases", True),
    "CustomResourceDefinition": ("/apis/apiextensions.k8s.io/v1", "customresourcedefinitions", False),
}


def wait_for(what: str, fn: Callable[[], T | None], timeout: float = 60.0, interval: float = 0.2) -> T:
    """Poll `fn` until it returns something truthy; fail naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}", pytrace=False)
        time.sleep(interval)


def token(prefix: str) -> str:
    """Return `prefix-<6 hex>`, a fresh DNS-1123 name."""
    return f"{prefix}-{secrets.token_hex(3)}"


class Rest:
    """Plain-dict REST on the test cluster through the official client's authenticated connection."""

    def __init__(self, api_client: Any) -> None:
        self.api_client = api_client

    def request(
        self,
        method: str,
        path: str,
        body: object = None,
        *,
        query: Mapping[str, str] | None = None,
        content_type: str = "application/json",
    ) -> tuple[int, Any]:
        """Return (status, parsed body); never raises for an HTTP status."""
        try:
            method, url, headers, payload, _ = self.api_client.param_serialize(
                method,
                path,
                query_params=list((query or {}).items()),
                header_params={"Content-Type": content_type, "Accept": "application/json"},
                body=body,
                auth_settings=["BearerToken"],
            )
            response = self.api_client.call_api(method, url, header_params=headers, body=payload)
            response.read()
        except ApiException as exc:
            return exc.status, _json(exc.body)
        return response.status, _json(response.data)

    @staticmethod
    def path(kind: str, namespace: str | None = None, name: str | None = None) -> str:
        """Return the collection path of `kind` (in `namespace`), or an object's path with `name`."""
        prefix, plural, namespaced = KINDS[kind]
        path = f"{prefix}/namespaces/{namespace}/{plural}" if namespaced and namespace else f"{prefix}/{plural}"
        return f"{path}/{name}" if name else path

    def ok(self, method: str, path: str, body: object = None, **kwargs: Any) -> Any:
        """Send a request that must succeed; fail the test with the answer otherwise."""
        status, answer = self.request(method, path, body, **kwargs)
        if not 200 <= status < 300:
            pytest.fail(f"{method} {path}: HTTP {status}: {answer}", pytrace=False)
        return answer

    def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Create `obj`, then write its `status` through the status subresource when it carries one."""
        meta = obj["metadata"]
        namespace = meta.get("namespace") or ("default" if KINDS[obj["kind"]][2] else None)
        created: dict[str, Any] = self.ok("POST", self.path(obj["kind"], namespace), dict(obj))
        if obj.get("status") and obj["kind"] not in ("Node", "Namespace"):
            path = self.path(obj["kind"], namespace, meta["name"]) + "/status"
            body = {"status": obj["status"]}
            created = self.ok("PATCH", path, body, content_type="application/merge-patch+json")
        return created

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """Return the object, or None when it does not exist."""
        status, answer = self.request("GET", self.path(kind, namespace, name))
        if status == 404:
            return None
        if status != 200:
            pytest.fail(f"GET {kind} {namespace}/{name}: HTTP {status}: {answer}", pytrace=False)
        return dict(answer)

    def list(self, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        """Return every object of `kind` (in `namespace`)."""
        status, answer = self.request("GET", self.path(kind, namespace))
        if status == 404:
            return []
        if status != 200:
            pytest.fail(f"LIST {kind}: HTTP {status}: {answer}", pytrace=False)
        return list(answer["items"])

    def delete(self, kind: str, name: str, namespace: str | None = None, *, grace: int | None = None) -> None:
        """Delete an object; a missing one is fine."""
        body = {"gracePeriodSeconds": grace} if grace is not None else None
        status, answer = self.request("DELETE", self.path(kind, namespace, name), body)
        if status not in (200, 202, 404):
            pytest.fail(f"DELETE {kind} {namespace}/{name}: HTTP {status}: {answer}", pytrace=False)

    def pods(self, namespace: str) -> dict[str, dict[str, Any]]:
        """Return the pods of `namespace` by name."""
        return {pod["metadata"]["name"]: pod for pod in self.list("Pod", namespace)}

    def node_of(self, namespace: str, name: str) -> str:
        """Return the pod's node name, '' when unbound."""
        pod = self.get("Pod", name, namespace)
        return str(((pod or {}).get("spec") or {}).get("nodeName") or "")


def _json(raw: Any) -> Any:
    if isinstance(raw, bytes):
        raw = raw.decode(errors="replace")
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw


# Builders ---------------------------------------------------------------------------------------------


def node(name: str, *, cpu: str = "4", memory: str = "8Gi", pods: str = "110", **labels: str) -> dict[str, Any]:
    """Return a kwok fake Node with this allocatable (kwok marks it Ready and runs pods bound to it)."""
    resources = {"cpu": cpu, "memory": memory, "pods": pods}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {KWOK_NODE_ANNOTATION: KWOK_NODE_ANNOTATION_VALUE},
            "labels": {"kubernetes.io/hostname": name, "type": "kwok", **labels},
        },
        "status": {"allocatable": resources, "capacity": resources},
    }


def pod(
    name: str,
    namespace: str,
    *,
    scheduler: str,
    cpu: str = "1",
    memory: str = "100Mi",
    group: str = "",
    node_name: str = "",
    priority_class: str = "",
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Return a Pod with one container requesting `cpu`/`memory`, in PodGroup `group` when given."""
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [{"name": "main", "image": "pause", "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
        "tolerations": [{"key": KWOK_NODE_ANNOTATION, "operator": "Exists", "effect": "NoSchedule"}],
    }
    if node_name:
        spec["nodeName"] = node_name
    if priority_class:
        spec["priorityClassName"] = priority_class
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(labels or {})}
    if group:
        meta["annotations"] = {"scheduling.k8s.io/group-name": group}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def pod_group(name: str, namespace: str, *, min_member: int, queue: str = "default", **spec: Any) -> dict[str, Any]:
    """Return a PodGroup."""
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minMember": min_member, "queue": queue, **spec},
    }


def queue(name: str, *, weight: int = 1, **spec: Any) -> dict[str, Any]:
    """Return a Queue."""
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": weight, **spec},
    }


# The scheduler process --------------------------------------------------------------------------------


def py_volcano() -> str:
    """Return the `py-volcano` console script of the running interpreter's environment."""
    beside = Path(sys.executable).parent / "py-volcano"
    return str(beside) if beside.exists() else "py-volcano"


class Scheduler:
    """One `py-volcano run` subprocess logging JSON lines to a file."""

    def __init__(self, kubeconfig: Path, *args: str, name: str = "scheduler", port: int | None = None) -> None:
        """Start `py-volcano run` with these arguments; /metrics on `port` (a free one by default)."""
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        self.log_path = ARTIFACTS / f"{token(name)}.log"
        self.port = port or free_port()
        self.args = [
            py_volcano(),
            "run",
            f"--kubeconfig={kubeconfig}",
            f"--listen-address=127.0.0.1:{self.port}",
            "--log-format=json",
            *args,
        ]
        with open(self.log_path, "wb") as out:
            self.proc = subprocess.Popen(self.args, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def events(self, event: str | None = None) -> list[dict[str, Any]]:
        """Return the JSON log lines so far (those of `event` only, when given)."""
        lines = []
        for text in self.log_path.read_text(errors="replace").splitlines():
            try:
                line = json.loads(text)
            except ValueError:
                continue
            if isinstance(line, dict) and (event is None or line.get("event") == event):
                lines.append(line)
        return lines

    def wait_event(self, event: str, timeout: float = 60.0, **fields: Any) -> dict[str, Any]:
        """Wait until a log line of `event` with these fields appears; fail if the process exits first."""

        def found() -> dict[str, Any] | None:
            for line in self.events(event):
                if all(line.get(k) == v for k, v in fields.items()):
                    return line
            if self.proc.poll() is not None:
                pytest.fail(f"py-volcano exited {self.proc.returncode} before {event}:\n{self.tail()}", pytrace=False)
            return None

        return wait_for(f"{event} {fields or ''} in {self.log_path}", found, timeout=timeout)

    def wait(self, timeout: float = 120.0) -> int:
        """Wait for the process to exit on its own; return its exit code."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"py-volcano still running after {timeout:.0f}s:\n{self.tail()}", pytrace=False)

    def terminate(self, timeout: float = 30.0) -> int:
        """SIGTERM the process and return its exit code."""
        self.proc.send_signal(signal.SIGTERM)
        return self.wait(timeout)

    def kill(self) -> None:
        """SIGKILL the process (its whole group)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def metrics(self) -> str:
        """Return the /metrics page."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as response:
            return str(response.read().decode())

    def tail(self, lines: int = 40) -> str:
        """Return the last log lines."""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def bound(self) -> list[str]:
        """Return the `ns/pod` of every successful bind logged (needs --log-level=debug)."""
        return [str(line["task"]) for line in self.events("task_bound")]

    def __enter__(self) -> Scheduler:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.proc.poll() is None:
            self.kill()


def delete_namespace(rest: Rest, name: str, *, wait: bool = True) -> None:
    """Delete a namespace, its pods at once (kwok has no kubelet to wait for), and wait until it is gone."""
    rest.request("DELETE", Rest.path("Pod", name), {"gracePeriodSeconds": 0})
    rest.delete("Namespace", name)
    if wait:
        wait_for(f"namespace {name} deleted", lambda: rest.get("Namespace", name) is None, timeout=120)


def create_namespace(rest: Rest, name: str) -> str:
    """Create a namespace whose default ServiceAccount exists (pods can be created)."""
    rest.ok("POST", Rest.path("Namespace"), {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    path = f"/api/v1/namespaces/{name}/serviceaccounts/default"
    wait_for(f"ServiceAccount {name}/default", lambda: rest.request("GET", path)[0] == 200)
    return name


class Nodes:
    """kwok fake nodes created by one test, all deleted afterwards."""

    def __init__(self, rest: Rest) -> None:
        self.rest = rest
        self.names: list[str] = []

    def add(self, prefix: str = "kwok", **kwargs: Any) -> str:
        """Create a fake node; return its name once kwok reports it Ready."""
        name = token(prefix)
        self.create(node(name, **kwargs))
        return name

    def create(self, manifest: Mapping[str, Any]) -> str:
        """Create a node manifest (with its status) and wait until it is Ready."""
        name = str(manifest["metadata"]["name"])
        self.rest.ok("POST", Rest.path("Node"), dict(manifest))
        self.names.append(name)

        def ready() -> bool:
            obj = self.rest.get("Node", name) or {}
            conditions = (obj.get("status") or {}).get("conditions") or []
            return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

        wait_for(f"node {name} Ready", ready)
        return name

    def delete_all(self) -> None:
        """Delete every node this test created."""
        for name in self.names:
            self.rest.delete("Node", name)
        self.names.clear()


def install_crds(client: Rest) -> None:
    """Create the Volcano CRDs (kept when present) and wait until they are Established."""
    names = []
    for path in sorted(CRD_DIR.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        names.append(crd["metadata"]["name"])
        status, answer = client.request("POST", Rest.path("CustomResourceDefinition"), crd)
        if status not in (201, 409):
            pytest.fail(f"create CRD {path.name}: HTTP {status}: {answer}", pytrace=False)

    def established() -> bool:
        for name in names:
            crd = client.get("CustomResourceDefinition", name) or {}
            conditions = (crd.get("status") or {}).get("conditions") or []
            if not any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                return False
        return True

    wait_for("Volcano CRDs Established", established)
