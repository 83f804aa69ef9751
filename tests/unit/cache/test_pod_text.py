"""A pod as the store keeps it: its trimmed manifest's text and its template's key."""

from __future__ import annotations

import json
from typing import Any

from py_volcano.cache.pod_text import encode_pod
from py_volcano.cache.store import PODS, PRIORITY_CLASSES, Store


def pod(name: str, *, node: str | None = None, cpu: str = "1") -> dict[str, Any]:
    """A pod of one template (a ReplicaSet's, say), on `node` when given."""
    spec: dict[str, Any] = {
        "schedulerName": "py-volcano",
        "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}],
        "volumes": [{"name": f"token-{name}"}],
        "hostname": name,
    }
    if node is not None:
        spec["nodeName"] = node
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "resourceVersion": "5"},
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }


def test_the_kept_text_is_the_trimmed_manifest_with_its_node() -> None:
    """The text decodes to what the scheduler reads: the node kept, volumes, hostname and images dropped."""
    text, _ = encode_pod(pod("a", node="n1"))
    manifest = json.loads(text)
    assert manifest["spec"] == {
        "schedulerName": "py-volcano",
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
        "nodeName": "n1",
    }
    assert manifest["metadata"]["name"] == "a" and manifest["status"] == {"phase": "Running"}
    assert json.loads(encode_pod(pod("b"))[0])["spec"].get("nodeName") is None


def test_pods_of_one_template_share_its_key_whatever_their_node() -> None:
    """Name, node, hostname and volumes differ between the pods of a template; their key does not. A spec that
    differs in what the scheduler reads has another key; a spec that is not a map has none."""
    keys = {encode_pod(pod(name, node=node))[1] for name, node in (("a", "n1"), ("b", "n2"), ("c", None))}
    assert len(keys) == 1
    assert encode_pod(pod("d", cpu="2"))[1] not in keys
    assert encode_pod({"metadata": {"name": "e"}, "spec": ["not", "a", "map"]})[1] is None


def test_the_store_parses_a_template_once_and_each_pod_keeps_its_own_node() -> None:
    """The store's pods of one template share their spec parts; each has its name and node; a pod
    whose requests change (a resize) parses its new spec; a PriorityClass change parses them again."""
    store = Store(scheduler_name="py-volcano")
    for name, node in (("a", "n1"), ("b", "n2"), ("c", None)):
        store.apply_event(PODS, "ADDED", pod(name, node=node))
    parsed = [store.pod(f"ns/{name}") for name in "abc"]
    assert all(p is not None for p in parsed)
    a, b, c = (p.task for p in parsed if p is not None)
    assert a.resreq is b.resreq is c.resreq and len(store.pod_templates) == 1
    assert [(t.name, t.node_name) for t in (a, b, c)] == [("a", "n1"), ("b", "n2"), ("c", "")]
    resized = pod("b", node="n2", cpu="2")
    resized["metadata"]["resourceVersion"] = "6"
    store.apply_event(PODS, "MODIFIED", resized)
    after = store.pod("ns/b")
    assert after is not None and after.task.resreq.milli_cpu == 2000 and a.resreq.milli_cpu == 1000
    classes = {"metadata": {"name": "high", "resourceVersion": "7"}, "value": 1000}
    store.apply_event(PRIORITY_CLASSES, "ADDED", classes)
    again, other = store.pod("ns/a"), store.pod("ns/c")
    assert again is not None and other is not None and again.task is not a
    assert again.task.resreq is other.task.resreq and again.task.node_name == "n1"
