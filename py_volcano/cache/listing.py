"""Full LISTs: every object of a kind, page by page, reconciled with the store as the pages arrive."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncGenerator
from typing import Any

import structlog

from py_volcano.cache.client import ApiClient, api_failure
from py_volcano.cache.store import Kind, Store, resource_version
from py_volcano.errors import ApiError

__all__ = ["list_pages", "relist"]

log = structlog.get_logger(__name__)

#: HTTP 410 Gone: a continue token (or a watch's resourceVersion) older than the API server keeps.
GONE = 410


async def list_pages(client: ApiClient, kind: Kind, *, page_size: int) -> AsyncGenerator[tuple[list[Any], int], None]:
    """LIST every object of `kind`; yield each page with the LIST's resourceVersion.

    The next page is asked for before a page is yielded, so the API server prepares it while the caller
    reads this one. A kind the API server does not serve (CRD not installed) yields one empty page at
    the newest version, so its records all go. A continue token that expired starts the LIST over (pages
    already yielded come again, which reconciling tolerates). ApiError when the LIST fails.
    """

    def ask(token: str) -> asyncio.Task[tuple[int, Any]]:
        params = {"limit": str(page_size)} | ({"continue": token} if token else {})
        return asyncio.ensure_future(client.request("GET", kind.list_path, params=params))

    version, token = 0, ""
    pending = ask(token)
    try:
        while True:
            status, body = await pending
            if status == 404 and not token:
                log.warning("kind_not_served", kind=kind.name, path=kind.list_path)
                yield [], sys.maxsize
                return
            if status == GONE and token:
                version, token = 0, ""
                pending = ask(token)
                continue
            if status != 200 or not isinstance(body, dict):
                raise api_failure(ApiError, f"list {kind.plural}", status=status, body=body)
            version = version or resource_version(body)
            token = str((body.get("metadata") or {}).get("continue") or "")
            if token:
                pending = ask(token)
            yield body.get("items") or [], version
            if not token:
                return
    finally:  # a caller that stops early leaves no request behind, and no failure unread
        if not pending.done():
            pending.cancel()
        elif not pending.cancelled():
            pending.exception()


async def relist(client: ApiClient, store: Store, kind: Kind, *, page_size: int) -> int:
    """LIST `kind` and reconcile the store with it; return the LIST's resourceVersion, 0 when the LIST
    failed (logged; the store keeps what it had)."""
    began = time.perf_counter()
    listing = store.listing(kind, started=store.clock())
    version = 0
    try:
        async for items, listed_at in list_pages(client, kind, page_size=page_size):
            listing.add(items)
            version = listed_at
    except ApiError as exc:
        log.error("list_failed", kind=kind.name, reason=str(exc))
        return 0
    listing.finish(version=version)
    duration_ms = round((time.perf_counter() - began) * 1000, 1)
    log.debug("kind_listed", kind=kind.name, objects=len(listing.listed), duration_ms=duration_ms)
    return version
