"""The example queue tree of docs/semantics.md as manifests: 100 CPU / 400Gi, root > team-a, team-b > four leaves."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tests.builders import node, queue


def _queue(name: str, parent: str, deserved: tuple[int, int], capability: tuple[int, int],
           guarantee: tuple[int, int], **extra: Any) -> dict[str, Any]:
    def quantities(pair: tuple[int, int]) -> dict[str, str]:
        return {"cpu": str(pair[0]), "memory": f"{pair[1]}Gi"}

    return queue(name=name, parent=parent, deserved=quantities(deserved), capability=quantities(capability),
                 guarantee={"resource": quantities(guarantee)}, **extra)


def example_tree(**overrides: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The node, the root and the six queues; `overrides[name]` replaces spec fields of one queue."""
    queues = [
        queue(name="root", deserved={"cpu": "100", "memory": "400Gi"},
              capability={"cpu": "100", "memory": "400Gi"}),
        _queue("team-a", "root", (60, 240), (70, 300), (20, 80)),
        _queue("team-b", "root", (40, 160), (50, 200), (20, 80)),
        _queue("training", "team-a", (40, 160), (50, 200), (10, 40)),
        _queue("inference", "team-a", (20, 80), (30, 120), (10, 40)),
        _queue("batch", "team-b", (30, 120), (40, 160), (15, 60)),
        _queue("interactive", "team-b", (10, 40), (20, 80), (5, 20)),
    ]
    for manifest in queues:
        changes = overrides.get(manifest["metadata"]["name"])
        if changes:
            manifest["spec"].update(changes)
            manifest["spec"] = {key: value for key, value in manifest["spec"].items() if value is not None}
    return [node(name="n1", cpu="100", memory="400Gi"), *queues]
