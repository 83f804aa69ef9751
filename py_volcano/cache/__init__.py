"""The cache: the async API client, the watched store of cluster objects, binds, evictions, leases, status."""

from py_volcano.cache.binder import ApplyReport, Binder
from py_volcano.cache.client import ApiClient, Credentials, api_failure, load_credentials, status_message
from py_volcano.cache.informer import INFORMED_KINDS, inform
from py_volcano.cache.leader import LeaderElector
from py_volcano.cache.status import StatusWriter
from py_volcano.cache.store import KINDS, QUEUES, Kind, Store
from py_volcano.cache.watchers import KOPF_KINDS, resync, wait_or_stop, watch

__all__ = [
    "INFORMED_KINDS",
    "KINDS",
    "KOPF_KINDS",
    "QUEUES",
    "ApiClient",
    "ApplyReport",
    "Binder",
    "Credentials",
    "Kind",
    "LeaderElector",
    "StatusWriter",
    "Store",
    "api_failure",
    "inform",
    "load_credentials",
    "resync",
    "status_message",
    "wait_or_stop",
    "watch",
]
