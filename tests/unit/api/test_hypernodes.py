"""HyperNodes and networkTopology: parsing with errors naming the field, and the resolved tree."""

from __future__ import annotations

from typing import Any

import pytest

from py_volcano.api import (
    CLUSTER_TOP_HYPER_NODE,
    HyperNodeTopology,
    NetworkTopologySpec,
    NodeSpec,
    Resource,
    parse_hyper_node,
    parse_object,
    parse_pod_group,
)
from py_volcano.errors import InvalidHyperNode, InvalidPodGroup


def hyper_node(name: str, tier: Any, *members: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "HyperNode", "metadata": {"name": name}, "spec": {"tier": tier, "members": list(members)}}


def exact(name: str, kind: str = "Node") -> dict[str, Any]:
    return {"type": kind, "selector": {"exactMatch": {"name": name}}}


def nodes(count: int) -> list[NodeSpec]:
    return [
        NodeSpec(name=f"n{i}", allocatable=Resource(), capacity=Resource(), labels={"rack": f"r{i // 2}"})
        for i in range(count)
    ]


def tree(*objects: dict[str, Any], count: int = 8) -> HyperNodeTopology:
    return HyperNodeTopology.resolve([parse_hyper_node(obj) for obj in objects], nodes(count))


THREE_TIERS = (
    hyper_node("s0", 1, exact("n0"), exact("n1")),
    hyper_node("s1", 1, {"type": "Node", "selector": {"regexMatch": {"pattern": "^n[23]$"}}}),
    hyper_node("s2", 1, {"type": "Node", "selector": {"labelMatch": {"matchLabels": {"rack": "r2"}}}}),
    hyper_node("a0", 2, exact("s0", "HyperNode"), exact("s1", "HyperNode")),
    hyper_node("spine", 3, exact("a0", "HyperNode"), exact("s2", "HyperNode")),
)


def rows(topology: HyperNodeTopology, name: str) -> list[int]:
    return [int(row) for row in topology.rows[topology.index[name]]]


def test_three_tiers_resolve_to_leaf_nodes_parents_and_tiers() -> None:
    """Exact, regex and label members select their nodes; a hypernode holds its children's nodes."""
    topology = tree(*THREE_TIERS)
    assert rows(topology, "s0") == [0, 1]
    assert rows(topology, "s1") == [2, 3]
    assert rows(topology, "s2") == [4, 5]
    assert rows(topology, "a0") == [0, 1, 2, 3]
    assert rows(topology, "spine") == [0, 1, 2, 3, 4, 5]
    assert rows(topology, CLUSTER_TOP_HYPER_NODE) == list(range(8))
    top = topology.top
    assert topology.tiers[top] == 4
    assert topology.names[topology.parents[topology.index["s0"]]] == "a0"
    assert topology.names[topology.parents[topology.index["spine"]]] == CLUSTER_TOP_HYPER_NODE
    assert [int(h) for h in topology.lowest] == [topology.index[n] for n in ("s0", "s0", "s1", "s1", "s2", "s2")] + [
        -1,
        -1,
    ]
    assert topology.real_tiers == [1, 2, 3]
    assert topology.ready


def test_lca_highest_allowed_and_hyper_node_of() -> None:
    topology = tree(*THREE_TIERS)
    index = topology.index
    assert topology.lca(index["s0"], index["s1"]) == index["a0"]
    assert topology.lca(index["s0"], index["s2"]) == index["spine"]
    assert topology.lca(-1, index["s2"]) == index["s2"]
    assert topology.highest_allowed(index["s0"], 2) == index["a0"]
    assert topology.highest_allowed(index["s0"], 0) == -1
    assert topology.hyper_node_of([0, 3]) == index["a0"]
    assert topology.hyper_node_of([6]) == topology.top
    assert topology.hyper_node_of([]) == -1
    assert topology.subtree(index["a0"]) == [index["a0"], index["s0"], index["s1"]]


def test_a_member_claimed_by_two_parents_makes_the_tree_unusable() -> None:
    """Volcano refuses a second parent; jobs with a network topology then wait."""
    topology = tree(
        hyper_node("s0", 1, exact("n0")),
        hyper_node("a0", 2, exact("s0", "HyperNode")),
        hyper_node("a1", 2, exact("s0", "HyperNode")),
    )
    assert not topology.ready
    assert topology.problems == [
        "HyperNode a1: field spec.members: HyperNode s0 already belongs to a0; a hypernode has one parent"
    ]


def test_a_cycle_makes_the_tree_unusable() -> None:
    topology = tree(hyper_node("x", 2, exact("y", "HyperNode")), hyper_node("y", 1, exact("x", "HyperNode")))
    assert not topology.ready
    assert "members form a cycle" in topology.problems[0]


def test_highest_tier_of_hard_soft_and_tier_name() -> None:
    named = dict(THREE_TIERS[0])
    named["spec"] = dict(named["spec"], tierName="leaf")
    topology = tree(named, *THREE_TIERS[1:])
    assert topology.highest_tier(NetworkTopologySpec(mode="hard", highest_tier_allowed=2)) == 2
    assert topology.highest_tier(NetworkTopologySpec(mode="soft")) == 4
    assert topology.highest_tier(NetworkTopologySpec(mode="hard", highest_tier_name="leaf")) == 1
    assert topology.highest_tier(NetworkTopologySpec(mode="hard", highest_tier_name="rack")) is None
    assert topology.highest_tier(NetworkTopologySpec(mode="hard")) is None


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        pytest.param(hyper_node("s", "1"), "HyperNode s: field spec.tier: expected an integer >= 0", id="tier-type"),
        pytest.param(hyper_node("s", -2), "HyperNode s: field spec.tier: expected an integer >= 0", id="tier-negative"),
        pytest.param(
            hyper_node("s", 1, {"type": "Rack", "selector": {}}),
            "HyperNode s: field spec.members[0].type: must be Node or HyperNode",
            id="member-type",
        ),
        pytest.param(
            hyper_node(
                "s", 1, {"type": "Node", "selector": {"exactMatch": {"name": "a"}, "regexMatch": {"pattern": "b"}}}
            ),
            "HyperNode s: field spec.members[0].selector: set exactly one of exactMatch, regexMatch, labelMatch",
            id="two-selectors",
        ),
        pytest.param(
            hyper_node("s", 1, {"type": "Node", "selector": {"regexMatch": {"pattern": "("}}}),
            "HyperNode s: field spec.members[0].selector.regexMatch.pattern: not a valid regular expression",
            id="bad-regex",
        ),
        pytest.param(
            hyper_node("s", 2, {"type": "HyperNode", "selector": {"regexMatch": {"pattern": "s"}}}),
            "HyperNode s: field spec.members[0].selector.regexMatch: a HyperNode member is selected by exactMatch only",
            id="hypernode-regex",
        ),
        pytest.param(
            hyper_node("s", 1, {"type": "Node", "selector": {"labelMatch": {"matchLabels": ["x"]}}}),
            "HyperNode s: field spec.members[0].selector.labelMatch.matchLabels",
            id="bad-labels",
        ),
        pytest.param(
            {"kind": "HyperNode", "metadata": {}, "spec": {}}, "HyperNode <unnamed>: field metadata.name", id="unnamed"
        ),
        pytest.param(
            {"kind": "HyperNode", "metadata": {"name": "s"}, "spec": {"tier": 1, "members": {}}},
            "HyperNode s: field spec.members: expected a list",
            id="members-map",
        ),
    ],
)
def test_malformed_hypernodes_name_the_object_and_field(obj: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidHyperNode) as raised:
        parse_object("HyperNode", obj, parse_hyper_node)
    assert str(raised.value).startswith(message), str(raised.value)


def pod_group(topology: object) -> dict[str, Any]:
    return {
        "kind": "PodGroup",
        "metadata": {"name": "pg", "namespace": "ml"},
        "spec": {"minMember": 2, "networkTopology": topology},
    }


def test_pod_group_network_topology_is_read() -> None:
    spec = parse_pod_group(pod_group({"mode": "soft", "highestTierAllowed": 2}))
    assert spec.network_topology == NetworkTopologySpec(mode="soft", highest_tier_allowed=2)
    assert parse_pod_group(pod_group({})).network_topology == NetworkTopologySpec(mode="hard")
    assert parse_pod_group(pod_group(None)).network_topology is None


@pytest.mark.parametrize(
    ("topology", "message"),
    [
        pytest.param({"mode": "strict"}, "field spec.networkTopology.mode: must be hard or soft", id="mode"),
        pytest.param(
            {"highestTierAllowed": -1},
            "field spec.networkTopology.highestTierAllowed: expected an integer >= 0",
            id="tier",
        ),
        pytest.param(
            {"highestTierAllowed": 1, "highestTierName": "leaf"},
            "field spec.networkTopology: highestTierAllowed and highestTierName cannot both be set",
            id="both",
        ),
        pytest.param("hard", "field spec.networkTopology: expected a map", id="shape"),
    ],
)
def test_bad_network_topology_names_the_field(topology: object, message: str) -> None:
    with pytest.raises(InvalidPodGroup) as raised:
        parse_pod_group(pod_group(topology))
    assert str(raised.value).startswith(f"PodGroup ml/pg: {message}"), str(raised.value)
