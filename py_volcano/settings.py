"""Runtime settings of `py-volcano run`, grouped by concern; the CLI builds them, everything else reads them.

Nothing below the CLI reads the environment or the command line: a component gets its group passed in.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

__all__ = [
    "BackoffSettings",
    "BindingSettings",
    "ControllerSettings",
    "CycleSettings",
    "LeaderSettings",
    "MetricsSettings",
    "Settings",
    "ShardSettings",
    "WatchingSettings",
]


@dataclass(slots=True, frozen=True)
class WatchingSettings:
    """How the store follows the cluster."""

    resync_period: float = 30.0
    """Seconds between two full LISTs of each kind kopf watches (Queues, PodGroups, priority classes,
    PDBs), which repair what kopf's re-listing hides (a DELETE lost across a 410 Gone leaves a ghost).
    Also how long a bind or eviction that got no answer waits for its echo before pods are LISTed again
    to learn whether it happened. Pods and nodes need no periodic LIST (see informer)."""

    watch_settle: float = 5.0
    """Seconds after the first LIST of a kopf-watched kind to LIST it again when its watch has shown
    nothing yet. The second LIST closes the gap between our first LIST and kopf's (see watchers); it
    normally runs as soon as kopf delivers the kind's first event, this bounds the wait for empty kinds."""

    list_page_size: int = 500
    """Objects per page of a LIST (`limit`), and per batch of a streaming list's initial events; each is
    reconciled as it arrives, so memory stays flat on large clusters."""

    list_retry: float = 2.0
    """Seconds to wait before retrying a LIST that failed (API server down, not yet served)."""

    watch_timeout: float = 300.0
    """Seconds a watch request lasts before the API server ends it and it is re-opened from the last
    version seen; a stream that delivers nothing for this long plus 30 s counts as broken."""


@dataclass(slots=True, frozen=True)
class CycleSettings:
    """What a scheduling cycle runs with and how often."""

    scheduler_name: str = "py-volcano"
    """Only pods whose `spec.schedulerName` is this are scheduled; all pods count towards node usage."""

    schedule_period: float = 1.0
    """Seconds between the starts of two cycles at most, while something is due (a cycle longer than this
    is followed at once)."""

    min_cycle_gap: float = 0.1
    """Seconds between the starts of two cycles at least: new pending work (an unbound pod of ours, a
    changed PodGroup) starts a cycle this soon after the last one began instead of at the next period."""

    fast_path: bool = True
    """Place pods without a PodGroup that arrive between cycles in the last cycle's session, kept open,
    as they arrive (`actions.arrivals`); off, every pod waits for a cycle."""

    scheduler_conf: Path | None = None
    """The `volcano-scheduler.conf` file, None for the packaged default; re-read when it changes."""

    cycles: int | None = None
    """Exit after this many cycles (tests, e2e); None runs until stopped. With a bound, each cycle waits
    until the previous one's binds and evictions are observed in the store (docs/scenarios.md, "Between cycles")."""

    clock_start: datetime | None = None
    """The wall-clock time (timezone-aware) the scheduler takes as its start, time advancing from there
    with the real clock; None reads the real clock. For tests and what-if runs of plugins that read time
    (tdm's revocable zones, rescheduling's interval)."""

    nodes_to_find: tuple[int, int, int] = (100, 5, 0)
    """How many feasible nodes a task's search stops at: Volcano's `--minimum-feasible-nodes`,
    `--minimum-percentage-nodes-to-find` and `--percentage-nodes-to-find` (`framework.NodesToFind`)."""

    observe_timeout: float = 30.0
    """Seconds a bounded run waits for a cycle's binds and evictions to be observed before going on."""


@dataclass(slots=True, frozen=True)
class BackoffSettings:
    """How long a job the cycle could not place stays out of the cycles (kube-scheduler's scheduling queue;
    docs/semantics.md, "Backoff of unschedulable jobs")."""

    initial: float = 1.0
    """Seconds a job waits after its first failure before it may be tried again (kube-scheduler's
    podInitialBackoffSeconds); each further failure doubles it."""

    maximum: float = 10.0
    """The longest backoff, seconds (kube-scheduler's podMaxBackoffSeconds)."""

    flush_after: float = 300.0
    """Seconds after its last failure that a job is tried again though no change woke it (kube-scheduler's
    podMaxInUnschedulablePodsDuration), in case what it waits for is not a change the store reports."""


@dataclass(slots=True, frozen=True)
class BindingSettings:
    """How decisions reach the API server."""

    concurrency: int = 128
    """Binds and evictions in flight at once; the API client's pool has a few more connections for Lease,
    status and LIST traffic, so those never queue behind a burst of binds. Volcano and kube-scheduler
    send each bind from its own goroutine (no bound but their client's rate limit): with too few in
    flight, binds queue here while pod creation takes the API server (docs/performance.md, "Binds in
    flight")."""

    request_timeout: float = 30.0
    """Seconds one API request may take before it counts as failed."""


@dataclass(slots=True, frozen=True)
class MetricsSettings:
    """The HTTP endpoints: /healthz and /readyz in plain HTTP, /metrics in plain HTTP or behind TLS and
    delegated authentication and authorization (docs/operations.md, "Scraping /metrics")."""

    listen_address: str = "127.0.0.1:8080"
    """`host:port` of the plain endpoint: /healthz, /readyz, and /metrics unless served securely. Loopback
    by default, so a scheduler started by hand exposes nothing; the chart listens on every interface for
    the kubelet's probes."""

    secure_listen_address: str | None = None
    """`host:port` where /metrics is served over HTTPS, each request's bearer token checked with a
    TokenReview and its user with a SubjectAccessReview; None serves /metrics on `listen_address`."""

    tls_cert_file: Path | None = None
    """PEM certificate (chain) of the secure endpoint, re-read when it changes; None with `tls_key_file`
    None: a self-signed certificate made at start, kept in memory."""

    tls_key_file: Path | None = None
    """PEM private key of `tls_cert_file`."""


@dataclass(slots=True, frozen=True)
class LeaderSettings:
    """Leader election on a `coordination.k8s.io/v1` Lease (client-go's timings)."""

    enabled: bool = True
    """Whether to elect a leader; without it this instance schedules alone."""

    namespace: str = "default"
    """Namespace of the Lease."""

    lease_name: str = "py-volcano"
    """Name of the Lease."""

    lease_duration: float = 15.0
    """Seconds a Lease stays held without renewal; a standby takes over this long after the last renewal."""

    renew_deadline: float = 10.0
    """Seconds a leader keeps acting without a successful renewal; then it stops binding at once. Shorter
    than the lease duration, so a leader has stopped before anyone may take over."""

    retry_period: float = 2.0
    """Seconds between two renewals (leader) or two looks at the Lease (standby)."""

    identity: str = ""
    """This instance's holderIdentity; empty means `<hostname>_<random>`."""


@dataclass(slots=True, frozen=True)
class ControllerSettings:
    """The PodGroup controller run beside the scheduler."""

    enabled: bool = True
    """Whether to give every pod of this scheduler without a group annotation a PodGroup per workload, as
    Volcano's podgroup controller does; off, such pods are one-pod jobs."""


@dataclass(slots=True, frozen=True)
class ShardSettings:
    """Which nodes this instance places pods on (Volcano's node sharding; docs/operations.md, "Shards")."""

    mode: str = "none"
    """`none`: every node; `hard`: only the nodes NodeShard `name` lists in `spec.nodesDesired`."""

    name: str = "py-volcano"
    """The NodeShard this instance owns (Volcano's `--scheduler-sharding-name`)."""

    period: float = 5.0
    """Seconds between two reads of the NodeShard: how soon a change of its nodes takes effect."""

    takeover: float = 5.0
    """Seconds a pending job another shard instance owns waits before this instance may place it."""


@dataclass(slots=True, frozen=True)
class Settings:
    """Everything `py-volcano run` is configured with."""

    kubeconfig: str | None = None
    """Path of a kubeconfig; None tries in-cluster config, then $KUBECONFIG / ~/.kube/config."""

    watching: WatchingSettings = field(default_factory=WatchingSettings)
    cycle: CycleSettings = field(default_factory=CycleSettings)
    backoff: BackoffSettings = field(default_factory=BackoffSettings)
    binding: BindingSettings = field(default_factory=BindingSettings)
    metrics: MetricsSettings = field(default_factory=MetricsSettings)
    leader: LeaderSettings = field(default_factory=LeaderSettings)
    controller: ControllerSettings = field(default_factory=ControllerSettings)
    shard: ShardSettings = field(default_factory=ShardSettings)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Settings:
        """Build settings from parsed `py-volcano run` arguments."""
        return cls(
            kubeconfig=args.kubeconfig,
            cycle=CycleSettings(
                scheduler_name=args.scheduler_name,
                schedule_period=args.schedule_period,
                min_cycle_gap=min(args.min_cycle_gap, args.schedule_period),
                fast_path=args.fast_path,
                scheduler_conf=Path(args.scheduler_conf) if args.scheduler_conf else None,
                cycles=args.cycles,
                clock_start=args.clock_start,
                nodes_to_find=(
                    args.minimum_feasible_nodes,
                    args.minimum_percentage_nodes_to_find,
                    args.percentage_nodes_to_find,
                ),
            ),
            backoff=BackoffSettings(
                initial=args.pod_initial_backoff_seconds,
                maximum=args.pod_max_backoff_seconds,
                flush_after=args.pod_max_unschedulable_seconds,
            ),
            binding=BindingSettings(concurrency=args.bind_concurrency),
            metrics=MetricsSettings(
                listen_address=args.listen_address,
                secure_listen_address=args.secure_listen_address,
                tls_cert_file=Path(args.tls_cert_file) if args.tls_cert_file else None,
                tls_key_file=Path(args.tls_private_key_file) if args.tls_private_key_file else None,
            ),
            leader=LeaderSettings(
                enabled=args.leader_elect,
                namespace=args.leader_elect_namespace,
                lease_name=args.leader_elect_lease_name,
            ),
            controller=ControllerSettings(enabled=args.podgroup_controller),
            shard=ShardSettings(
                mode=args.scheduler_sharding_mode,
                name=args.scheduler_sharding_name,
                takeover=args.scheduler_sharding_takeover_seconds,
            ),
        )
