"""Volcano's `NodeShard` (`shard.volcano.sh/v1alpha1`, cluster-scoped): the nodes one scheduler instance owns.

A scheduler started with `--scheduler-sharding-mode=hard` and `--scheduler-sharding-name=<name>` places
pods only on the nodes NodeShard `<name>` lists in `spec.nodesDesired`, as vc-scheduler's hard sharding
mode does; it still sees every pod and node, so node usage and queue accounting stay whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["HARD_SHARDING", "NODE_SHARD_PATH", "NONE_SHARDING", "SHARDING_MODES", "NodeShardSpec", "parse_node_shard"]

NODE_SHARD_PATH = "/apis/shard.volcano.sh/v1alpha1/nodeshards"
"""Collection path of NodeShards on the API server."""
NONE_SHARDING, HARD_SHARDING = "none", "hard"
"""`--scheduler-sharding-mode` values: no sharding; only the shard's nodes (Volcano's `hard`)."""
SHARDING_MODES = (NONE_SHARDING, HARD_SHARDING)


@dataclass(slots=True, frozen=True)
class NodeShardSpec:
    """One NodeShard: its name and the nodes its `spec.nodesDesired` names."""

    name: str
    nodes_desired: frozenset[str]


def parse_node_shard(obj: Mapping[str, Any]) -> NodeShardSpec:
    """Parse a NodeShard object; ValueError naming the object and the field when it is malformed."""
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    if not isinstance(name, str) or not name:
        raise ValueError("NodeShard: metadata.name must be a non-empty string")
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        raise ValueError(f"NodeShard {name}: spec must be an object, got {type(spec).__name__}")
    desired = spec.get("nodesDesired")
    if desired is None:
        desired = []
    if not isinstance(desired, list) or not all(isinstance(node, str) and node for node in desired):
        raise ValueError(f"NodeShard {name}: spec.nodesDesired must be a list of node names, got {desired!r}")
    return NodeShardSpec(name=name, nodes_desired=frozenset(desired))
