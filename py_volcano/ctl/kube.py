"""What the operator's commands read from the API server and the one thing they write (a Queue's state).

Plain JSON objects through the scheduler's own `ApiClient`, so every credential the scheduler accepts
(kubeconfig contexts, exec plugins, in-cluster tokens) works here too. A failed call raises `ApiError`
naming the request and the API server's answer; a missing object is None.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from py_volcano.cache.client import api_failure
from py_volcano.errors import ApiError

if TYPE_CHECKING:
    from py_volcano.cache.client import ApiClient

__all__ = ["Cluster"]

_VOLCANO = "/apis/scheduling.volcano.sh/v1beta1"
_MERGE_PATCH = "application/merge-patch+json"
#: Kubernetes' page size for LISTs; the commands read every page.
_PAGE = "500"


class Cluster:
    """Reads of Queues, PodGroups and pods, and the Queue state patch, over one client."""

    def __init__(self, client: ApiClient) -> None:
        self.client = client

    async def _get(self, path: str, what: str) -> dict[str, Any] | None:
        code, body = await self.client.request("GET", path)
        if code == 404:
            return None
        if code != 200 or not isinstance(body, Mapping):
            raise api_failure(ApiError, f"read {what}", status=code, body=body)
        return dict(body)

    async def _list(self, path: str, what: str, **params: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        query = {"limit": _PAGE, **params}
        while True:
            code, body = await self.client.request("GET", path, params=query)
            if code == 404:
                return []
            if code != 200 or not isinstance(body, Mapping):
                raise api_failure(ApiError, f"list {what}", status=code, body=body)
            items += [dict(item) for item in body.get("items") or () if isinstance(item, Mapping)]
            token = (body.get("metadata") or {}).get("continue")
            if not token:
                return items
            query["continue"] = str(token)

    async def queues(self) -> list[dict[str, Any]]:
        """Return every Queue."""
        return await self._list(f"{_VOLCANO}/queues", "queues")

    async def queue(self, name: str) -> dict[str, Any] | None:
        """Return a Queue, None when it does not exist."""
        return await self._get(f"{_VOLCANO}/queues/{name}", f"queue {name}")

    async def pod_groups(self, namespace: str | None) -> list[dict[str, Any]]:
        """Return the PodGroups of `namespace` (of every namespace when None)."""
        scope = f"/namespaces/{namespace}" if namespace else ""
        return await self._list(f"{_VOLCANO}{scope}/podgroups", "podgroups")

    async def pod_group(self, namespace: str, name: str) -> dict[str, Any] | None:
        """Return a PodGroup, None when it does not exist."""
        return await self._get(f"{_VOLCANO}/namespaces/{namespace}/podgroups/{name}", f"podgroup {namespace}/{name}")

    async def pending_pods(self, namespace: str | None) -> list[dict[str, Any]]:
        """Return the pods in phase Pending of `namespace` (of every namespace when None)."""
        scope = f"/namespaces/{namespace}" if namespace else ""
        return await self._list(f"/api/v1{scope}/pods", "pods", fieldSelector="status.phase=Pending")

    async def pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        """Return a pod, None when it does not exist."""
        return await self._get(f"/api/v1/namespaces/{namespace}/pods/{name}", f"pod {namespace}/{name}")

    async def set_queue_state(self, name: str, state: str) -> dict[str, Any] | None:
        """Set a Queue's `status.state` (through its status subresource, else on the object itself, as
        Volcano's and older CRDs differ); return the Queue, None when it does not exist."""
        body = {"status": {"state": state}}
        path = f"{_VOLCANO}/queues/{name}"
        code, answer = await self.client.request("PATCH", f"{path}/status", body=body, content_type=_MERGE_PATCH)
        if code == 404 and await self.queue(name) is not None:
            code, answer = await self.client.request("PATCH", path, body=body, content_type=_MERGE_PATCH)
        if code == 404:
            return None
        if code != 200 or not isinstance(answer, Mapping):
            raise api_failure(ApiError, f"set queue {name} {state}", status=code, body=answer)
        return dict(answer)
