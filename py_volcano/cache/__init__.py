"""The cache: the async API client, the watched store of cluster objects, binds, evictions, leases, status.

The store (pure memory) loads with the package; the IO modules (aiohttp, kopf, the kubernetes client)
and the runner's backoff load when one of their names is first used, so the simulator feeds a `Store`
without them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from py_volcano.cache.store import KINDS, QUEUES, Kind, Store

if TYPE_CHECKING:
    from py_volcano.cache.backoff import Backoff
    from py_volcano.cache.binder import ApplyReport, Binder, DecisionStream
    from py_volcano.cache.client import ApiClient, Credentials, api_failure, load_credentials, status_message
    from py_volcano.cache.collector import collector_paused
    from py_volcano.cache.informer import INFORMED_KINDS, inform
    from py_volcano.cache.leader import LeaderElector
    from py_volcano.cache.node_usage import NodeUsagePoller
    from py_volcano.cache.reviews import AccessReviewer
    from py_volcano.cache.shards import NodeShardPoller, PendingShares, sync_node_shards
    from py_volcano.cache.status import StatusWriter
    from py_volcano.cache.watchers import KOPF_KINDS, resync, watch

__all__ = [
    "INFORMED_KINDS",
    "KINDS",
    "KOPF_KINDS",
    "QUEUES",
    "AccessReviewer",
    "ApiClient",
    "ApplyReport",
    "Backoff",
    "Binder",
    "Credentials",
    "DecisionStream",
    "Kind",
    "LeaderElector",
    "NodeShardPoller",
    "NodeUsagePoller",
    "PendingShares",
    "StatusWriter",
    "Store",
    "api_failure",
    "collector_paused",
    "inform",
    "load_credentials",
    "resync",
    "status_message",
    "sync_node_shards",
    "watch",
]

#: Where each IO name lives, loaded on first use.
_IO_MODULES = {
    "Backoff": "backoff",
    "ApplyReport": "binder",
    "Binder": "binder",
    "DecisionStream": "binder",
    "ApiClient": "client",
    "Credentials": "client",
    "api_failure": "client",
    "load_credentials": "client",
    "status_message": "client",
    "collector_paused": "collector",
    "INFORMED_KINDS": "informer",
    "inform": "informer",
    "LeaderElector": "leader",
    "AccessReviewer": "reviews",
    "NodeUsagePoller": "node_usage",
    "NodeShardPoller": "shards",
    "PendingShares": "shards",
    "sync_node_shards": "shards",
    "StatusWriter": "status",
    "KOPF_KINDS": "watchers",
    "resync": "watchers",
    "watch": "watchers",
}


def __getattr__(name: str) -> Any:
    module = _IO_MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
