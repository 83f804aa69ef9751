"""Full LISTs: every object of a kind, reconciled with the store as it arrives: as a watch's initial
events (Kubernetes' streaming list, `sendInitialEvents`) or page by page.

The streaming list is what the informer asks for first: the API server sends every object from its
watch cache, one event each, then a bookmark marking the end, and the same stream goes on as the watch.
Measured on our API server (1.36) with 50,000 pods: 4.6 s of its CPU and 1.4 s of ours, against 9.6 s
and 4.3 s for the same objects in pages of 500. An API server that refuses it (older than 1.27, or
the WatchList feature off) is LISTed page by page.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncGenerator
from typing import Any, TypeAlias

import structlog

from py_volcano.cache.client import ApiClient, api_failure
from py_volcano.cache.collector import collector_paused
from py_volcano.cache.store import Kind, Listing, Store, resource_version
from py_volcano.errors import ApiError

__all__ = ["Watched", "list_by_watch", "list_pages", "relist"]

log = structlog.get_logger(__name__)

#: HTTP 410 Gone: a continue token (or a watch's resourceVersion) older than the API server keeps.
GONE = 410
#: The annotation of the bookmark that ends a watch's initial events.
INITIAL_EVENTS_END = "k8s.io/initial-events-end"

#: A watch stream: (HTTP status, one parsed event) at a time.
Watched: TypeAlias = AsyncGenerator[tuple[int, Any], None]


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
    with collector_paused():  # what a LIST brings lives on: collections would scan it again and again
        try:
            async for items, listed_at in list_pages(client, kind, page_size=page_size):
                await store.released()
                listing.add(items)
                version = listed_at
        except ApiError as exc:
            log.error("list_failed", kind=kind.name, reason=str(exc))
            return 0
        listing.finish(version=version)
    duration_ms = round((time.perf_counter() - began) * 1000, 1)
    log.debug("kind_listed", kind=kind.name, objects=len(listing.listed), duration_ms=duration_ms)
    return version


async def list_by_watch(
    client: ApiClient, store: Store, kind: Kind, *, batch: int, timeout: float
) -> tuple[int, Watched] | None:
    """LIST `kind` as a watch's initial events and reconcile the store with them, `batch` objects at a time.

    Return the version the initial events end at and the stream, still open, whose further events are
    the watch from that version on (the caller closes it). Return None, with the stream closed and the
    store's listing left unfinished (nothing dropped), when the API server refuses a streaming list or
    the stream breaks or ends before the initial events do: the caller LISTs page by page instead.
    `timeout` is the watch's `timeoutSeconds`.
    """
    began = time.perf_counter()
    params = {
        "watch": "true",
        "sendInitialEvents": "true",
        "resourceVersionMatch": "NotOlderThan",
        "allowWatchBookmarks": "true",
        "timeoutSeconds": str(round(timeout)),
    }
    stream: Watched = client.stream(kind.list_path, params=params, timeout=timeout + 30)
    listing = store.listing(kind, started=store.clock())
    try:
        with collector_paused():  # as in `relist`
            version = await _initial_events(stream, listing, batch=batch)
    except ApiError as exc:
        log.info("streaming_list_failed", kind=kind.name, reason=str(exc))
        version = 0
    if not version:
        await stream.aclose()
        return None
    duration_ms = round((time.perf_counter() - began) * 1000, 1)
    log.debug("kind_listed", kind=kind.name, objects=len(listing.listed), duration_ms=duration_ms, by="watch")
    return version, stream


async def _initial_events(stream: Watched, listing: Listing, *, batch: int) -> int:
    """Reconcile the store with the stream's initial events; return the version their end bookmark names
    (the listing finished there), 0 when the stream refused them or ended first."""
    kind = listing.kind
    objects: list[Any] = []
    async for status, event in stream:
        kind_of_event, obj = (event.get("type"), event.get("object")) if isinstance(event, dict) else (None, None)
        if status != 200 or not isinstance(obj, dict) or kind_of_event not in ("ADDED", "BOOKMARK"):
            reason = f"HTTP {status}" if status != 200 else f"unexpected event {kind_of_event}"
            log.info("streaming_list_failed", kind=kind.name, reason=reason, body=str(event)[:200])
            return 0
        if kind_of_event == "ADDED":
            objects.append(obj)
            if len(objects) >= batch:
                await listing.store.released()
                listing.add(objects)
                objects = []
        elif ((obj.get("metadata") or {}).get("annotations") or {}).get(INITIAL_EVENTS_END) == "true":
            listing.add(objects)
            version = resource_version(obj)
            listing.finish(version=version)
            return version
    log.info("streaming_list_failed", kind=kind.name, reason="the stream ended before its initial events")
    return 0
