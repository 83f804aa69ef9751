"""nodeorder and binpack score a few rows one by one in plain floats (`plugins.nodeorder.one_node`,
`BinpackScores`; up to `api.ROW_BY_ROW` rows); on random clusters that score is the vectorised one
to the bit, node for node."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any
from unittest import mock

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from py_volcano.actions import ACTIONS
from py_volcano.api import TaskStatus
from py_volcano.framework import Registry, open_session, parse_conf
from py_volcano.plugins import PLUGINS
from py_volcano.plugins.binpack import BinpackPlugin
from py_volcano.plugins.nodeorder.plugin import NodeOrderPlugin
from tests.builders import cluster, node, pod

REGISTRY = Registry(plugins={"nodeorder": PLUGINS["nodeorder"], "binpack": PLUGINS["binpack"]}, actions=ACTIONS)
GPU = "nvidia.com/gpu"

CPUS = ("0", "1", "3", "16")
MEMORIES = ("0", "1Gi", "7Gi", "64Gi")
REQUEST_CPUS = ("", "0", "100m", "250m", "1", "3")
REQUEST_MEMORIES = ("", "0", "200Mi", "1Gi", "5Gi")


def _pod(name: str, cpu: str, memory: str, gpu: int, node_name: str = "") -> dict[str, Any]:
    requests = {key: value for key, value in (("cpu", cpu), ("memory", memory)) if value}
    if gpu:
        requests[GPU] = str(gpu)
    manifest = pod(name=name, node_name=node_name)
    manifest["spec"]["containers"][0]["resources"]["requests"] = requests
    return manifest


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[dict[str, Any]], str]:
    """Nodes with and without cpu, memory and GPUs, pods on them, pending pods, and the plugins' arguments."""
    count = draw(st.integers(1, 6))
    objects = []
    for i in range(count):
        gpus = draw(st.sampled_from((None, "0", "4")))
        objects.append(
            node(
                name=f"n{i}",
                cpu=draw(st.sampled_from(CPUS)),
                memory=draw(st.sampled_from(MEMORIES)),
                scalars={GPU: gpus} if gpus is not None else None,
            )
        )
    placed = [f"n{draw(st.integers(0, count - 1))}" for _ in range(draw(st.integers(0, 8)))]
    pending = draw(st.integers(1, 4))
    for i, where in enumerate([*placed, *[""] * pending]):
        cpu, memory = draw(st.sampled_from(REQUEST_CPUS)), draw(st.sampled_from(REQUEST_MEMORIES))
        name = f"run-{i}" if where else f"new-{i}"
        objects.append(_pod(name, cpu, memory, draw(st.integers(0, 3 if where else 2)), node_name=where))
    weights = {
        "leastrequested.weight": draw(st.integers(0, 3)),
        "mostrequested.weight": draw(st.integers(0, 3)),
        "balancedresource.weight": draw(st.integers(0, 3)),
        "tainttoleration.weight": draw(st.integers(0, 3)),
    }
    binpack: dict[str, object] = {
        "binpack.weight": draw(st.integers(0, 3)),
        "binpack.cpu": draw(st.integers(0, 3)),
        "binpack.memory": draw(st.integers(0, 3)),
    }
    if draw(st.booleans()):
        binpack |= {"binpack.resources": GPU, f"binpack.resources.{GPU}": draw(st.integers(0, 3))}
    conf = (
        'actions: "allocate"\ntiers:\n- plugins:\n  - name: nodeorder\n    arguments:\n'
        + "".join(f"      {k}: {v}\n" for k, v in weights.items())
        + "  - name: binpack\n    arguments:\n"
        + "".join(f'      {k}: "{v}"\n' for k, v in binpack.items())
    )
    return objects, conf


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_one_row_scores_as_every_row(case: tuple[list[dict[str, Any]], str]) -> None:
    objects, conf = case
    ssn = open_session(cluster(*objects), parse_conf(conf, REGISTRY), REGISTRY)
    nodeorder, binpack = ssn.plugins["nodeorder"], ssn.plugins["binpack"]
    assert isinstance(nodeorder, NodeOrderPlugin) and nodeorder.state is not None
    assert isinstance(binpack, BinpackPlugin) and binpack.scores is not None
    every = np.arange(len(ssn.node_list), dtype=np.intp)
    odd = every[1::2]
    pending = [t for j in ssn.jobs.values() for t in j.tasks.values() if t.status is TaskStatus.PENDING]
    for task in pending:
        for scores in (nodeorder.state.score, binpack.scores.score):
            with _vectorised():
                whole = scores(task, every).tolist()
            alone = [scores(task, np.array([row], dtype=np.intp)).tolist()[0] for row in every]
            assert alone == whole, (task.name, scores)
            assert scores(task, every).tolist() == whole, (task.name, scores)  # row by row, several at once
            assert scores(task, odd).tolist() == whole[1::2], (task.name, scores)


@contextlib.contextmanager
def _vectorised() -> Iterator[None]:
    """Score every set of rows vectorised, however few."""
    with (
        mock.patch("py_volcano.plugins.nodeorder.plugin.ROW_BY_ROW", 0),
        mock.patch("py_volcano.plugins.binpack.ROW_BY_ROW", 0),
    ):
        yield
