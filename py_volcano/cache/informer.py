"""Pods and nodes: LIST, then WATCH from the LIST's resourceVersion, straight into the store.

This is client-go's reflector, for the two kinds whose events come by the thousand: one LIST (a watch's
initial events where the API server streams them, else page by page; reconciled with the store as it
arrives, see listing), then one watch from the version the LIST was taken at,
resumed from the last version seen when it ends or breaks, and a new LIST only when the API server says
that version is gone (410) or when the store holds overlays only a LIST can settle. Nothing is missed and
nothing is read twice, so no periodic LIST is needed.

Why not kopf for these two (it watches the other kinds, `watchers.py`): kopf handles every event as an
operator must, with a queue and worker per object, causes, a diff base and handler invocation, ~0.4 ms of
Python per event; 10,000 pods bring 30,000 events. Here an event costs its JSON decoding and the store
update. At startup kopf also LISTs every kind itself, so 50,000 pods were listed and held twice.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import structlog

from py_volcano.aio import wait_or_stop
from py_volcano.cache.client import ApiClient, api_failure
from py_volcano.cache.listing import GONE, Watched, list_by_watch, relist
from py_volcano.cache.store import NODES, PODS, Kind, Store, resource_version
from py_volcano.errors import ApiError
from py_volcano.settings import WatchingSettings

__all__ = ["INFORMED_KINDS", "inform"]

log = structlog.get_logger(__name__)

#: The kinds this module keeps: many objects, frequent changes.
INFORMED_KINDS: tuple[Kind, ...] = (NODES, PODS)

#: Seconds between two looks at whether the store needs a LIST while a watch runs.
_RELIST_CHECK = 5.0


class _Expired(Exception):
    """The watch's resourceVersion is too old: only a new LIST can go on."""


async def inform(
    client: ApiClient, store: Store, kind: Kind, *, settings: WatchingSettings, stop: asyncio.Event
) -> None:
    """Keep the store's `kind` current until `stop` is set: LIST, then WATCH from where the LIST was taken.

    A watch that ends (the server's timeout) or breaks is resumed from the last version seen, after
    `list_retry` when it broke; a 410 Gone LISTs again. For pods, a LIST also runs when the store holds a
    bind or eviction whose call ended without an answer `resync_period` ago and whose echo never came:
    only a LIST sent afterwards tells whether it happened.
    """
    version = 0
    while not stop.is_set():
        opened: Watched | None = None
        if not version:
            listed = await list_by_watch(
                client, store, kind, batch=settings.list_page_size, timeout=settings.watch_timeout
            )
            if listed is not None:
                version, opened = listed
            else:
                version = await relist(client, store, kind, page_size=settings.list_page_size)
            if not version:
                await wait_or_stop(stop, settings.list_retry)
                continue
        watching = _watch(client, store, kind, version, settings=settings, opened=opened)
        try:
            version = await _until_stopped(watching, stop, version, relist=_relist_check(store, kind, settings))
        except _Expired:
            log.info("watch_expired", kind=kind.name, version=version)
            version = 0
        except ApiError as exc:
            log.warning("watch_broken", kind=kind.name, version=version, reason=str(exc))
            await wait_or_stop(stop, settings.list_retry)


def _relist_check(store: Store, kind: Kind, settings: WatchingSettings) -> Callable[[], bool] | None:
    """For pods: whether a bind or eviction left without an answer too long ago to wait for its echo."""
    if kind is not PODS:
        return None
    return lambda: store.awaiting_list(older_than=settings.resync_period)


async def _watch(
    client: ApiClient,
    store: Store,
    kind: Kind,
    version: int,
    *,
    settings: WatchingSettings,
    opened: Watched | None = None,
) -> int:
    """Apply `kind`'s watch events from `version` on until the server ends the stream; return the last
    version seen. The stream is `opened` (a streaming list's, past its initial events) or a new watch.
    _Expired on 410 Gone; ApiError on any other refusal or a broken stream."""
    params = {
        "watch": "true",
        "resourceVersion": str(version),
        "allowWatchBookmarks": "true",
        "timeoutSeconds": str(round(settings.watch_timeout)),
    }
    stream = opened or client.stream(kind.list_path, params=params, timeout=settings.watch_timeout + 30)
    async with contextlib.aclosing(stream):  # an early exit closes the response (and its connection) now
        version = await _follow(stream, store, kind, version)
    return version


async def _follow(stream: AsyncIterator[tuple[int, Any]], store: Store, kind: Kind, version: int) -> int:
    """Apply the events of one watch stream; return the last version seen."""
    async for status, line in stream:
        if status != 200:
            if status == GONE:
                raise _Expired()
            raise api_failure(ApiError, f"watch {kind.plural}", status=status, body=line)
        if not isinstance(line, dict) or not isinstance(line.get("object") or {}, dict):
            log.warning("watch_event_skipped", kind=kind.name, reason=f"not a watch event: {line!r:.80}")
            continue  # no API server sends one; it must not end the watch that feeds every object
        event_type, obj = line.get("type"), line.get("object") or {}
        if event_type == "ERROR":
            if obj.get("code") == GONE:
                raise _Expired()
            raise api_failure(ApiError, f"watch {kind.plural}", status=obj.get("code"), body=obj)
        if event_type != "BOOKMARK":
            await store.released()
            store.apply_event(kind, event_type, obj)
        version = resource_version(obj) or version
    return version


async def _until_stopped(
    watching: Coroutine[Any, Any, int], stop: asyncio.Event, version: int, *, relist: Callable[[], bool] | None
) -> int:
    """Run the watch until it returns, `stop` is set (then return `version`) or `relist` says a LIST is
    due, checked every `_RELIST_CHECK` seconds (then return 0)."""
    task = asyncio.ensure_future(watching)
    stopped = asyncio.ensure_future(stop.wait())
    try:
        while True:
            await asyncio.wait({task, stopped}, timeout=_RELIST_CHECK, return_when=asyncio.FIRST_COMPLETED)
            if task.done():
                result: int = task.result()
                return result
            if stopped.done():
                return version
            if relist is not None and relist():
                return 0
    finally:
        stopped.cancel()
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
