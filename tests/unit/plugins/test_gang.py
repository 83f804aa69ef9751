"""gang's job pipelined vote (docs/semantics.md, "minMember and minTaskMember"), as Volcano's pipelinedFn."""

from __future__ import annotations

import pytest

from py_volcano.api import Resource, TaskID, TaskInfo, TaskStatus, Vote
from py_volcano.api.job_info import JobInfo, PodGroupSpec
from py_volcano.plugins.gang import job_pipelined

P, PL, A = TaskStatus.PENDING, TaskStatus.PIPELINED, TaskStatus.ALLOCATED


def _job(min_member: int, roles: dict[str, int], *tasks: tuple[str, TaskStatus, bool]) -> JobInfo:
    """A job with one task per (role, status, best effort); a task that is not best-effort asks 1 CPU."""
    job = JobInfo(
        PodGroupSpec(name="pg", namespace="ns", queue="default", min_member=min_member, min_task_member=roles)
    )
    for i, (role, status, best_effort) in enumerate(tasks):
        request = Resource() if best_effort else Resource(milli_cpu=1000)
        job.add_task(
            TaskInfo(
                uid=TaskID(f"u{i}"),
                name=f"pg-{role or 'w'}-{i}",
                namespace="ns",
                resreq=request,
                status=status,
                role=role,
            )
        )
    return job


@pytest.mark.parametrize(
    ("job", "vote"),
    [
        pytest.param(_job(2, {}, ("", PL, False), ("", P, True)), Vote.PERMIT, id="pipelined-and-pending-best-effort"),
        pytest.param(_job(2, {}, ("", PL, False), ("", P, False)), Vote.REJECT, id="pending-task-that-requests"),
        pytest.param(_job(2, {}, ("", A, False), ("", PL, False)), Vote.PERMIT, id="ready-and-pipelined"),
        pytest.param(_job(3, {}, ("", PL, False), ("", P, True)), Vote.REJECT, id="one-short"),
        pytest.param(_job(2, {"ps": 1, "worker": 1}, ("ps", PL, False), ("worker", P, True)), Vote.PERMIT,
                     id="role-met-by-its-pending-best-effort-task"),
        pytest.param(_job(2, {"ps": 1, "worker": 1}, ("ps", PL, False), ("ps", P, True), ("worker", P, False)),
                     Vote.REJECT, id="role-short-although-the-job-counts-enough"),
    ],
)  # fmt: skip
def test_job_pipelined_counts_pending_best_effort_tasks(job: JobInfo, vote: Vote) -> None:
    """Volcano's gang pipelinedFn: CheckTaskPipelined and IsPipelined, both counting pending best-effort tasks."""
    assert job_pipelined(job) is vote
