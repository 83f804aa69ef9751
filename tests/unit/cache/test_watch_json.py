"""Watch lines decoded without managedFields: the same objects, whatever their strings hold."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from py_volcano.cache.watch_json import loads_event

#: managedFields as the API server writes them: prefixed fieldsV1 keys, a status subresource entry.
MANAGED = [
    {
        "manager": "kubectl",
        "operation": "Update",
        "apiVersion": "v1",
        "time": "2026-11-28T03:00:00Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:containers": {'k:{"name":"c"}': {".": {}, "f:image": {}}}, "f:nodeName": {}}},
    },
    {
        "manager": "kwok",
        "operation": "Update",
        "apiVersion": "v1",
        "time": "2026-11-28T03:00:01Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:status": {"f:conditions": {'k:{"type":"Ready"}': {}}, "f:phase": {}}},
        "subresource": "status",
    },
]


def line(obj: dict[str, Any]) -> bytes:
    """A watch event line as the API server writes it: compact, fields in the given order."""
    return json.dumps({"type": "ADDED", "object": obj}, separators=(",", ":")).encode()


def pod(labels: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    """A pod in the API server's field order: managedFields last in metadata, then spec, then status."""
    metadata = {"name": "p", "namespace": "ns", "uid": "u", "resourceVersion": "7", "labels": labels or {}, **meta}
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {**metadata, "managedFields": MANAGED},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "pause"}]},
        "status": {"phase": "Running"},
    }


def without_managed_fields(raw: bytes) -> Any:
    """The whole line decoded, managedFields removed after."""
    event = json.loads(raw)
    event["object"]["metadata"].pop("managedFields", None)
    return event


def test_a_pod_as_the_api_server_writes_it_loses_only_its_managed_fields() -> None:
    raw = line(pod())
    assert loads_event(raw) == without_managed_fields(raw)


def test_a_node_too() -> None:
    node = {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {"name": "n1", "resourceVersion": "3", "managedFields": MANAGED},
        "spec": {},
        "status": {"allocatable": {"cpu": "4"}},
    }
    raw = line(node)
    assert loads_event(raw) == without_managed_fields(raw)


def test_any_other_layout_is_decoded_whole() -> None:
    """No managedFields, a field after them, status before spec, a bookmark: each decodes as json.loads."""
    after = pod()
    after["metadata"]["later"] = ["x"]
    status_first = {
        "metadata": pod()["metadata"],
        "status": {"phase": "Running", "nested": {"metadata": {"finalizers": ["f"]}, "spec": {}}},
    }
    bookmark = {
        "kind": "Pod",
        "metadata": {"resourceVersion": "9", "annotations": {"k8s.io/initial-events-end": "true"}},
    }
    plain = pod()
    del plain["metadata"]["managedFields"]
    for obj in (after, status_first, bookmark, plain):
        raw = line(obj)
        assert loads_event(raw) == json.loads(raw)


_TRICKY = st.lists(
    st.sampled_from([',"managedFields":[', ']},"spec":{', '"spec":', "]", "}", "\\", '"', "\u00e9", "x"]),
    max_size=4,
).map("".join)


@settings(max_examples=150, deadline=None)
@given(labels=st.dictionaries(_TRICKY, _TRICKY, max_size=4))
def test_strings_that_spell_the_markers_never_move_the_cut(labels: dict[str, str]) -> None:
    """Labels (and annotations) whose keys and values spell the very markers are escaped in JSON text:
    the decoded object is the whole one without managedFields."""
    raw = line(pod(labels=labels, annotations=dict(labels)))
    assert loads_event(raw) == without_managed_fields(raw)
