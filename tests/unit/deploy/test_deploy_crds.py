"""Queue and PodGroup CRDs: shipped once, structural, validating, accepting Volcano's own manifests."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from . import openapi_subset
from .openapi_subset import QUANTITY_PATTERN, structural_errors, validate_object

REPO = Path(__file__).resolve().parents[3]
CRDS = REPO / "crds"
CHART_CRDS = REPO / "charts" / "py-volcano" / "files" / "crds"
FIXTURES = Path(__file__).parent / "fixtures"
QUEUE_CRD = "scheduling.volcano.sh_queues.yaml"
PODGROUP_CRD = "scheduling.volcano.sh_podgroups.yaml"


def load_crd(name: str) -> dict[str, Any]:
    return dict(yaml.safe_load((CRDS / name).read_text()))


def schema_of(kind: str) -> dict[str, Any]:
    crd = load_crd(QUEUE_CRD if kind == "Queue" else PODGROUP_CRD)
    (version,) = crd["spec"]["versions"]
    return dict(version["schema"]["openAPIV3Schema"])


def node(schema: dict[str, Any], path: str) -> dict[str, Any]:
    for name in path.strip(".").split("."):
        schema = schema["properties"][name]
    return schema


def fixture_objects() -> list[Any]:
    params = []
    for path in sorted(FIXTURES.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            for obj in doc["items"] if doc["kind"] == "List" else [doc]:
                params.append(pytest.param(obj, id=f"{path.stem}:{obj['metadata']['name']}"))
    return params


# --- one source of truth ----------------------------------------------------------------------


def test_chart_ships_exactly_the_top_level_crds() -> None:
    """charts/py-volcano/files/crds/ (read by templates/crds.yaml) holds byte-identical copies of crds/, and
    nothing else; the chart has no crds/ folder, which Helm would install once and never upgrade."""
    top = sorted(path.name for path in CRDS.glob("*.yaml"))
    assert {PODGROUP_CRD, QUEUE_CRD, "topology.volcano.sh_hypernodes.yaml"} <= set(top)
    assert sorted(path.name for path in CHART_CRDS.iterdir()) == top
    for name in top:
        assert (CHART_CRDS / name).read_bytes() == (CRDS / name).read_bytes(), (
            f"charts/py-volcano/files/crds/{name} differs"
        )
    assert not (REPO / "charts" / "py-volcano" / "crds").exists()


# --- identity -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("file", "kind", "plural", "scope", "short_names"),
    [
        pytest.param(QUEUE_CRD, "Queue", "queues", "Cluster", ["q", "queue-v1beta1"], id="queue"),
        pytest.param(
            PODGROUP_CRD, "PodGroup", "podgroups", "Namespaced", ["pg", "podgroup-v1beta1"], id="podgroup"
        ),
    ],
)
def test_crd_names_scope_and_version(
    file: str, kind: str, plural: str, scope: str, short_names: list[str]
) -> None:
    crd = load_crd(file)
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["kind"] == "CustomResourceDefinition"
    assert crd["metadata"]["name"] == f"{plural}.scheduling.volcano.sh"
    spec = crd["spec"]
    assert spec["group"] == "scheduling.volcano.sh"
    assert spec["scope"] == scope
    assert spec["names"]["kind"] == kind
    assert spec["names"]["listKind"] == f"{kind}List"
    assert spec["names"]["plural"] == plural
    assert spec["names"]["singular"] == kind.lower()
    assert spec["names"]["shortNames"] == short_names
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1beta1", True, True)
    assert version["subresources"] == {"status": {}}


@pytest.mark.parametrize(
    ("file", "columns"),
    [
        pytest.param(
            QUEUE_CRD,
            {
                ".spec.weight",
                ".status.state",
                ".status.allocated.cpu",
                ".status.allocated.memory",
                ".metadata.creationTimestamp",
            },
            id="queue",
        ),
        pytest.param(
            PODGROUP_CRD,
            {
                ".status.phase",
                ".spec.minMember",
                ".status.running",
                ".spec.queue",
                ".metadata.creationTimestamp",
            },
            id="podgroup",
        ),
    ],
)
def test_printer_columns_point_at_schema_fields(file: str, columns: set[str]) -> None:
    (version,) = load_crd(file)["spec"]["versions"]
    schema = version["schema"]["openAPIV3Schema"]
    printed = {column["jsonPath"] for column in version["additionalPrinterColumns"]}
    assert columns <= printed
    for column in version["additionalPrinterColumns"]:
        assert column["type"] in {"integer", "number", "string", "boolean", "date"}
        path = column["jsonPath"]
        if path == ".metadata.creationTimestamp":
            continue
        parent, _, leaf = path.rpartition(".")
        target = node(schema, parent)
        assert leaf in target.get("properties", {}) or "additionalProperties" in target, path


# --- structure and validation rules ------------------------------------------------------------


@pytest.mark.parametrize("kind", ["Queue", "PodGroup"])
def test_schema_is_structural(kind: str) -> None:
    assert structural_errors(schema_of(kind)) == []


@pytest.mark.parametrize("kind", ["Queue", "PodGroup"])
def test_every_quantity_is_int_or_string_with_the_kubernetes_pattern(kind: str) -> None:
    quantities = [
        (path, schema)
        for path, schema in openapi_subset.walk(schema_of(kind))
        if openapi_subset.is_int_or_string(schema)
    ]
    assert quantities, "no quantity fields found"
    for path, schema in quantities:
        assert path.endswith(".*"), f"{path}: quantities sit in resource maps"
        assert schema["pattern"] == QUANTITY_PATTERN, path


@pytest.mark.parametrize(
    ("kind", "path", "expected"),
    [
        pytest.param("Queue", ".spec.weight", {"type": "integer", "minimum": 1, "default": 1}, id="weight"),
        pytest.param("Queue", ".spec.reclaimable", {"type": "boolean", "default": True}, id="reclaimable"),
        pytest.param(
            "Queue", ".status.state", {"enum": ["Open", "Closed", "Closing", "Unknown"]}, id="state"
        ),
        pytest.param("PodGroup", ".spec.minMember", {"type": "integer", "minimum": 0}, id="minMember"),
        pytest.param("PodGroup", ".spec.queue", {"type": "string", "default": "default"}, id="queue"),
        pytest.param(
            "PodGroup",
            ".status.phase",
            {"enum": ["Pending", "Running", "Unknown", "Inqueue", "Completed"]},
            id="phase",
        ),
    ],
)
def test_validation_rules(kind: str, path: str, expected: dict[str, Any]) -> None:
    field = node(schema_of(kind), path)
    assert {key: field.get(key) for key in expected} == expected


@pytest.mark.parametrize(
    ("kind", "fields"),
    [
        pytest.param(
            "Queue",
            {
                "spec": {
                    "weight",
                    "capability",
                    "deserved",
                    "guarantee",
                    "reclaimable",
                    "parent",
                    "priority",
                    "affinity",
                    "extendClusters",
                    "type",
                },
                "status": {
                    "state",
                    "pending",
                    "running",
                    "unknown",
                    "inqueue",
                    "completed",
                    "allocated",
                    "reservation",
                },
            },
            id="queue",
        ),
        pytest.param(
            "PodGroup",
            {
                "spec": {
                    "minMember",
                    "minResources",
                    "minTaskMember",
                    "queue",
                    "priorityClassName",
                    "networkTopology",
                },
                "status": {"phase", "conditions", "running", "succeeded", "failed"},
            },
            id="podgroup",
        ),
    ],
)
def test_volcano_field_names(kind: str, fields: dict[str, set[str]]) -> None:
    schema = schema_of(kind)
    for part, names in fields.items():
        assert names <= set(node(schema, part)["properties"]), part


# --- Volcano's manifests are accepted, bad ones are not -----------------------------------------


@pytest.mark.parametrize("obj", fixture_objects())
def test_volcano_example_manifest_validates(obj: dict[str, Any]) -> None:
    assert obj["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    assert validate_object(obj, schema_of(obj["kind"])) == []


def test_fixtures_cover_both_kinds() -> None:
    kinds = {param.values[0]["kind"] for param in fixture_objects()}
    assert kinds == {"Queue", "PodGroup"}


QUEUE = {
    "apiVersion": "scheduling.volcano.sh/v1beta1",
    "kind": "Queue",
    "metadata": {"name": "q1"},
    "spec": {"weight": 2, "capability": {"cpu": "4", "memory": "8Gi"}},
}
PODGROUP = {
    "apiVersion": "scheduling.volcano.sh/v1beta1",
    "kind": "PodGroup",
    "metadata": {"name": "pg", "namespace": "default"},
    "spec": {"minMember": 2, "queue": "q1"},
}


def patched(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    *parents, leaf = path.split(".")
    target = obj
    for name in parents:
        target = target.setdefault(name, {})
    target[leaf] = value
    return obj


@pytest.mark.parametrize(
    ("obj", "path", "value", "message"),
    [
        pytest.param(QUEUE, "spec.weight", 0, "less than the minimum 1", id="queue-weight-0"),
        pytest.param(QUEUE, "spec.weight", "2", "not of type integer", id="queue-weight-string"),
        pytest.param(QUEUE, "spec.weight", 2**31, "int32", id="queue-weight-overflow"),
        pytest.param(QUEUE, "spec.capability", {"cpu": "4 cores"}, "does not match", id="queue-bad-quantity"),
        pytest.param(
            QUEUE, "spec.capability", {"cpu": 1.5}, "neither an integer nor a string", id="queue-float"
        ),
        pytest.param(
            QUEUE, "spec.guarantee", {"resource": {"memory": "1GB"}}, "does not match", id="guarantee"
        ),
        pytest.param(QUEUE, "spec.reclaimable", "yes", "not of type boolean", id="queue-reclaimable"),
        pytest.param(
            QUEUE, "spec.capacity", {"cpu": "1"}, "unknown field 'capacity'", id="queue-unknown-field"
        ),
        pytest.param(QUEUE, "status.state", "Opened", "not one of", id="queue-state"),
        pytest.param(QUEUE, "status.running", -1, "less than the minimum 0", id="queue-running-negative"),
        pytest.param(PODGROUP, "spec.minMember", -1, "less than the minimum 0", id="pg-minMember-negative"),
        pytest.param(
            PODGROUP, "spec.minTaskMember", {"worker": -2}, "less than the minimum 0", id="pg-minTask"
        ),
        pytest.param(
            PODGROUP, "spec.minResources", {"nvidia.com/gpu": "two"}, "does not match", id="pg-quantity"
        ),
        pytest.param(
            PODGROUP, "spec.networkTopology", {"mode": "strict"}, "not one of", id="pg-topology-mode"
        ),
        pytest.param(PODGROUP, "status.phase", "Done", "not one of", id="pg-phase"),
        pytest.param(
            PODGROUP,
            "status.conditions",
            [{"type": "Scheduled", "lastTransitionTime": "yesterday"}],
            "RFC 3339",
            id="pg-condition-time",
        ),
        pytest.param(PODGROUP, "spec.minAvailable", 1, "unknown field 'minAvailable'", id="pg-unknown-field"),
    ],
)
def test_invalid_manifest_is_rejected(obj: dict[str, Any], path: str, value: Any, message: str) -> None:
    schema = schema_of(obj["kind"])
    assert validate_object(obj, schema) == []
    errors = validate_object(patched(obj, path, value), schema)
    assert any(message in error for error in errors), errors


# --- the checker itself catches what it claims to ----------------------------------------------


@pytest.mark.parametrize(
    ("broken", "message"),
    [
        pytest.param({"properties": {"a": {"type": "string"}}}, "needs a type", id="untyped-node"),
        pytest.param(
            {"type": "object", "properties": {"a": {"type": "array"}}}, "have items", id="array-no-items"
        ),
        pytest.param(
            {"type": "object", "additionalProperties": False}, "not a boolean", id="additional-false"
        ),
        pytest.param(
            {"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}], "type": "string"}}},
            "anyOf is only allowed",
            id="anyof",
        ),
        pytest.param(
            {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1, "default": 0}}},
            "default 0 is invalid",
            id="bad-default",
        ),
        pytest.param(
            {"type": "object", "properties": {"s": {"type": "string", "enum": ["a", 1]}}},
            "enum value 1 is invalid",
            id="bad-enum",
        ),
        pytest.param(
            {"type": "object", "properties": {"s": {"type": "string", "oneOf": []}}},
            "unsupported keyword 'oneOf'",
            id="unsupported-keyword",
        ),
        pytest.param(
            {"type": "object", "properties": {"q": {"x-kubernetes-int-or-string": True, "type": "string"}}},
            "must not set type",
            id="int-or-string-typed",
        ),
    ],
)
def test_structural_checker_flags(broken: dict[str, Any], message: str) -> None:
    errors = structural_errors(broken)
    assert any(message in error for error in errors), errors
