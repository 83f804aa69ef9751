"""Fixtures for end-to-end tests against a real Kubernetes API server.

* ``control_plane`` (session): the cluster under test.  With ``E2E_KUBECONFIG``
  set, that existing cluster (kind, ...) is used as is; otherwise a local
  :class:`e2e.controlplane.ControlPlane` is built if needed and started.  A
  control plane that cannot be built or started FAILS the tests using it; it
  never skips them.
* ``kube`` (session): an official ``kubernetes`` client ``ApiClient`` for it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from e2e.controlplane import ControlPlane, ControlPlaneError


class ExistingCluster:
    """The cluster named by ``E2E_KUBECONFIG``: same read-only surface as ControlPlane."""

    external = True

    def __init__(self, kubeconfig: str) -> None:
        import yaml

        self.kubeconfig = Path(kubeconfig).resolve()
        cfg = yaml.safe_load(self.kubeconfig.read_text()) or {}
        ctx_name = cfg.get("current-context")
        ctx: dict[str, Any] = next((c["context"] for c in cfg.get("contexts", []) if c.get("name") == ctx_name), {})
        cluster = next(
            (c["cluster"] for c in cfg.get("clusters", []) if c.get("name") == ctx.get("cluster")),
            (cfg.get("clusters") or [{"cluster": {}}])[0]["cluster"],
        )
        self.server: str = cluster.get("server", "")

    def binary(self, name: str) -> str:
        import shutil

        found = shutil.which(name)
        if found is None:
            raise ControlPlaneError(f"binary {name!r} not on PATH")
        return found

    def _unsupported(self, *_: Any, **__: Any) -> Any:
        raise NotImplementedError("not possible on an existing cluster (E2E_KUBECONFIG)")

    start_kube_scheduler = _unsupported
    restart_apiserver = _unsupported


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane | ExistingCluster]:
    kubeconfig = os.environ.get("E2E_KUBECONFIG")
    if kubeconfig:
        yield ExistingCluster(kubeconfig)
        return
    cp = ControlPlane()
    error = None
    try:
        cp.start()
    except (ControlPlaneError, OSError) as e:
        error = str(e)
    if error is not None:
        cp.stop()
        pytest.fail(f"local Kubernetes control plane could not be built or started: {error}", pytrace=False)
    try:
        yield cp
    finally:
        cp.stop()


@pytest.fixture(scope="session")
def kube(control_plane: ControlPlane | ExistingCluster) -> Iterator[Any]:
    """``kubernetes.client.ApiClient`` authenticated as cluster admin."""
    from kubernetes import config

    api = config.new_client_from_config(config_file=str(control_plane.kubeconfig))
    try:
        yield api
    finally:
        api.close()
