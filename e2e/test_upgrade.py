"""`helm upgrade` of a running release keeps scheduling: the new pod takes the Lease over.

No kubelet runs the Deployment's pods here, so the test plays the part of the Deployment controller in
the chart's rolling update under leader election (maxSurge 1, maxUnavailable 0): the pod of the new
revision starts beside the old one, becomes ready as a standby, then the old one gets SIGTERM, releases
the Lease and exits, and the new one takes over. Each pod is its revision's container run as a local
process holding only the release's ServiceAccount (e2e/chart_pods.py). Pods created before the upgrade,
while both run, and after the hand-over are all bound, each by the pod leading at the time, once.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from e2e.chart_pods import ChartPod, manifest, service_account_kubeconfig
from e2e.harness import Nodes, Rest, Scheduler, create_namespace, delete_namespace, pod, token, wait_for
from e2e.test_chart import CHART, find_helm, run

pytest_plugins = ["e2e.fixtures"]


@pytest.fixture
def helm() -> str:
    found = find_helm()
    if found is None:
        pytest.fail("helm not found (bash hack/build-control-plane.sh helm)", pytrace=False)
    return found


@pytest.fixture
def release(control_plane: Any, rest: Rest, helm: str) -> Iterator[tuple[str, str]]:
    """A release name and its namespace; the release is uninstalled and the namespace deleted after."""
    namespace = create_namespace(rest, token("pv-upgrade"))
    name = token("pv")
    yield name, namespace
    run(helm, "uninstall", name, "--namespace", namespace, "--kubeconfig", str(control_plane.kubeconfig), check=False)
    delete_namespace(rest, namespace)


def _ready(process: Scheduler) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{process.port}/readyz", timeout=2) as answer:
            return bool(answer.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _create_and_bind(rest: Rest, namespace: str, scheduler: str, names: list[str]) -> None:
    for name in names:
        rest.create(pod(name, namespace, scheduler=scheduler, cpu="100m"))
    wait_for(f"{names} bound", lambda: all(rest.node_of(namespace, name) for name in names), timeout=60)


def test_helm_upgrade_hands_the_lease_to_the_new_pod_and_scheduling_goes_on(
    control_plane: Any, rest: Rest, nodes: Nodes, namespace: str, helm: str, release: tuple[str, str],
    tmp_path: Path,
) -> None:
    name, release_ns = release
    scheduler = token("pv-up")
    kubeconfig = Path(control_plane.kubeconfig)

    def helm_(*args: str) -> None:
        run(helm, *args, "--namespace", release_ns, "--kubeconfig", str(kubeconfig))

    # The cluster's CRDs belong to its setup here (e2e/test_chart.py upgrades CRDs through a release).
    helm_("install", name, str(CHART), "--set", "crds.install=false", "--set", f"scheduler.name={scheduler}",
          "--set", "scheduler.schedulePeriod=0.3", "--set", "scheduler.logLevel=debug", "--wait=false")
    first = ChartPod.of(manifest(helm, name, release_ns, kubeconfig), name=f"{name}-old", workdir=tmp_path)
    account = service_account_kubeconfig(kubeconfig, rest, release_ns, first.service_account, tmp_path / "sa")
    nodes.add(cpu="16")
    before, during, after = ([f"{phase}-{i}" for i in range(3)] for phase in ("before", "during", "after"))

    with first.start(account) as old:
        old.wait_event("leader_elected")
        _create_and_bind(rest, namespace, scheduler, before)

        helm_("upgrade", name, str(CHART), "--reuse-values", "--set", "podAnnotations.rollout=two")
        second = ChartPod.of(manifest(helm, name, release_ns, kubeconfig), name=f"{name}-new", workdir=tmp_path)
        assert second.template != first.template, "the upgrade changes the pod template: a rollout"
        with second.start(account) as new:
            wait_for("the new pod ready as a standby", lambda: _ready(new), timeout=60)
            _create_and_bind(rest, namespace, scheduler, during)
            assert not new.events("leader_elected"), "the old pod leads until it stops"

            assert old.terminate() == 0, old.tail()  # the rollout stops the old pod once the new one is ready
            assert old.events("lease_released"), old.tail()
            new.wait_event("leader_elected", timeout=30)
            _create_and_bind(rest, namespace, scheduler, after)

            lease = rest.get("Lease", "py-volcano", release_ns) or {}
            (identity,) = {line["identity"] for line in new.events("leader_election_started")}
            assert lease["spec"]["holderIdentity"] == identity
            # The API server shows a binding before its scheduler logs it: read each log once its process stopped.
            assert new.terminate() == 0, new.tail()
            by_old, by_new = old.bound(), new.bound()
            assert sorted(by_old) == sorted(f"{namespace}/{p}" for p in before + during), old.tail()
            assert sorted(by_new) == sorted(f"{namespace}/{p}" for p in after), new.tail()
            assert not [line for line in new.events() if line.get("level") == "error"], new.tail()
