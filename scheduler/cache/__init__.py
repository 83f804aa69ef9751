"""The cache: the async API client, the watched store of cluster objects, binds, evictions, leases."""

from scheduler.cache.client import ApiClient, Credentials, api_failure, load_credentials, status_message

__all__ = ["ApiClient", "Credentials", "api_failure", "load_credentials", "status_message"]
