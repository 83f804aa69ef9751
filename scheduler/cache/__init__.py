"""The cache: the async API client, the watched store of cluster objects, binds, evictions, leases, status."""

from scheduler.cache.binder import ApplyReport, Binder
from scheduler.cache.client import ApiClient, Credentials, api_failure, load_credentials, status_message
from scheduler.cache.informer import INFORMED_KINDS, inform
from scheduler.cache.leader import LeaderElector
from scheduler.cache.status import StatusWriter
from scheduler.cache.store import KINDS, QUEUES, Kind, Store
from scheduler.cache.watchers import KOPF_KINDS, resync, wait_or_stop, watch

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
