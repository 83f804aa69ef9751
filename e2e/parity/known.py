"""Scenarios whose decisions differ from vc-scheduler's for a documented reason (docs/semantics.md,
"Deliberate differences from Volcano"; docs/parity.md, "Differences found").

* `DELIBERATE`: py-volcano decides otherwise on purpose; the parity test is an expected failure
  (strict: a scenario that starts to agree must leave this table).
* `UNPLAYABLE`: the harness cannot give vc-scheduler what the scenario models reliably; an expected
  failure that may pass (when vc-scheduler happens to see what the scenario models).
* `RANDOM_TIES`: Volcano breaks a tie at random (equal-score nodes, or which pod of a job gang offers
  as a victim), py-volcano takes the first; the two are compared up to that choice (`loosen`).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

__all__ = ["DELIBERATE", "RANDOM_TIES", "UNPLAYABLE", "job_of", "loosen"]

_NON_LEAF_OR_CYCLE = "hierarchical capacity: Volcano turns the plugin off for the cycle, py-volcano holds the bad job"

#: Scenario name -> why py-volcano decides otherwise on purpose.
DELIBERATE: dict[str, str] = {
    "overcommitted-node-wedges-no-queue": "overcommitted nodes: the cluster total counts max(allocatable, used)",
    "capacity-hierarchy-cycle-waits-rest-scheduled": _NON_LEAF_OR_CYCLE,
    "capacity-hierarchy-nonleaf-queue-rejected": _NON_LEAF_OR_CYCLE,
    "preempt-pdb-steers-victim": "PodDisruptionBudgets: Volcano's preempt ignores them and deletes web-0",
    "reclaim-pdb-counts-planned-evictions": "PodDisruptionBudgets steer reclaim victims without the pdb plugin",
    "preempt-conformance-holds-when-a-tier-defers": "conformance under tier rules: an empty tier 1 defers to drf",
    "rescheduling-low-node-utilization": "rescheduling measures use by requests; Volcano reads metrics (none here)",
}

#: Scenario name -> the tie Volcano breaks at random there.
RANDOM_TIES: dict[str, str] = {
    "capacity-guarantee-keeps-room-for-idle-queue": "no node score runs: every node ties for every pod",
    "capacity-hierarchy": "training-job-0 and training-job-4 score the same on both nodes",
    "nodeorder-least-requested-spreads": "the empty nodes tie for each pod",
    "drf-hierarchy-reclaims-from-the-richer-queue": "gang offers one of job-c's two pods on node-1",
    "preempt-high-priority-same-queue": "gang offers one of low-job's two pods on node-1 (Go map order)",
    "network-topology-hard-gang-waits-when-no-tier-allowed-holds-it": "agg-0 and agg-1 tie for the wide gang, "
    "and the empty nodes inside it tie for its first pods",
    # agreed in the first 2026-11-26 run, differed in the second: vc-scheduler chose otherwise between runs
    "network-topology-soft-mode-prefers-lowest-tier": "the leaf hypernodes tie for the soft gang",
    "predicates-pod-anti-affinity-spreads-gang": "node-2 and node-3 tie for mpi-1 and mpi-2",
    "preempt-policy-never-skips": "gang offers one of low-job's pods on node-1 (Go map order)",
    "preempt-pipelines-without-victims-where-room-was-freed": "either of job-3's pods may go (equal priority, "
    "created in the same second: Volcano orders them by random UID)",
    "proportion-deserved-in-floating-point-stops-short": "node-1 and node-2 tie for job-2-0 (2 of 4 CPUs used on each)",
    # agreed in the first two runs, differed in the third (2026-11-26, 18:10 UTC)
    "network-topology-hard-gang-stays-in-one-leaf": "node-2 and node-3 of the leaf tie for train-1 and train-2",
    "task-topology-pairs-ps-with-workers": "n0 and n1 tie for the first ps/worker pair (mirror placements)",
    "preempt-empty-intersection-restarts-the-tier": "either of job-2's pods may go (Go map order, then UID)",
    "gang-losing-a-running-task-is-unknown": "either of train's two running pods may go (equal priority, "
    "created in the same second: Volcano orders them by random UID)",
}

#: Scenario name -> what the harness cannot give vc-scheduler there (a strict expected failure too).
UNPLAYABLE: dict[str, str] = {
    name: "vc-scheduler builds a node's devices only on a node update after its first session, and kwok "
    "nodes are not updated: it sees no GPU cards"
    for name in (
        "deviceshare-gpu-memory-decides-node",
        "deviceshare-gpu-number-idle-cards",
        "deviceshare-vgpu-memory-per-card",
    )
}

GROUP_ANNOTATION = "scheduling.k8s.io/group-name"


def job_of(objects: list[dict[str, Any]]) -> dict[str, str]:
    """Map each pod's scenario key (`ns/name`) to its job: its PodGroup's key, else its own."""
    jobs: dict[str, str] = {}
    for obj in objects:
        if obj["kind"] != "Pod":
            continue
        meta = obj["metadata"]
        namespace = meta.get("namespace") or "default"
        group = (meta.get("annotations") or {}).get(GROUP_ANNOTATION)
        jobs[f"{namespace}/{meta['name']}"] = f"{namespace}/{group or meta['name']}"
    return jobs


def loosen(binds: dict[str, str], evictions: list[str], jobs: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """Return decisions up to a random tie: binds as `job xN` counts on node `*`, evictions as `job xN`
    counts (a pod bound in one cycle and evicted in the next is gone, so which pod of a job stays bound
    is part of the tie too)."""
    bound = Counter(jobs.get(key, key) for key in binds)
    counts = Counter(jobs.get(key, key) for key in evictions)
    return (
        {f"{job} x{count}": "*" for job, count in bound.items()},
        sorted(f"{job} x{count}" for job, count in counts.items()),
    )
