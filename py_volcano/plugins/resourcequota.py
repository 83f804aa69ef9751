"""resourcequota: admit a job only while its minResources fit its namespace's ResourceQuotas (Volcano's
resourcequota).

For each ResourceQuota of the job's namespace (its `status.hard` and `status.used`), the names of the
PodGroup's `minResources` that the quota limits must satisfy `used + admitted in this cycle + request <=
hard`; otherwise the job is rejected at enqueue (`resource quota insufficient, ...`). Names are compared
as written: a quota on `requests.cpu` limits a `minResources` entry `requests.cpu`, not `cpu`. A job
without minResources, or in a namespace without quotas, is permitted. docs/plugins.md, "resourcequota".
"""

from __future__ import annotations

from py_volcano.api import JobInfo, ResourceQuotaSpec, Vote
from py_volcano.framework import NoArgs, Session

__all__ = ["NAME", "ResourceQuotaPlugin", "new"]

NAME = "resourcequota"


def _show(amounts: dict[str, float]) -> str:
    return "{" + ", ".join(f"{name}: {amounts[name]:g}" for name in sorted(amounts)) + "}"


class ResourceQuotaPlugin:
    """Enqueue admission against the namespace's ResourceQuotas."""

    name = NAME

    def __init__(self, args: NoArgs) -> None:
        self.args = args
        self.quotas: dict[str, list[ResourceQuotaSpec]] = {}
        self.pending: dict[str, dict[str, float]] = {}

    def on_session_open(self, ssn: Session) -> None:
        """Group the quotas by namespace; register job enqueueable and enqueued."""
        self.quotas, self.pending = {}, {}
        for quota in ssn.resource_quotas:
            self.quotas.setdefault(quota.namespace, []).append(quota)
        ssn.add_job_enqueueable_fn(NAME, self.enqueueable)
        ssn.add_job_enqueued_fn(NAME, self.enqueued)

    def on_session_close(self, ssn: Session) -> None:
        """Drop the session state."""
        self.quotas, self.pending = {}, {}

    def enqueueable(self, job: JobInfo) -> Vote:
        """Permit when every quota of the namespace holds the job's minResources; else reject, saying which."""
        quotas = self.quotas.get(job.namespace)
        if job.min_resources is None or not quotas:
            return Vote.PERMIT
        wanted = job.pod_group.min_resource_list
        pending = self.pending.get(job.namespace, {})
        for quota in quotas:
            request = {name: value for name, value in wanted.items() if name in quota.hard}
            exceeded = [
                name
                for name, value in request.items()
                if quota.used.get(name, 0.0) + pending.get(name, 0.0) + value > quota.hard[name] * (1 + 1e-12)
            ]
            if exceeded:
                job.job_fit_error = (
                    f"resource quota insufficient, requested: {_show({n: request[n] for n in exceeded})}, "
                    f"used: {_show({n: quota.used.get(n, 0.0) for n in exceeded})}, "
                    f"limited: {_show({n: quota.hard[n] for n in exceeded})}"
                )
                return Vote.REJECT
        return Vote.PERMIT

    def enqueued(self, job: JobInfo) -> None:
        """Count an admitted job's minResources against its namespace for the rest of the cycle."""
        if job.min_resources is None or job.namespace not in self.quotas:
            return
        pending = self.pending.setdefault(job.namespace, {})
        for name, value in job.pod_group.min_resource_list.items():
            pending[name] = pending.get(name, 0.0) + value


def new(args: NoArgs) -> ResourceQuotaPlugin:
    """Build the plugin."""
    return ResourceQuotaPlugin(args)
