"""Feeding the store with the low-volume kinds: kopf `on.event` handlers for low latency, periodic LISTs
for truth.

kopf streams priority classes, Queues, PodGroups, PodDisruptionBudgets, ResourceQuotas, HyperNodes and Numatopologies
(pods and nodes, whose events come by the thousand, go through `informer.py`); each handler turns one
event into a store update and returns. The PodGroup controller adds its watches of the workload kinds to the same kopf
(`extensions`). kopf re-lists after a broken watch or a 410 Gone, but never reports what vanished meanwhile, so
`resync` LISTs each kind and the store drops what the LIST no longer shows: at start (`Store.is_synced`,
which the first cycle waits for), again once kopf's own initial listing of the kind is in, then every
`resync_period`.

Why again: an object deleted between our first LIST and kopf's would stay a ghost (kopf never saw
it, so no DELETE comes). kopf hands out listing events only once its LIST is over, so the first event
of a kind means the next LIST closes that gap; a kind that shows no event within `watch_settle` is
LISTed then anyway. (kopf's index gate, which would signal "every kind listed", costs ~5 ms per
object at startup.)

kopf runs embedded and leaves no trace on others' objects: no finalizers (event handlers only), no
progress or diff-base annotations (in-memory no-op storages, and no diff base even built: event handlers
need none), no peering objects (standalone), no Kubernetes events about handlers (posting off).
"""

from __future__ import annotations

import asyncio
import base64
import logging
import signal
from collections.abc import Callable, Sequence
from typing import Any

import kopf
import structlog

from py_volcano.aio import wait_any, wait_or_stop
from py_volcano.cache.client import ApiClient, Credentials
from py_volcano.cache.listing import relist
from py_volcano.cache.store import (
    HYPER_NODES,
    NUMATOPOLOGIES,
    PDBS,
    POD_GROUPS,
    PRIORITY_CLASSES,
    QUEUES,
    RESOURCE_QUOTAS,
    Kind,
    Store,
)
from py_volcano.settings import WatchingSettings

__all__ = ["KOPF_KINDS", "build_registry", "resync", "watch"]

#: The kinds kopf watches: few objects, rare changes.
KOPF_KINDS: tuple[Kind, ...] = (
    PRIORITY_CLASSES,
    QUEUES,
    POD_GROUPS,
    PDBS,
    RESOURCE_QUOTAS,
    HYPER_NODES,
    NUMATOPOLOGIES,
)

log = structlog.get_logger(__name__)


class NoProgressStorage(kopf.ProgressStorage):
    """Store no handler progress anywhere: event handlers have none, and others' objects stay untouched."""

    def fetch(self, **_: Any) -> None:
        return None

    def store(self, **_: Any) -> None:
        return None

    def purge(self, **_: Any) -> None:
        return None

    def touch(self, **_: Any) -> None:
        return None

    def clear(self, *, essence: Any) -> Any:
        return essence


class NoDiffBaseStorage(kopf.DiffBaseStorage):
    """Keep no last-handled configuration, and build none: there are no change handlers to diff for
    (kopf builds one per event otherwise, a deep copy of the whole object)."""

    def build(self, **_: Any) -> None:  # type: ignore[override]
        return None

    def fetch(self, **_: Any) -> None:
        return None

    def store(self, **_: Any) -> None:
        return None


def _connection_info(credentials: Credentials) -> kopf.ConnectionInfo:
    scheme, token, username, password = None, None, None, None
    if credentials.authorization:
        scheme, _, token = credentials.authorization.partition(" ")
        if scheme == "Basic":
            username, _, password = base64.b64decode(token).decode().partition(":")
            scheme, token = None, None
    return kopf.ConnectionInfo(
        server=credentials.server,
        ca_path=credentials.ca_path,
        insecure=not credentials.verify,
        certificate_path=credentials.cert_path,
        private_key_path=credentials.key_path,
        scheme=scheme,
        token=token,
        username=username,
        password=password,
        default_namespace=credentials.default_namespace,
    )


def build_registry(
    store: Store,
    credentials: Credentials,
    watching: WatchingSettings,
    *,
    extensions: Sequence[Callable[[kopf.OperatorRegistry], None]] = (),
) -> kopf.OperatorRegistry:
    """Return a fresh kopf registry: one startup handler, one login handler, one event handler per kind,
    and what each of `extensions` adds (the PodGroup controller's watches)."""
    registry = kopf.OperatorRegistry()

    @kopf.on.startup(registry=registry)
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.peering.standalone = True
        settings.peering.mandatory = False
        settings.posting.enabled = False
        settings.persistence.progress_storage = NoProgressStorage()
        settings.persistence.diffbase_storage = NoDiffBaseStorage()
        settings.watching.server_timeout = round(watching.watch_timeout)
        settings.watching.client_timeout = watching.watch_timeout + 30
        settings.watching.connect_timeout = 10
        settings.watching.reconnect_backoff = 1.0
        settings.networking.request_timeout = 60
        settings.process.ultimate_exiting_timeout = None

    @kopf.on.login(registry=registry)
    async def login(**_: Any) -> kopf.ConnectionInfo:
        await asyncio.to_thread(credentials.refresh)
        return _connection_info(credentials)

    for kind in KOPF_KINDS:
        kopf.on.event(
            group=kind.group,
            version=kind.version,
            plural=kind.plural,
            registry=registry,
            id=f"watch-{kind.plural}",
        )(_event_handler(store, kind))
    for extend in extensions:
        extend(registry)
    return registry


def _event_handler(store: Store, kind: Kind) -> Callable[..., Any]:
    async def on_event(event: kopf.RawEvent, **_: Any) -> None:
        store.watched[kind.name].set()
        store.apply_event(kind, event.get("type"), event["object"])

    return on_event


async def watch(
    store: Store,
    credentials: Credentials,
    *,
    settings: WatchingSettings,
    stop: asyncio.Event,
    on_signal: Callable[[signal.Signals], None] | None = None,
    extensions: Sequence[Callable[[kopf.OperatorRegistry], None]] = (),
) -> None:
    """Run kopf's watch streams into `store` (and `extensions`' handlers, see `build_registry`) until
    `stop` is set.

    kopf installs its own SIGINT/SIGTERM handlers; `on_signal` takes them back, so a signal reaches
    the runner (which stops kopf last, through `stop`). Tasks that exist before kopf starts are not
    kopf's to cancel when it exits.
    """
    for name in ("kopf", "kopf.objects"):
        logging.getLogger(name).setLevel(max(logging.getLogger().level, logging.WARNING))
    ignored = asyncio.all_tasks()
    tasks = await kopf.spawn_tasks(
        registry=build_registry(store, credentials, settings, extensions=extensions),
        clusterwide=True,
        stop_flag=stop,
    )
    if on_signal is not None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, on_signal, sig)
    await kopf.run_tasks(tasks, ignored=ignored)


async def resync(
    client: ApiClient, store: Store, kind: Kind, *, settings: WatchingSettings, stop: asyncio.Event
) -> None:
    """LIST `kind` now, again once kopf's watch has listed it (or after `watch_settle`), then every
    `resync_period`, reconciling the store each time, until `stop` is set."""
    while not stop.is_set() and not await relist(client, store, kind, page_size=settings.list_page_size):
        await wait_or_stop(stop, settings.list_retry)
    await wait_any(store.watched[kind.name], stop, timeout=settings.watch_settle)
    while not stop.is_set():
        ok = await relist(client, store, kind, page_size=settings.list_page_size)
        await wait_or_stop(stop, settings.resync_period if ok else settings.list_retry)
