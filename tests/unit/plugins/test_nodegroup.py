"""nodegroup: the predicate and score of Volcano's nodegroup plugin, its `strict` and `enablePreferredOrder`
arguments, per-group resource limits and hierarchical inheritance."""

from __future__ import annotations

from typing import Any

import pytest

from py_volcano.framework import Session
from py_volcano.plugins.nodegroup import (
    AFFINITY_NOT_FOUND,
    LABEL_NOT_FOUND,
    LIMIT_EXCEEDED,
    LIMIT_INVALID,
    UNSATISFIED,
    NodeGroupArgs,
    NodeGroupPlugin,
)
from tests.builders import node, pod, pod_group, queue
from tests.unit.actions.sessions import task
from tests.unit.arguments import plugin_args
from tests.unit.plugins.sessions import open_at

GROUP = "volcano.sh/nodegroup-name"
LIMITS = "volcano.sh/nodegroup-resource-limits"
REQ, PREF = "requiredDuringSchedulingIgnoredDuringExecution", "preferredDuringSchedulingIgnoredDuringExecution"


def _affinity(required: list[str] = [], preferred: list[str] = [], anti_required: list[str] = [],  # noqa: B006
              anti_preferred: list[str] = []) -> dict[str, Any]:  # noqa: B006
    return {
        "nodeGroupAffinity": {REQ: required, PREF: preferred},
        "nodeGroupAntiAffinity": {REQ: anti_required, PREF: anti_preferred},
    }


def _conf(arguments: str = "", switches: str = "") -> str:
    args = f"\n    arguments: {{{arguments}}}" if arguments else ""
    return f'actions: "allocate"\ntiers:\n- plugins:\n  - name: nodegroup{args}{switches}\n'


def _nodes() -> list[dict[str, Any]]:
    return [node(name=f"g{i}", labels={GROUP: f"group{i}"}) for i in range(1, 5)] + [node(name="plain")]


def _session(q: dict[str, Any], *extra: dict[str, Any], conf: str = "") -> Session:
    return open_at(
        conf or _conf(), *_nodes(), q, pod_group(name="j", queue=q["metadata"]["name"]), pod(name="p", group="j"),
        *extra,
    )


def _plugin(ssn: Session) -> NodeGroupPlugin:
    plugin = ssn.plugins["nodegroup"]
    assert isinstance(plugin, NodeGroupPlugin)
    return plugin


def _verdicts(ssn: Session) -> dict[str, str]:
    plugin = _plugin(ssn)
    p = task(ssn, "p")
    return {n.name: (s.reason if (s := plugin.predicate(p, n)) else "ok") for n in ssn.node_list}


def _scores(ssn: Session) -> dict[str, float]:
    plugin = _plugin(ssn)
    p = task(ssn, "p")
    return {n.name: plugin.score(p, n) for n in ssn.node_list}


def test_arguments() -> None:
    """`strict` defaults to true, `enablePreferredOrder` to false."""
    assert plugin_args("nodegroup", {}) == NodeGroupArgs(strict=True, preferred_order=False)
    assert plugin_args("nodegroup", {"strict": False, "enablePreferredOrder": "true"}) == NodeGroupArgs(
        strict=False, preferred_order=True
    )


def test_user_guide_example_one_required_preferred_and_anti() -> None:
    """The user guide's first example: groups 1 and 2 allowed, 1 preferred; 3 (anti-preferred) allowed as a
    last resort with score -1; 4 refused; an unlabelled node refused (strict)."""
    ssn = _session(queue(name="q", affinity=_affinity(["group1", "group2"], ["group1"], ["group3", "group4"],
                                                      ["group3"])))
    assert _verdicts(ssn) == {"g1": "ok", "g2": "ok", "g3": "ok", "g4": UNSATISFIED, "plain": LABEL_NOT_FOUND}
    assert _scores(ssn) == {"g1": 150.0, "g2": 100.0, "g3": -1.0, "g4": 0.0, "plain": 0.0}


def test_anti_affinity_wins_over_affinity() -> None:
    """The guide's third example: group1 is both required and anti-required: only group2 is allowed."""
    ssn = _session(queue(name="q", affinity=_affinity(["group1", "group2"], ["group1"], ["group1"], ["group2"])))
    assert _verdicts(ssn)["g1"] == UNSATISFIED
    assert _verdicts(ssn)["g2"] == "ok"


@pytest.mark.parametrize(
    ("strict", "spec", "plain", "labelled"),
    [
        pytest.param(True, {}, LABEL_NOT_FOUND, AFFINITY_NOT_FOUND, id="strict-no-affinity"),
        pytest.param(False, {}, "ok", AFFINITY_NOT_FOUND, id="lenient-no-affinity"),
        pytest.param(False, {"affinity": {}}, "ok", AFFINITY_NOT_FOUND, id="lenient-empty-affinity"),
        pytest.param(False, {"affinity": _affinity(["group1"])}, LABEL_NOT_FOUND, "ok", id="lenient-with-affinity"),
    ],
)
def test_strict(strict: bool, spec: dict[str, Any], plain: str, labelled: str) -> None:
    """`strict: false` opens unlabelled nodes to queues without affinity; labelled nodes never take them."""
    ssn = _session(queue(name="q", **spec), conf=_conf(f"strict: {str(strict).lower()}"))
    verdicts = _verdicts(ssn)
    assert (verdicts["plain"], verdicts["g1"]) == (plain, labelled)


def test_preferred_order() -> None:
    """`enablePreferredOrder`: 0.5 x 100 x (n - i) / n for the i-th of n preferred groups."""
    q = queue(name="q", affinity=_affinity(preferred=["group2", "group1", "group3"]))
    assert _scores(_session(q, conf=_conf("enablePreferredOrder: true"))) == pytest.approx(
        {"g1": 100 / 3, "g2": 50.0, "g3": 50 / 3, "g4": 0.0, "plain": 0.0}
    )
    assert _scores(_session(q)) == {"g1": 50.0, "g2": 50.0, "g3": 50.0, "g4": 0.0, "plain": 0.0}


def _limited(limits: str) -> dict[str, Any]:
    q = queue(name="q", affinity=_affinity(["group1", "group2"]))
    q["metadata"]["annotations"] = {LIMITS: limits}
    return q


def test_resource_limit_counts_what_the_queue_holds_in_the_group() -> None:
    """allocated(Q, G) + request <= limit(Q, G) for the dimensions the limit names; other groups are open."""
    running = [pod(name=f"r{i}", group="j", node_name="g1", cpu="1") for i in range(2)]
    ssn = _session(_limited('{"group1": {"cpu": "2"}}'), *running)
    verdicts = _verdicts(ssn)
    assert (verdicts["g1"], verdicts["g2"]) == (LIMIT_EXCEEDED, "ok")
    ssn = _session(_limited('{"group1": {"cpu": "3", "memory": "100Gi"}}'), *running)
    assert _verdicts(ssn)["g1"] == "ok"


def test_resource_limit_follows_placements_of_the_cycle() -> None:
    """Allocations and their discard move the queue's per-group figure (event handlers)."""
    from py_volcano.framework import Statement

    ssn = _session(_limited('{"group1": {"cpu": "1"}}'), pod(name="q2", group="j", cpu="1"))
    stmt = Statement(ssn)
    stmt.allocate(task(ssn, "q2"), "g1")
    assert _verdicts(ssn)["g1"] == LIMIT_EXCEEDED
    stmt.discard()
    assert _verdicts(ssn)["g1"] == "ok"


def test_an_invalid_limit_annotation_refuses_every_node_and_is_warned_about() -> None:
    """Volcano refuses every node for the queue's tasks; here the cycle also names the queue and the reason."""
    ssn = _session(_limited("{not json"))
    assert set(_verdicts(ssn).values()) == {LIMIT_INVALID}
    assert ssn.warnings[0].startswith("Queue q: field metadata.annotations[volcano.sh/nodegroup-resource-limits]: ")


def test_hierarchy_inherits_the_nearest_ancestor_affinity() -> None:
    """With `enableHierarchy`, a queue without affinity takes its parent's (or the parent's ancestor's);
    one with its own keeps it. Without the switch nothing is inherited."""
    queues = [
        queue(name="root", affinity=_affinity(["group1"])),
        queue(name="eng", parent="root"),
        queue(name="backend", parent="eng"),
        queue(name="frontend", parent="eng", affinity=_affinity(["group2"])),
    ]
    conf = _conf(switches="\n    enableHierarchy: true")
    for name, allowed in (("backend", "g1"), ("frontend", "g2")):
        ssn = open_at(conf, *_nodes(), *queues, pod_group(name="j", queue=name), pod(name="p", group="j"))
        assert [n for n, v in _verdicts(ssn).items() if v == "ok"] == [allowed]
    ssn = open_at(_conf(), *_nodes(), *queues, pod_group(name="j", queue="backend"), pod(name="p", group="j"))
    assert set(_verdicts(ssn).values()) == {AFFINITY_NOT_FOUND, LABEL_NOT_FOUND}
