"""charts/py-volcano with `sharding.enabled`, rendered by the real helm: one scheduler Deployment per shard
(its NodeShard, its Lease, its pod label), one shard controller Deployment running `py-volcano shard --every`
with the RBAC it needs, and Service and PodDisruptionBudget selectors that still match the right pods.

helm comes from hack/build-control-plane.sh (as in e2e/test_chart.py); without it these tests fail.
The sharded chart is checked against a real API server in e2e/test_chart.py.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e.test_chart import find_helm
from py_volcano.cli import build_parser

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "charts" / "py-volcano"
SHARD_LABEL = "scheduling.py-volcano.io/node-shard"
#: Two shards, the second with a set-based selector (spaces, parentheses, a comma).
SHARDS = [{"name": "gpu", "selector": "pool=gpu"}, {"name": "cpu", "selector": "pool in (cpu,general)"}]


@pytest.fixture(scope="module")
def helm() -> str:
    found = find_helm()
    if found is None:
        pytest.fail("helm not found (bash hack/build-control-plane.sh helm)", pytrace=False)
    return found


def helm_template(helm: str, tmp_path: Path, values: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    file = tmp_path / "values.yaml"
    file.write_text(yaml.safe_dump(values))
    command = [helm, "template", "py-volcano", str(CHART), "--namespace", "volcano-system", "-f", str(file), *args]
    return subprocess.run(command, capture_output=True, text=True, check=False)


def render(helm: str, tmp_path: Path, values: dict[str, Any], *args: str) -> list[dict[str, Any]]:
    result = helm_template(helm, tmp_path, values, *args)
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def sharded(**sharding: Any) -> dict[str, Any]:
    return {"sharding": {"enabled": True, "shards": SHARDS, **sharding}}


def by_name(docs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {doc["metadata"]["name"]: doc for doc in docs if doc["kind"] == kind}


def container(deployment: dict[str, Any]) -> dict[str, Any]:
    (found,) = deployment["spec"]["template"]["spec"]["containers"]
    return dict(found)


def pod_labels(deployment: dict[str, Any]) -> dict[str, str]:
    return dict(deployment["spec"]["template"]["metadata"]["labels"])


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return selector.items() <= labels.items()


def test_one_scheduler_deployment_per_shard_each_on_its_node_shard_and_lease(helm: str, tmp_path: Path) -> None:
    deployments = by_name(render(helm, tmp_path, sharded()), "Deployment")
    assert set(deployments) == {"py-volcano-gpu", "py-volcano-cpu", "py-volcano-shard-controller"}
    leases = []
    for shard in ("gpu", "cpu"):
        deployment = deployments[f"py-volcano-{shard}"]
        args = container(deployment)["args"]
        assert {"--scheduler-sharding-mode=hard", f"--scheduler-sharding-name={shard}", "--leader-elect"} <= set(args)
        leases += [arg.split("=", 1)[1] for arg in args if arg.startswith("--leader-elect-lease-name=")]
        parsed = build_parser().parse_args(["run", *args])  # every flag is one `py-volcano run` knows
        assert (parsed.scheduler_sharding_mode, parsed.scheduler_sharding_name) == ("hard", shard)
        assert deployment["metadata"]["labels"][SHARD_LABEL] == pod_labels(deployment)[SHARD_LABEL] == shard
        assert deployment["spec"]["selector"]["matchLabels"][SHARD_LABEL] == shard
        assert selects(deployment["spec"]["selector"]["matchLabels"], pod_labels(deployment))
    assert leases == ["py-volcano-gpu", "py-volcano-cpu"], "each shard elects its own leader"
    for name, deployment in deployments.items():
        others = [pod_labels(other) for other_name, other in deployments.items() if other_name != name]
        assert not [labels for labels in others if selects(deployment["spec"]["selector"]["matchLabels"], labels)]


def test_the_shard_controller_syncs_every_shard_on_the_resync_period(helm: str, tmp_path: Path) -> None:
    docs = render(helm, tmp_path, sharded(resyncSeconds=5))
    controller = by_name(docs, "Deployment")["py-volcano-shard-controller"]
    spec = container(controller)
    assert spec["command"] == ["py-volcano", "shard"]
    assert spec["args"] == [
        "--every=5",
        "--shard=gpu=pool=gpu",
        "--shard=cpu=pool in (cpu,general)",
        "--log-level=info",
        "--log-format=json",
    ]
    parsed = build_parser().parse_args(["shard", *spec["args"]])
    assert parsed.every == 5.0
    assert parsed.shards == [("gpu", "pool=gpu"), ("cpu", "pool in (cpu,general)")]
    assert controller["spec"]["replicas"] == 1
    assert spec["resources"] == {"requests": {"cpu": "10m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}}
    assert (
        "--every=30"
        in container(by_name(render(helm, tmp_path, sharded()), "Deployment")["py-volcano-shard-controller"])["args"]
    ), "the default period"


def test_the_shard_controller_has_its_own_account_with_only_what_it_needs(helm: str, tmp_path: Path) -> None:
    docs = render(helm, tmp_path, sharded())
    controller = by_name(docs, "Deployment")["py-volcano-shard-controller"]
    account = controller["spec"]["template"]["spec"]["serviceAccountName"]
    assert account == "py-volcano-shard-controller"
    assert account in by_name(docs, "ServiceAccount")
    roles = by_name(docs, "ClusterRole")
    rules = {(tuple(r["apiGroups"]), tuple(r["resources"])): r["verbs"] for r in roles[account]["rules"]}
    assert rules == {
        (("",), ("nodes",)): ["list"],
        (("shard.volcano.sh",), ("nodeshards",)): ["get", "create", "patch"],
    }
    binding = by_name(docs, "ClusterRoleBinding")[account]
    assert binding["roleRef"]["name"] == account
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account, "namespace": "volcano-system"}]
    scheduler_rules = [r for r in roles["py-volcano"]["rules"] if "nodeshards" in r["resources"]]
    assert [r["verbs"] for r in scheduler_rules] == [["get", "list", "watch"]], "the schedulers only read shards"
    borrowed = render(helm, tmp_path, {**sharded(), "serviceAccount": {"create": False, "name": "ops"}})
    assert "ServiceAccount" not in {doc["kind"] for doc in borrowed}
    controller = by_name(borrowed, "Deployment")["py-volcano-shard-controller"]
    assert controller["spec"]["template"]["spec"]["serviceAccountName"] == "ops"
    assert by_name(borrowed, "ClusterRoleBinding")[account]["subjects"][0]["name"] == "ops"


def test_service_and_disruption_budgets_select_the_right_pods(helm: str, tmp_path: Path) -> None:
    docs = render(helm, tmp_path, {**sharded(), "replicaCount": 2})
    deployments = by_name(docs, "Deployment")
    controller = pod_labels(deployments.pop("py-volcano-shard-controller"))
    (service,) = by_name(docs, "Service").values()
    assert all(selects(service["spec"]["selector"], pod_labels(d)) for d in deployments.values())
    assert not selects(service["spec"]["selector"], controller), "the controller serves no metrics"
    budgets = by_name(docs, "PodDisruptionBudget")
    assert set(budgets) == {"py-volcano-gpu", "py-volcano-cpu"}
    for name, budget in budgets.items():
        chosen = [
            d for d, spec in deployments.items() if selects(budget["spec"]["selector"]["matchLabels"], pod_labels(spec))
        ]
        assert chosen == [name], (name, chosen)
        assert not selects(budget["spec"]["selector"]["matchLabels"], controller)
    assert all(d["spec"]["replicas"] == 2 for d in deployments.values())


def test_without_sharding_one_unlabelled_scheduler_and_no_controller(helm: str, tmp_path: Path) -> None:
    docs = render(helm, tmp_path, {"sharding": {"enabled": False, "shards": SHARDS}})
    (deployment,) = by_name(docs, "Deployment").values()
    assert deployment["metadata"]["name"] == "py-volcano"
    args = container(deployment)["args"]
    assert "--leader-elect-lease-name=py-volcano" in args
    assert not [arg for arg in args if arg.startswith("--scheduler-sharding")]
    assert (
        SHARD_LABEL not in pod_labels(deployment) and SHARD_LABEL not in deployment["spec"]["selector"]["matchLabels"]
    )
    assert "py-volcano-shard-controller" not in by_name(docs, "ClusterRole")
    (service,) = by_name(docs, "Service").values()
    assert "app.kubernetes.io/component" not in service["spec"]["selector"]


@pytest.mark.parametrize(
    ("shards", "message"),
    [
        pytest.param([], "sharding.shards must list at least one shard", id="none"),
        pytest.param([SHARDS[0], {**SHARDS[1], "name": "gpu"}], 'shard "gpu" is listed twice', id="twice"),
        pytest.param([{"name": "GPU", "selector": "pool=gpu"}], "/sharding/shards/0/name", id="not-a-dns-label"),
        pytest.param([{"name": "gpu"}], "selector", id="no-selector"),
    ],
)
def test_shard_lists_it_cannot_run_are_refused(
    helm: str, tmp_path: Path, shards: list[dict[str, str]], message: str
) -> None:
    result = helm_template(helm, tmp_path, {"sharding": {"enabled": True, "shards": shards}})
    assert result.returncode != 0
    assert message in result.stderr, result.stderr
