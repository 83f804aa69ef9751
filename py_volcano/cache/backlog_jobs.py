"""The store's backlog: which backed-off jobs a snapshot may take as they were built for an earlier one.

A job qualifies when the runner backs it off for the coming cycle, every one of its tasks is pending, its
queue exists, and every pod in the listing that names it is one of its tasks. Its entry holds the parsed
objects it was built from (its PodGroup as the snapshot saw it, its one-pod group's phase, its pods);
the next snapshot takes the job as it is only while these are the very same objects: the store
replaces a parsed object whenever anything in it changes (a priority class change re-parses every pod),
so the same objects build the same job. Anything else rebuilds it. A change of configuration (`token`)
empties the backlog, as its statuses were decided under the old one.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from py_volcano.api import (
    DEFAULT_QUEUE,
    Backlog,
    ClusterInfo,
    JobID,
    ParsedPod,
    PodGroupPhase,
    PodGroupSpec,
    QueueInfo,
)

__all__ = ["BacklogKeeper"]

#: Per candidate job: its PodGroup (None for a pod without one), its one-pod group's phase, its pods.
Inputs = dict[JobID, list[object]]


class BacklogKeeper:
    """Keeps the backlog between snapshots: `prepare` before building one, `admit` after."""

    __slots__ = ("backlog",)

    def __init__(self) -> None:
        self.backlog = Backlog()

    def prepare(
        self,
        candidates: Collection[JobID],
        *,
        token: object,
        pods: Iterable[ParsedPod],
        groups: Iterable[PodGroupSpec],
        queues: Iterable[QueueInfo],
        shadow_phases: Mapping[JobID, PodGroupPhase],
    ) -> tuple[Backlog, Inputs]:
        """Keep the entries a snapshot over these objects may share; return the backlog and the inputs of
        every candidate job (for `admit`)."""
        if token is not self.backlog.token:
            self.backlog = Backlog(token)
        backlog = self.backlog
        if not candidates:
            backlog.keep_only(frozenset())
            return backlog, {}
        inputs: Inputs = {}
        for spec in groups:
            if spec.key in candidates:
                inputs[spec.key] = [spec, None]
        for pod in pods:
            job = pod.job_id
            if job in candidates:
                objects = inputs.get(job)
                if objects is None:
                    objects = inputs[job] = [None, shadow_phases.get(job)]
                objects.append(pod)
        queue_ids = {queue.uid for queue in queues} | {DEFAULT_QUEUE}
        for job, entry in list(backlog.entries.items()):
            current = inputs.get(job)
            if current is None or entry.job.queue not in queue_ids or not _same(entry.inputs, current):
                backlog.drop(job)
        return backlog, inputs

    def admit(self, cluster: ClusterInfo, inputs: Inputs) -> None:
        """Add the candidate jobs `cluster` built afresh that qualify (built from their inputs alone)."""
        backlog = self.backlog
        shared = backlog.entries
        for job_id, objects in inputs.items():
            if job_id in shared:
                continue
            job = cluster.jobs.get(job_id)
            if (
                job is not None
                and job.queue in cluster.queues
                and len(job.tasks) == len(objects) - 2  # no pod of another scheduler names it
                and Backlog.admits(job)
            ):
                backlog.add(job, tuple(objects))


def _same(before: tuple[object, ...], now: list[object]) -> bool:
    """Whether the job's inputs are the objects it was built from (a tuple compares items by identity
    first; parsed pods compare their tasks by identity, so different objects never count as the same)."""
    return before == tuple(now)
