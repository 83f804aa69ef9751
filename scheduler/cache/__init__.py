"""The cache: the async API client, the watched store of cluster objects, binds, evictions, leases, status."""

from scheduler.cache.binder import ApplyReport, Binder
from scheduler.cache.client import ApiClient, Credentials, api_failure, load_credentials, status_message
from scheduler.cache.leader import LeaderElector
from scheduler.cache.status import StatusWriter
from scheduler.cache.store import KINDS, QUEUES, Kind, Store
from scheduler.cache.watchers import resync, wait_or_stop, watch

__all__ = [
    "KINDS",
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
    "load_credentials",
    "resync",
    "status_message",
    "wait_or_stop",
    "watch",
]
