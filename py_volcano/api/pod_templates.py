"""PodTemplates: the spec parts of parsed pods by their spec's text, so the pods of one template parse
their spec once.

A cluster's pods come by the template: a ReplicaSet's or a Job's pods have the same spec but for
`nodeName`. Reading a spec (requests, selector, affinity, tolerations, ports, pinned CPUs, limits,
claims) was two thirds of parsing a pod; a restart with 150,000 pods parsed the same few specs
150,000 times. The key is the spec as the store encodes it without `nodeName` (`cache/pod_text.py`): two
pods share their parts only when their specs are the same text. A spec that fails to parse is never
kept, so each pod that carries it gets its own error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from py_volcano.api.manifests import PodSpecParts, pod_spec_parts

__all__ = ["PodTemplates"]


class PodTemplates:
    """Spec parts by template key, at most `limit` of them (all dropped when full: templates are few)."""

    __slots__ = ("_parts", "limit")

    def __init__(self, limit: int = 4096) -> None:
        self._parts: dict[bytes, PodSpecParts] = {}
        self.limit = limit

    def __len__(self) -> int:
        return len(self._parts)

    def parts(self, key: bytes | None, spec: Mapping[str, Any], name: str) -> PodSpecParts:
        """Return the parts of `spec` (pod `name`'s, named in any error), read once per `key` (None:
        read now and not kept)."""
        if key is None:
            return pod_spec_parts(spec, name)
        found = self._parts.get(key)
        if found is None:
            found = pod_spec_parts(spec, name)
            if len(self._parts) >= self.limit:
                self._parts.clear()
            self._parts[key] = found
        return found
