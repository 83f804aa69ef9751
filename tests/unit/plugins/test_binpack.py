"""binpack: Volcano's BinPackingScore, hand-checked, its arguments, and the vectorised score compared with
a straightforward per-node computation on random clusters."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from py_volcano.actions import ACTIONS
from py_volcano.api import CPU, MEMORY, NodeInfo, TaskInfo, TaskStatus
from py_volcano.errors import ConfigError
from py_volcano.framework import Registry, Session, Statement, open_session, parse_conf
from py_volcano.plugins import PLUGINS, binpack
from py_volcano.plugins.binpack import BinpackArgs
from tests.builders import cluster, node, pod
from tests.unit.arguments import plugin_args

REGISTRY = Registry(plugins={"binpack": PLUGINS["binpack"]}, actions=ACTIONS)


def session(*objects: dict[str, Any], arguments: Mapping[str, Any] | None = None) -> Session:
    args = "".join(f"\n      {k}: {v}" for k, v in (arguments or {}).items())
    text = 'actions: "allocate"\ntiers:\n- plugins:\n  - name: binpack' + (
        f"\n    arguments:{args}" if args else ""
    )
    return open_session(
        cluster(*objects), parse_conf(text, REGISTRY), REGISTRY
    )


def task(ssn: Session, name: str) -> TaskInfo:
    return next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == name)


def scores(ssn: Session, name: str) -> dict[str, float]:
    rows = np.arange(len(ssn.node_list))
    return dict(
        zip([n.name for n in ssn.node_list], ssn.prioritize(task(ssn, name), rows).tolist(), strict=True)
    )


def gpu_pod(name: str, gpus: str, cpu: str = "1", memory: str = "1Gi") -> dict[str, Any]:
    spec = {
        "containers": [
            {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory, "nvidia.com/gpu": gpus}}}
        ]
    }
    return pod(name=name, spec=spec)


def test_fuller_node_scores_higher() -> None:
    """(used + request) / allocatable per resource, averaged by weight, times 100."""
    ssn = session(
        node(name="busy", cpu="4", memory="8Gi"),
        node(name="idle", cpu="4", memory="8Gi"),
        pod(name="run", node_name="busy", cpu="2", memory="2Gi"),
        pod(name="p", cpu="1", memory="2Gi"),
    )
    # busy: cpu 3/4, memory 4/8 -> 62.5; idle: 1/4, 2/8 -> 25
    assert scores(ssn, "p") == {"busy": 62.5, "idle": 25.0}


def test_weights_and_extra_resources() -> None:
    """binpack.cpu/memory/resources weigh each resource; binpack.weight scales the whole score."""
    arguments = {
        "binpack.weight": 10,
        "binpack.cpu": 2,
        "binpack.memory": 1,
        "binpack.resources": "nvidia.com/gpu",
        "binpack.resources.nvidia.com/gpu": 5,
    }
    ssn = session(
        node(name="g", cpu="4", memory="8Gi", scalars={"nvidia.com/gpu": "8"}),
        node(name="c", cpu="4", memory="8Gi"),
        gpu_pod("p", "2"),
        arguments=arguments,
    )
    # g: (2*1/4 + 1*1/8 + 5*2/8) / 8 * 100 * 10 = 234.375; c: gpu missing scores 0, weight still counts
    assert scores(ssn, "p") == {"g": 234.375, "c": 78.125}


def test_overflowing_resource_scores_zero() -> None:
    """A resource the task would overflow on the node scores 0 for that resource."""
    ssn = session(
        node(name="n", cpu="2", memory="8Gi"),
        pod(name="run", node_name="n", cpu="2", memory="1Gi"),
        pod(name="p", cpu="1", memory="1Gi"),
    )
    assert scores(ssn, "p") == {"n": 12.5}  # cpu 0, memory 2/8 -> 0.25 / 2 * 100


def test_resources_without_weight_are_ignored() -> None:
    """A requested scalar not listed in binpack.resources neither scores nor weighs."""
    ssn = session(node(name="g", cpu="4", memory="8Gi", scalars={"nvidia.com/gpu": "8"}), gpu_pod("p", "8"))
    assert scores(ssn, "p") == {"g": 18.75}  # cpu 1/4, memory 1/8


def test_zero_weight_registers_nothing() -> None:
    """binpack.weight 0 turns the score off (Volcano skips the node order function)."""
    ssn = session(node(name="n"), pod(name="p"), arguments={"binpack.weight": 0})
    assert scores(ssn, "p") == {"n": 0.0}
    assert ssn._fns.get("batch_node_order", {}).get("binpack") is None


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        pytest.param({}, BinpackArgs(weight=1, resources={CPU: 1, MEMORY: 1}), id="defaults"),
        pytest.param(
            {
                "binpack.cpu": -3,
                "binpack.memory": 4,
                "binpack.resources": " nvidia.com/gpu, example.com/foo ,",
                "binpack.resources.example.com/foo": -1,
                "binpack.resources.nvidia.com/gpu": 7,
            },
            BinpackArgs(weight=1, resources={"nvidia.com/gpu": 7, "example.com/foo": 1, CPU: 1, MEMORY: 4}),
            id="negative-resource-weights-become-1-and-the-list-is-comma-separated",
        ),
        pytest.param(
            {"binpack.weight": "10", "binpack.cpu": " 2 "},
            BinpackArgs(weight=10, resources={CPU: 2, MEMORY: 1}),
            id="integers-written-as-strings",
        ),
        pytest.param(
            {"binpack.weight": -2},
            BinpackArgs(weight=-2, resources={CPU: 1, MEMORY: 1}),
            id="negative-weight-kept",
        ),
    ],
)
def test_arguments_parse_like_volcano(arguments: dict[str, object], expected: BinpackArgs) -> None:
    """Good values parse, once at load, into the frozen BinpackArgs with Volcano's defaults and rules."""
    assert plugin_args("binpack", arguments) == expected


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        pytest.param({"binpack.weight": "abc"}, "argument binpack.weight: 'abc' is not an integer", id="weight-text"),
        pytest.param({"binpack.cpu": 1.5}, "argument binpack.cpu: 1.5 is not an integer", id="cpu-float"),
        pytest.param({"binpack.memory": True}, "argument binpack.memory: True is not an integer", id="memory-bool"),
        pytest.param(
            {"binpack.resources": 5},
            "argument binpack.resources: 5 is not a string",
            id="resources-not-a-list",
        ),
        pytest.param(
            {"binpack.resources": "nvidia.com/gpu", "binpack.resources.nvidia.com/gpu": "x"},
            "argument binpack.resources.nvidia.com/gpu: 'x' is not an integer",
            id="resource-weight-text",
        ),
    ],
)
def test_a_bad_argument_is_a_config_error_naming_plugin_key_and_value(
    arguments: dict[str, object], message: str
) -> None:
    """The configuration does not load; the error names the plugin, the key and the value."""
    with pytest.raises(ConfigError) as info:
        plugin_args("binpack", arguments)
    assert str(info.value) == f"scheduler conf: plugin binpack: {message}"


def test_a_weight_for_an_unlisted_resource_warns_at_load_and_is_ignored() -> None:
    """Volcano reads `binpack.resources.<name>` only for names listed in `binpack.resources`."""
    with pytest.warns(UserWarning, match="plugin binpack: unknown argument 'binpack.resources.example.com/foo'"):
        parsed = plugin_args("binpack", {"binpack.resources.example.com/foo": 3})
    assert parsed == BinpackArgs()


def test_scores_follow_allocations() -> None:
    """Allocating a task raises the node's used resources for the next task; discard lowers them."""
    ssn = session(
        node(name="n1", cpu="4", memory="8Gi"),
        node(name="n2", cpu="4", memory="8Gi"),
        pod(name="a", cpu="2", memory="4Gi"),
        pod(name="b", cpu="1", memory="2Gi"),
    )
    stmt = Statement(ssn)
    stmt.allocate(task(ssn, "a"), "n2")
    assert scores(ssn, "b") == {"n1": 25.0, "n2": 75.0}
    stmt.discard()
    assert scores(ssn, "b") == {"n1": 25.0, "n2": 25.0}


def reference(p: TaskInfo, n: NodeInfo, weights: Mapping[str, int], weight: int) -> float:
    """Volcano's BinPackingScore, per node, from NodeInfo.used."""
    score, weight_sum = 0.0, 0
    for name in p.resreq.names():
        if name not in weights:
            continue
        w = weights[name]
        capacity, used, request = n.allocatable.get(name), n.used.get(name), p.resreq.get(name)
        if capacity and w and request + used <= capacity:
            score += (request + used) * float(w) / capacity
        weight_sum += w
    if weight_sum > 0:
        score /= weight_sum
    return score * float(100 * weight)


@pytest.mark.parametrize("seed", range(5))
def test_random_clusters_match_the_per_node_reference(seed: int) -> None:
    """Exact equality with the per-node score for every pending task, placing each as it goes."""
    rng = random.Random(seed)
    objects: list[dict[str, Any]] = []
    for i in range(12):
        scalars = {"nvidia.com/gpu": str(rng.choice([2, 8]))} if rng.random() < 0.5 else {}
        objects.append(
            node(
                name=f"n{i}",
                cpu=str(rng.choice([2, 4, 16])),
                memory=f"{rng.choice([4, 64])}Gi",
                scalars=scalars,
            )
        )
    for i in range(15):
        objects.append(
            pod(
                name=f"run-{i}",
                node_name=f"n{rng.randrange(12)}",
                cpu=rng.choice(["500m", "1"]),
                memory=rng.choice(["", "1Gi"]),
            )
        )
    for i in range(15):
        objects.append(
            gpu_pod(
                f"new-{i}",
                rng.choice(["0", "1", "3"]),
                rng.choice(["250m", "2"]),
                rng.choice(["256Mi", "3Gi"]),
            )
        )
    arguments = {"binpack.weight": 3, "binpack.cpu": 2, "binpack.resources": "nvidia.com/gpu"}
    ssn = session(*objects, arguments=arguments)
    plugin = ssn.plugins["binpack"]
    assert isinstance(plugin, binpack.BinpackPlugin)
    stmt = Statement(ssn)
    for p in [t for j in ssn.jobs.values() for t in j.tasks.values() if t.status is TaskStatus.PENDING]:
        got = scores(ssn, p.name)
        assert got == {n.name: reference(p, n, plugin.args.resources, 3) for n in ssn.node_list}, p.name
        few = np.array(sorted(rng.sample(range(12), 2)))
        expected = [reference(p, ssn.node_list[r], plugin.args.resources, 3) for r in few]
        assert ssn.prioritize(p, few).tolist() == expected, p.name
        stmt.allocate(p, max(got, key=lambda name: got[name]))
