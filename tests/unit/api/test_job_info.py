"""TaskInfo and JobInfo bookkeeping that the snapshot relies on."""

from __future__ import annotations

from py_volcano.api import Resource, TaskID, TaskInfo, TaskStatus
from py_volcano.api.job_info import JobInfo, PodGroupSpec


def _task(**overrides: object) -> TaskInfo:
    return TaskInfo(uid=TaskID("u1"), name="w-3", namespace="ns", resreq=Resource(milli_cpu=500), **overrides)  # type: ignore[arg-type]


def test_clone_copies_every_slot_and_status_changes_stay_with_the_copy() -> None:
    """A slot added to TaskInfo but forgotten in clone() fails here."""
    original = _task(node_name="n1", status=TaskStatus.RUNNING, priority=7, labels={"a": "b"}, role="worker")
    copy = original.clone()
    for slot in TaskInfo.__slots__:
        assert getattr(copy, slot) is getattr(original, slot), slot
    copy.status, copy.node_name = TaskStatus.RELEASING, ""
    assert (original.status, original.node_name) == (TaskStatus.RUNNING, "n1")


def test_count_over_one_or_many_statuses() -> None:
    job = JobInfo(PodGroupSpec(name="pg", namespace="ns", queue="default", min_member=1))
    assert job.count(TaskStatus.PENDING) == 0
    job.add_task(_task())
    assert job.count(TaskStatus.PENDING) == 1
    assert job.count(TaskStatus.RUNNING, TaskStatus.BOUND) == 0
    job.add_task(TaskInfo(uid=TaskID("u2"), name="w-4", namespace="ns", resreq=Resource(), status=TaskStatus.RUNNING))
    assert job.count(TaskStatus.PENDING, TaskStatus.RUNNING) == 2
    assert job.count(TaskStatus.RUNNING) == 1
    assert job.count(TaskStatus.SUCCEEDED) == 0
