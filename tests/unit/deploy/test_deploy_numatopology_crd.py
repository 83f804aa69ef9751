"""The Numatopology CRD: Volcano's group, version, kind, scope and field names, structural, validating the
objects Volcano's resource exporter writes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from .openapi_subset import structural_errors, validate_object

REPO = Path(__file__).resolve().parents[3]
NAME = "nodeinfo.volcano.sh_numatopologies.yaml"
CRD = REPO / "crds" / NAME


def crd() -> dict[str, Any]:
    return dict(yaml.safe_load(CRD.read_text()))


def schema() -> dict[str, Any]:
    (version,) = crd()["spec"]["versions"]
    return dict(version["schema"]["openAPIV3Schema"])


def numatopology(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "nodeinfo.volcano.sh/v1alpha1",
        "kind": "Numatopology",
        "metadata": {"name": "n1"},
        "spec": spec,
    }


def test_identity_is_volcanos() -> None:
    """numatopologies.nodeinfo.volcano.sh, v1alpha1, kind Numatopology, cluster-scoped, short name numatopo;
    the chart ships a byte-identical copy."""
    doc = crd()
    assert doc["metadata"]["name"] == "numatopologies.nodeinfo.volcano.sh"
    assert doc["spec"]["group"] == "nodeinfo.volcano.sh"
    assert doc["spec"]["scope"] == "Cluster"
    assert doc["spec"]["names"] == {
        "kind": "Numatopology",
        "listKind": "NumatopologyList",
        "plural": "numatopologies",
        "singular": "numatopology",
        "shortNames": ["numatopo"],
    }
    (version,) = doc["spec"]["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert "subresources" not in version
    assert (REPO / "charts" / "py-volcano" / "files" / "crds" / NAME).read_bytes() == CRD.read_bytes()


def test_schema_is_structural_with_volcanos_field_names() -> None:
    root = schema()
    assert structural_errors(root) == []
    spec = root["properties"]["spec"]["properties"]
    assert set(spec) == {"policies", "resReserved", "numares", "cpuDetail", "podAllocations"}
    assert set(spec["numares"]["additionalProperties"]["properties"]) == {"allocatable", "capacity"}
    assert set(spec["cpuDetail"]["additionalProperties"]["properties"]) == {"numa", "socket", "core"}
    allocation = spec["podAllocations"]["items"]["properties"]
    assert set(allocation) == {"uid", "name", "namespace", "containerAllocations"}
    assert set(allocation["containerAllocations"]["items"]["properties"]) == {"name", "allocations"}


def test_exporter_shaped_object_validates() -> None:
    spec = {
        "policies": {"CPUManagerPolicy": "static", "TopologyManagerPolicy": "single-numa-node"},
        "resReserved": {"cpu": "1", "memory": "1Gi"},
        "numares": {"cpu": {"allocatable": "1-7", "capacity": 8}, "memory": {"capacity": 2}},
        "cpuDetail": {str(i): {"numa": i // 4, "socket": 0, "core": i} for i in range(8)},
        "podAllocations": [
            {
                "uid": "u",
                "name": "p",
                "namespace": "default",
                "containerAllocations": [{"name": "main", "allocations": {"cpu": "1-2", "memory": "1Gi"}}],
            }
        ],
    }
    assert validate_object(numatopology(spec), schema()) == []


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        pytest.param({"cpuDetail": {"0": {"numa": -1}}}, "less than the minimum", id="negative-numa"),
        pytest.param({"numares": {"cpu": {"allocatable": 3}}}, "", id="cpuset-not-a-string"),
        pytest.param({"cpuDetail": {"0": {"thread": 1}}}, "unknown field", id="unknown-field"),
    ],
)
def test_bad_objects_are_refused(spec: dict[str, Any], error: str) -> None:
    errors = validate_object(numatopology(spec), schema())
    assert errors and any(error in message for message in errors), errors
