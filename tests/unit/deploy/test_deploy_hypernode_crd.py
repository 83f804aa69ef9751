"""The HyperNode CRD: Volcano's group, version, kind, scope and field names, structural, and validating."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from .openapi_subset import structural_errors, validate_object

REPO = Path(__file__).resolve().parents[3]
CRD = REPO / "crds" / "topology.volcano.sh_hypernodes.yaml"


def crd() -> dict[str, Any]:
    return dict(yaml.safe_load(CRD.read_text()))


def schema() -> dict[str, Any]:
    (version,) = crd()["spec"]["versions"]
    return dict(version["schema"]["openAPIV3Schema"])


def hyper_node(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": "s0"}, "spec": spec}


def test_identity_is_volcanos() -> None:
    """hypernodes.topology.volcano.sh, v1alpha1, kind HyperNode, cluster-scoped, short name hn."""
    doc = crd()
    assert doc["metadata"]["name"] == "hypernodes.topology.volcano.sh"
    assert doc["spec"]["group"] == "topology.volcano.sh"
    assert doc["spec"]["scope"] == "Cluster"
    assert doc["spec"]["names"] == {
        "kind": "HyperNode",
        "listKind": "HyperNodeList",
        "plural": "hypernodes",
        "singular": "hypernode",
        "shortNames": ["hn"],
    }
    (version,) = doc["spec"]["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)


def test_schema_is_structural_with_volcanos_field_names() -> None:
    root = schema()
    assert structural_errors(root) == []
    spec = root["properties"]["spec"]["properties"]
    assert set(spec) == {"tier", "tierName", "members"}
    member = spec["members"]["items"]["properties"]
    assert set(member) == {"type", "selector"}
    assert set(member["selector"]["properties"]) == {"exactMatch", "regexMatch", "labelMatch"}
    assert set(root["properties"]["status"]["properties"]) == {"conditions", "nodeCount"}


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(
            {"tier": 1, "members": [{"type": "Node", "selector": {"exactMatch": {"name": "node-0"}}}]}, id="exact"
        ),
        pytest.param(
            {
                "tier": 1,
                "tierName": "leaf",
                "members": [{"type": "Node", "selector": {"regexMatch": {"pattern": "^n"}}}],
            },
            id="regex",
        ),
        pytest.param(
            {
                "tier": 1,
                "members": [
                    {
                        "type": "Node",
                        "selector": {
                            "labelMatch": {
                                "matchLabels": {"rack": "r1"},
                                "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}],
                            }
                        },
                    }
                ],
            },
            id="labels",
        ),
        pytest.param(
            {"tier": 2, "members": [{"type": "HyperNode", "selector": {"exactMatch": {"name": "s0"}}}]}, id="tier-2"
        ),
    ],
)
def test_volcano_shaped_hypernodes_validate(spec: dict[str, Any]) -> None:
    assert validate_object(hyper_node(spec), schema()) == []


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        pytest.param({"members": []}, "missing required field 'tier'", id="no-tier"),
        pytest.param({"tier": -1}, "less than the minimum", id="negative-tier"),
        pytest.param({"tier": 1, "members": [{"type": "Rack"}]}, "not one of", id="member-type"),
        pytest.param(
            {"tier": 1, "members": [{"type": "Node", "selector": {"exactMatch": {"name": "Node_0"}}}]},
            "does not match",
            id="node-name",
        ),
        pytest.param(
            {"tier": 1, "members": [{"type": "Node", "selector": {"nameMatch": {}}}]}, "unknown field", id="selector"
        ),
    ],
)
def test_bad_hypernodes_are_refused(spec: dict[str, Any], error: str) -> None:
    errors = validate_object(hyper_node(spec), schema())
    assert any(error in message for message in errors), errors
