"""NodeShard parsing: the desired nodes, and errors that name the object and the field."""

from __future__ import annotations

from typing import Any

import pytest

from py_volcano.api import NodeShardSpec, parse_node_shard


def shard(name: Any = "shard-a", spec: Any = None) -> dict[str, Any]:
    """A NodeShard manifest."""
    return {"apiVersion": "shard.volcano.sh/v1alpha1", "kind": "NodeShard", "metadata": {"name": name}, "spec": spec}


def test_desired_nodes_are_read() -> None:
    parsed = parse_node_shard(shard(spec={"nodesDesired": ["n2", "n1", "n1"]}))
    assert parsed == NodeShardSpec(name="shard-a", nodes_desired=frozenset({"n1", "n2"}))


def test_missing_desired_nodes_own_no_node() -> None:
    assert parse_node_shard(shard(spec={})).nodes_desired == frozenset()


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        pytest.param(shard(spec={"nodesDesired": "n1"}), "NodeShard shard-a: spec.nodesDesired", id="not-a-list"),
        pytest.param(shard(spec={"nodesDesired": ["n1", 3]}), "NodeShard shard-a: spec.nodesDesired", id="not-names"),
        pytest.param(shard(spec={"nodesDesired": [""]}), "NodeShard shard-a: spec.nodesDesired", id="empty-name"),
        pytest.param(shard(spec=None), "NodeShard shard-a: spec must be an object", id="no-spec"),
        pytest.param(shard(name="", spec={}), "NodeShard: metadata.name", id="no-name"),
        pytest.param({"spec": {}}, "NodeShard: metadata.name", id="no-metadata"),
    ],
)
def test_malformed_node_shard_names_object_and_field(obj: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_node_shard(obj)
