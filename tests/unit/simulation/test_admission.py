"""The simulator's API server admission: what it changes in pods and what it refuses, as kube-apiserver 1.36."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from py_volcano.api import CycleResult, TaskInfo
from py_volcano.errors import ScenarioError
from py_volcano.simulation import InMemoryCluster
from py_volcano.simulation.admission import Admission
from tests.builders import node, pod, priority_class

NS = "team"
KATA = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "kata"}, "handler": "kata",
        "overhead": {"podFixed": {"cpu": "250m"}},
        "scheduling": {"nodeSelector": {"sandbox": "yes"},
                       "tolerations": [{"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"}]}}


def limit_range(*items: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr", "namespace": NS},
            "spec": {"limits": list(items)}}


def quota(**hard: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q", "namespace": NS},
            "spec": {"hard": hard}}


def bare(name: str, **spec: Any) -> dict[str, Any]:
    """A pod in `team` whose one container asks for nothing unless `resources` is given."""
    manifest = pod(name=name, namespace=NS, cpu="", memory="")
    manifest["spec"]["containers"][0]["resources"] = spec.pop("resources", {})
    manifest["spec"].update(spec)
    return manifest


def admitted(*objects: dict[str, Any]) -> list[dict[str, Any]]:
    """Admit the pods among `objects` (copies) and return them as stored."""
    objects = tuple(copy.deepcopy(o) for o in objects)
    pods = [o for o in objects if o["kind"] == "Pod"]
    Admission(objects, source="s.yaml").admit(pods)
    return pods


def resources(manifest: dict[str, Any]) -> dict[str, Any]:
    return dict(manifest["spec"]["containers"][0]["resources"])


def test_limit_range_defaults_fill_what_containers_leave_unset_after_limits_stand_for_requests() -> None:
    """defaultRequest defaults to default, itself to max; a container's own limit is its request first."""
    item = {"type": "Container", "max": {"cpu": "4"}, "default": {"memory": "1Gi"}, "defaultRequest": {"cpu": "1"}}
    nothing, own = admitted(limit_range(item), bare("nothing"), bare("own", resources={"limits": {"cpu": "2"}}))
    assert resources(nothing) == {"limits": {"cpu": "4", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}}
    assert resources(own) == {"limits": {"cpu": "2", "memory": "1Gi"}, "requests": {"cpu": "2", "memory": "1Gi"}}


@pytest.mark.parametrize(
    ("item", "container", "message"),
    [
        pytest.param({"type": "Container", "max": {"cpu": "1"}}, {"limits": {"cpu": "2"}}, "maximum cpu usage",
                     id="container-max"),
        pytest.param({"type": "Container", "min": {"cpu": "1"}}, {"requests": {"cpu": "500m"}}, "minimum cpu usage",
                     id="container-min"),
        pytest.param({"type": "Container", "maxLimitRequestRatio": {"cpu": "2"}},
                     {"requests": {"cpu": "1"}, "limits": {"cpu": "3"}}, "max limit to request ratio", id="ratio"),
        pytest.param({"type": "Pod", "max": {"cpu": "1"}}, {"requests": {"cpu": "2"}, "limits": {"cpu": "2"}},
                     "maximum cpu usage per Pod", id="pod-max"),
    ],
)
def test_limit_range_bounds_refuse_a_pod(item: dict[str, Any], container: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError, match=f"s.yaml: Pod team/p: .*{message}"):
        admitted(limit_range(item), bare("p", resources=container))


def test_priority_comes_from_the_class_the_global_default_or_zero() -> None:
    """The named class, else the global default (its name written too), else 0; system classes exist."""
    default = {**priority_class(name="base", value=7), "globalDefault": True}
    named, unnamed, system = admitted(
        priority_class(name="high", value=100),
        default,
        bare("named", priorityClassName="high"),
        bare("unnamed"),
        bare("system", priorityClassName="system-node-critical"),
    )
    assert (named["spec"]["priority"], unnamed["spec"]["priority"], system["spec"]["priority"]) == (100, 7, 2000001000)
    assert unnamed["spec"]["priorityClassName"] == "base"
    assert named["spec"]["preemptionPolicy"] == "PreemptLowerPriority"
    (alone,) = admitted(bare("alone"))
    assert (alone["spec"]["priority"], "priorityClassName" in alone["spec"]) == (0, False)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param({"priorityClassName": "ghost"}, "no PriorityClass with name ghost was found", id="missing-class"),
        pytest.param({"priorityClassName": "high", "priority": 5}, r"priority \(5\) must not be provided",
                     id="other-value"),
        pytest.param({"priority": 5}, r"computed 0", id="value-without-class"),
        pytest.param({"priorityClassName": "high", "preemptionPolicy": "Never"}, "PreemptionPolicy|preemptionPolicy",
                     id="other-policy"),
    ],
)
def test_the_priority_plugin_refuses(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        admitted(priority_class(name="high", value=100), bare("p", **spec))


def test_not_ready_and_unreachable_are_tolerated_for_300_seconds_unless_already_tolerated() -> None:
    (plain,) = admitted(bare("p"))
    assert [t["key"] for t in plain["spec"]["tolerations"]] == [
        "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]
    (everything,) = admitted(bare("q", tolerations=[{"operator": "Exists"}]))
    assert everything["spec"]["tolerations"] == [{"operator": "Exists"}]


def test_a_runtime_class_sets_overhead_and_merges_its_scheduling() -> None:
    (sandboxed,) = admitted(KATA, bare("p", runtimeClassName="kata", nodeSelector={"zone": "a"}))
    spec = sandboxed["spec"]
    assert spec["overhead"] == {"cpu": "250m"}
    assert spec["nodeSelector"] == {"zone": "a", "sandbox": "yes"}
    assert {"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]
    (same,) = admitted(KATA, bare("same", runtimeClassName="kata", overhead={"cpu": "0.25"}))
    assert same["spec"]["overhead"] == {"cpu": "250m"}  # an equal one is accepted, then the class's is written


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param({"runtimeClassName": "kata", "overhead": {"cpu": "1"}}, "Overhead doesn't match", id="other"),
        pytest.param({"overhead": {"cpu": "1"}}, "Overhead set without corresponding RuntimeClass", id="no-class"),
        pytest.param({"runtimeClassName": "gvisor"}, "RuntimeClass 'gvisor' not found", id="missing-class"),
        pytest.param({"runtimeClassName": "kata", "nodeSelector": {"sandbox": "no"}}, "conflict", id="selector"),
    ],
)
def test_the_runtime_class_plugin_refuses(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError, match=f"s.yaml: Pod team/p: field spec.*{message}"):
        admitted(KATA, bare("p", **spec))


def test_quotas_charge_pods_in_order_and_refuse_the_one_that_exceeds() -> None:
    """Overhead counts; a quota on requests.cpu needs every container to give a cpu request."""
    first = bare("first", resources={"requests": {"cpu": "1"}}, runtimeClassName="kata")
    second = bare("second", resources={"requests": {"cpu": "1"}})
    with pytest.raises(ScenarioError, match=r"Pod team/second: refused: exceeded quota: team/q, limited: requests.cpu"):
        admitted(KATA, quota(**{"requests.cpu": "2"}), first, second)
    with pytest.raises(ScenarioError, match=r"Pod team/p: refused: failed quota: team/q: must specify requests.cpu"):
        admitted(quota(**{"requests.cpu": "2"}), bare("p"))
    admitted(quota(**{"requests.cpu": "2", "pods": "2"}), bare("a", resources={"requests": {"cpu": "1"}}), second)


def _task(cluster: InMemoryCluster, key: str) -> TaskInfo:
    return next(t for j in cluster.snapshot().jobs.values() for t in j.tasks.values() if t.key == key)


def test_the_snapshot_holds_admitted_pods_and_counted_quotas_recounted_after_evictions() -> None:
    """The store sees pods as admitted (overhead in the request) and each quota's status as the quota
    controller writes it; an eviction gives the quota back."""
    objects = [KATA, node(name="n1", labels={"sandbox": "yes"}), quota(pods="4", cpu="3"),
               bare("p", resources={"requests": {"cpu": "1"}}, runtimeClassName="kata", nodeName="n1")]
    cluster = InMemoryCluster(objects, source="s.yaml", scheduler_name="py-volcano")
    running = _task(cluster, "team/p")
    assert running.resreq.milli_cpu == 1250
    (spec,) = cluster.snapshot().resource_quotas
    assert (spec.hard, spec.used) == ({"pods": 4.0, "cpu": 3.0}, {"pods": 1.0, "cpu": 1.25})
    cluster.apply(CycleResult(evictions=[(running, "preempt")]))
    (spec,) = cluster.snapshot().resource_quotas
    assert spec.used == {"pods": 0.0, "cpu": 0.0}
    assert not [w for w in cluster.warnings if "not simulated" in w]
