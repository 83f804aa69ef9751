"""A pod as the store keeps it: what the scheduler reads of it, as compact JSON, and its template's key.

The store keeps each pod's trimmed manifest as text (a fifth of the memory of the decoded maps) and
compares the texts to tell whether anything the scheduler reads changed. The spec's text without
`nodeName` is the key of the pod's template (`api.PodTemplates`): the pods of a ReplicaSet or a Job
have the same one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard

from py_volcano.cache.json_codec import dumps

__all__ = ["encode_pod"]

_POD_META = (
    "name",
    "namespace",
    "uid",
    "labels",
    "annotations",
    "ownerReferences",
    "creationTimestamp",
    "deletionTimestamp",
)
_CONTAINER_KEYS = ("name", "resources", "ports", "restartPolicy")
#: Spec fields nothing reads that differ between the pods of one template: the service account token's
#: volume (its name is random) and the hostname a StatefulSet or a Volcano Job gives each pod.
_DROPPED_SPEC = frozenset({"volumes", "hostname"})
_ABSENT = object()


def _trim_pod(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Keep what `parse_pod` reads: a few metadata fields, the spec but `_DROPPED_SPEC`, the phase and the
    PodScheduled condition. A part of the wrong shape is kept as it is, for the parser to name."""
    meta = obj.get("metadata")
    spec = obj.get("spec")
    if _is_map(spec):
        spec = {key: value for key, value in spec.items() if key not in _DROPPED_SPEC}
        for key in ("containers", "initContainers"):
            if isinstance(spec.get(key), list):
                spec[key] = [{k: c[k] for k in _CONTAINER_KEYS if k in c} if _is_map(c) else c for c in spec[key]]
    status = obj.get("status")
    if not _is_map(status):
        return {"metadata": meta, "spec": spec, "status": status}
    trimmed: dict[str, Any] = {"phase": status["phase"]} if status.get("phase") else {}
    conditions = status.get("conditions")
    if isinstance(conditions, list):
        # cdp reads when PodScheduled turned True; the other conditions (and PodScheduled=False, which the
        # status writer keeps rewriting) change often and nothing reads them.
        scheduled = [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": c.get("lastTransitionTime")}
            for c in conditions
            if _is_map(c) and c.get("type") == "PodScheduled" and c.get("status") == "True"
        ]
        if scheduled:
            trimmed["conditions"] = scheduled
    return {
        "metadata": {k: meta[k] for k in _POD_META if k in meta} if _is_map(meta) else meta,
        "spec": spec,
        "status": trimmed,
    }


def _is_map(value: object) -> TypeGuard[Mapping[str, Any]]:
    """Whether `value` is a map; JSON gives dicts, checked first (the ABC check costs ten times more)."""
    return type(value) is dict or isinstance(value, Mapping)


def encode_pod(obj: Mapping[str, Any]) -> tuple[bytes, bytes | None]:
    """Return the pod's trimmed manifest (`_trim_pod`) as compact JSON, and its spec's JSON without
    `nodeName` (the template key; None when the spec is not a map). The manifest's spec, last, holds the
    same text with `nodeName`, when there is one, last (two encodings a pod, not four: this runs for
    every pod a LIST brings)."""
    trimmed = _trim_pod(obj)
    spec = trimmed.pop("spec")
    if not isinstance(spec, dict):
        trimmed["spec"] = spec
        return dumps(trimmed), None
    node = spec.pop("nodeName", _ABSENT)
    template = dumps(spec)
    spec_text = template
    if node is not _ABSENT:
        spec_text = b'%b%b"nodeName":%b}' % (template[:-1], b"," if len(template) > 2 else b"", dumps(node))
    return b'%b,"spec":%b}' % (dumps(trimmed)[:-1], spec_text), template
