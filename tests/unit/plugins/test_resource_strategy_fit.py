"""resource-strategy-fit: its arguments as Volcano reads them, the least/most-allocated score per resource
(configured, by wildcard, or from pod annotations), the sra score and the proportional filter."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import yaml

from py_volcano.errors import ConfigError
from py_volcano.framework import Session
from py_volcano.plugins.resource_strategy_fit import (
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    ResourceStrategy,
    ResourceStrategyFitArgs,
    ResourceStrategyFitPlugin,
    strategy_for,
)
from tests.builders import node, pod
from tests.unit.actions.sessions import task
from tests.unit.arguments import plugin_args
from tests.unit.plugins.sessions import open_at

GPU = "nvidia.com/gpu"
LEAST, MOST = ResourceStrategy(LEAST_ALLOCATED, 1), ResourceStrategy(MOST_ALLOCATED, 1)


def _session(arguments: dict[str, Any], *objects: dict[str, Any]) -> Session:
    plugin = {"name": "resource-strategy-fit", "arguments": arguments}
    conf = yaml.safe_dump({"actions": "allocate", "tiers": [{"plugins": [plugin]}]})
    return open_at(conf, *objects)


def _scores(ssn: Session, name: str = "p") -> dict[str, float]:
    plugin = ssn.plugins["resource-strategy-fit"]
    assert isinstance(plugin, ResourceStrategyFitPlugin)
    rows = np.arange(len(ssn.node_list))
    values = plugin.score(task(ssn, name), rows).tolist()
    return dict(zip((n.name for n in ssn.node_list), values, strict=True))


def _cluster(*pods: dict[str, Any]) -> list[dict[str, Any]]:
    """Nodes a (empty) and b (2 of 4 CPUs used), then the pods."""
    return [node(name="a"), node(name="b"), pod(name="busy", node_name="b", cpu="2", memory=""), *pods]


def test_default_arguments() -> None:
    """Weight 10; cpu and memory LeastAllocated with weight 1; no sra, no proportional filter."""
    assert plugin_args("resource-strategy-fit", {}) == ResourceStrategyFitArgs(
        weight=10, resources={"cpu": LEAST, "memory": LEAST}
    )


def test_arguments_corrected_as_volcano_does() -> None:
    """Negative plugin weight -> 10; weight <= 0 -> 1; unknown type -> LeastAllocated; bad patterns dropped."""
    arguments = {
        "resourceStrategyFitWeight": -3,
        "resources": {
            "cpu": {"type": "MostAllocated", "weight": 0},
            "memory": {"type": "Balanced", "weight": 2},
            "vendor.com/*": {"type": "MostAllocated", "weight": 3},
            "*": {"type": "MostAllocated"},
            "a*b": {"type": "MostAllocated"},
        },
        "sra": {"enable": True, "resources": f"{GPU}, example.com/fpga", "weight": 5,
                "resourceWeight": {GPU: -1, "example.com/fpga": 4}},
        "proportional": {"enable": True, "resources": GPU, "resourceProportion": {f"{GPU}.cpu": 4}},
    }
    with pytest.warns(UserWarning, match="only one trailing asterisk") as caught:
        args = plugin_args("resource-strategy-fit", arguments)
    assert len(caught) == 2
    assert args == ResourceStrategyFitArgs(
        weight=10,
        resources={"cpu": ResourceStrategy(MOST_ALLOCATED, 1), "memory": ResourceStrategy(LEAST_ALLOCATED, 2),
                   "vendor.com/*": ResourceStrategy(MOST_ALLOCATED, 3)},
        sra_weight=5,
        sra_resources={GPU: 1, "example.com/fpga": 4},
        proportional={GPU: (4.0, 1.0)},
    )


@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param({"resources": ["cpu"]}, id="resources-not-a-map"),
        pytest.param({"resources": {"cpu": 1}}, id="entry-not-a-map"),
        pytest.param({"resources": {"cpu": {"weight": "heavy"}}}, id="weight-not-an-integer"),
        pytest.param({"sra": {"enable": "yes"}}, id="enable-not-a-boolean"),
    ],
)
def test_a_value_of_the_wrong_type_is_a_config_error(arguments: dict[str, Any]) -> None:
    """Volcano exits on these (mapstructure decode); here the configuration does not load."""
    with pytest.raises(ConfigError, match="plugin resource-strategy-fit: argument"):
        plugin_args("resource-strategy-fit", arguments)


def test_wildcards_exact_first_then_longest_prefix() -> None:
    """An exact entry wins; else the `prefix*` with the longest prefix; else none."""
    resources = {"nvidia.com/*": MOST, "nvidia.*": LEAST, "nvidia.com/gpu-a": ResourceStrategy(LEAST_ALLOCATED, 7)}
    assert strategy_for("nvidia.com/gpu", resources) is MOST
    assert strategy_for("nvidia.io/gpu", resources) is LEAST
    assert strategy_for("nvidia.com/gpu-a", resources) == ResourceStrategy(LEAST_ALLOCATED, 7)
    assert strategy_for("amd.com/gpu", resources) is None


def test_least_allocated_by_default() -> None:
    """a: cpu (4-1)/4, memory (8-1)/8 -> 0.8125 x 100 x 10; b: cpu (4-2-1)/4 -> 0.5625 x 1000."""
    assert _scores(_session({}, *_cluster(pod(name="p", cpu="1", memory="1Gi")))) == {"a": 812.5, "b": 562.5}


def test_most_allocated_weighted() -> None:
    """cpu MostAllocated weight 2, memory LeastAllocated: a (1x2/4 + 7/8)/3 x 100; b (3x2/4 + 7/8)/3 x 100."""
    arguments = {"resourceStrategyFitWeight": 1, "resources": {"cpu": {"type": "MostAllocated", "weight": 2},
                                                               "memory": {"type": "LeastAllocated"}}}
    scores = _scores(_session(arguments, *_cluster(pod(name="p", cpu="1", memory="1Gi"))))
    assert scores == pytest.approx({"a": 137.5 / 3, "b": 237.5 / 3})


def test_a_node_the_request_overflows_scores_zero() -> None:
    """used + request > allocatable in a weighed resource: Volcano's Score returns 0 for the node."""
    assert _scores(_session({}, *_cluster(pod(name="p", cpu="3", memory="1Gi"))))["b"] == 0.0


def test_pod_annotations_override_the_configuration() -> None:
    """`volcano.sh/resource-strategy-scoring-type` and `-weight`: only the resources the pod weighs count."""
    notes = {"volcano.sh/resource-strategy-scoring-type": "MostAllocated",
             "volcano.sh/resource-strategy-weight": '{"cpu": 1}'}
    scores = _scores(_session({}, *_cluster(pod(name="p", cpu="1", memory="1Gi", annotations=notes))))
    assert scores == {"a": 250.0, "b": 750.0}


@pytest.mark.parametrize(
    "weights",
    [pytest.param(None, id="weight-annotation-missing"), pytest.param("{cpu: 1", id="not-json"),
     pytest.param('{"cpu": 1.5}', id="not-an-integer")],
)
def test_unusable_pod_annotations_score_zero(weights: str | None) -> None:
    """As Volcano: a scoring type without a readable weight map scores every node 0."""
    notes = {"volcano.sh/resource-strategy-scoring-type": "MostAllocated"}
    if weights is not None:
        notes["volcano.sh/resource-strategy-weight"] = weights
    scores = _scores(_session({}, *_cluster(pod(name="p", cpu="1", annotations=notes))))
    assert scores == {"a": 0.0, "b": 0.0}


def test_sra_prefers_nodes_without_scarce_resources() -> None:
    """sra: 100 x weight x (1 - weights of scarce resources the node has / their sum), on nodes with every
    requested resource; a GPU task scores 0 on a node without GPUs."""
    arguments = {"resourceStrategyFitWeight": 0, "sra": {"enable": True, "resources": GPU, "weight": 10}}
    objects = [node(name="gpu", scalars={GPU: "8"}), node(name="cpu"), pod(name="p", cpu="1"),
               pod(name="g", cpu="1", spec={"containers": [{"name": "c", "resources": {"requests": {GPU: "1"}}}]})]
    ssn = _session(arguments, *objects)
    assert _scores(ssn) == {"gpu": 0.0, "cpu": 1000.0}
    assert _scores(ssn, "g") == {"gpu": 0.0, "cpu": 0.0}


def test_both_weights_zero_registers_no_score() -> None:
    """resourceStrategyFitWeight 0 and no sra: nothing registered, so the plugin adds no score."""
    ssn = _session({"resourceStrategyFitWeight": 0}, *_cluster(pod(name="p")))
    assert ssn.prioritize(task(ssn, "p"), np.arange(2)).tolist() == [0.0, 0.0]


@pytest.mark.parametrize(
    ("cpu", "gpu", "fits"),
    [
        pytest.param("8", None, True, id="leaves-exactly-the-reserve"),
        pytest.param("9", None, False, id="eats-into-the-reserve"),
        pytest.param("9", "1", True, id="a-gpu-task-is-not-checked"),
    ],
)
def test_proportional_keeps_cpu_for_idle_gpus(cpu: str, gpu: str | None, fits: bool) -> None:
    """8 idle GPUs at 4 CPUs each reserve 32 of the node's 40 CPUs for GPU tasks."""
    arguments = {"proportional": {"enable": True, "resources": GPU,
                                  "resourceProportion": {f"{GPU}.cpu": 4, f"{GPU}.memory": 8}}}
    requests: dict[str, str] = {"cpu": cpu, **({GPU: gpu} if gpu else {})}
    spec = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
    ssn = _session(arguments, node(name="g", cpu="40", memory="100Gi", scalars={GPU: "8"}), pod(name="p", spec=spec))
    status = ssn.predicate(task(ssn, "p"), ssn.nodes["g"])
    assert (status is None) is fits
    if not fits:
        assert status is not None and status.reason == f"proportional of resource {GPU} check failed"
