"""TaskInfo and JobInfo bookkeeping that the snapshot relies on."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from py_volcano.api import Resource, TaskID, TaskInfo, TaskStatus
from py_volcano.api.job_info import JobInfo, PodGroupSpec
from tests.builders import cluster, node, pod


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


def _job(min_member: int, roles: dict[str, int], *tasks: tuple[str, TaskStatus]) -> JobInfo:
    """A job with one 1-CPU task per (role, status), named `<role>-<i>`."""
    job = JobInfo(PodGroupSpec(name="pg", namespace="ns", queue="default", min_member=min_member,
                               min_task_member=roles))
    for i, (role, status) in enumerate(tasks):
        job.add_task(TaskInfo(uid=TaskID(f"u{i}"), name=f"{role or 'w'}-{i}", namespace="ns",
                              resreq=Resource(milli_cpu=1000), status=status, role=role))
    return job


P, A = TaskStatus.PENDING, TaskStatus.ALLOCATED
STRICT = {"ps": 1, "worker": 2}


@pytest.mark.parametrize(
    ("job", "failed", "expected"),
    [
        pytest.param(_job(3, {}, ("", A), ("", P), ("", P)), {""}, False, id="minMember-covers-every-task"),
        pytest.param(_job(2, {}, ("", A), ("", P), ("", P)), {""}, True, id="no-roles-minMember-below-tasks"),
        pytest.param(_job(3, STRICT, ("ps", A), ("ps", P), ("worker", P), ("worker", P)), {"ps"}, True,
                     id="failed-role-already-has-its-minimum"),
        pytest.param(_job(3, STRICT, ("ps", P), ("ps", P), ("worker", A), ("worker", P)), {"ps"}, False,
                     id="failed-role-short-of-its-minimum"),
        pytest.param(_job(3, STRICT, ("ps", P), ("", P), ("worker", P), ("worker", P)), {""}, True,
                     id="failed-role-without-a-minimum"),
        pytest.param(_job(1, {"a": 1, "b": 1}, ("a", P), ("b", P)), {"a"}, True,
                     id="loose-roles-other-roles-can-make-minMember"),
        pytest.param(_job(2, {"a": 2, "b": 2}, ("a", P), ("a", P), ("b", P)), {"a"}, False,
                     id="loose-roles-other-roles-fall-short"),
    ],
)
def test_need_continue_allocating_as_volcano(job: JobInfo, failed: set[str], expected: bool) -> None:
    """Volcano's NeedContinueAllocating over the default sub-job."""
    assert job.need_continue_allocating(failed) is expected


def test_loose_roles_are_not_checked() -> None:
    """minMember below the sum of minTaskMember: Volcano's CheckTaskValid/Ready/Pipelined pass whatever the roles."""
    job = _job(1, {"a": 1, "b": 1}, ("a", A), ("a", P))
    assert job.roles_are_loose()
    assert job.check_task_valid() and job.check_task_ready() and job.check_task_pipelined()
    strict = _job(2, {"a": 1, "b": 1}, ("a", A), ("a", P))
    assert not strict.check_task_valid() and not strict.check_task_ready()


def test_pending_best_effort_tasks_count_for_their_role() -> None:
    """Volcano's CheckTaskReady and CheckTaskPipelined count a pending task that requests nothing."""
    job = _job(2, {"a": 1, "b": 1}, ("a", A))
    job.add_task(TaskInfo(uid=TaskID("be"), name="b-9", namespace="ns", resreq=Resource(), role="b"))
    assert job.check_task_ready() and job.check_task_pipelined()


@pytest.mark.parametrize(
    ("name", "index"),
    [
        pytest.param("job-task-3", 3, id="three-parts"),
        pytest.param("job-task-worker-12", 12, id="four-parts"),
        pytest.param("w-3", None, id="two-parts-no-index"),
        pytest.param("train-10", None, id="two-parts-number-no-index"),
        pytest.param("plain", None, id="one-part"),
        pytest.param("a-b-007", 7, id="leading-zeros"),
        pytest.param("a--0", 0, id="empty-middle-part-counts"),
        pytest.param("a-b-", None, id="empty-last-part"),
        pytest.param("a-b-x1", None, id="not-a-number"),
        pytest.param("a-b-+5", 5, id="plus-sign-as-atoi"),
        pytest.param("a-b-1.5", None, id="not-an-integer"),
        pytest.param("a-b-\u0661", None, id="non-ascii-digit"),
        pytest.param(f"a-b-{2**63 - 1}", 2**63 - 1, id="largest-int64"),
        pytest.param(f"a-b-{2**63}", None, id="beyond-int64"),
    ],
)
def test_name_index_as_volcanos_get_pod_index_under_task(name: str, index: int | None) -> None:
    """Volcano's GetPodIndexUnderTask (at least three dash-separated parts) read by strconv.Atoi."""
    assert TaskInfo(uid=TaskID("u"), name=name, namespace="ns", resreq=Resource()).index == index


PL, BE = TaskStatus.PIPELINED, "best-effort"


@pytest.mark.parametrize(
    ("min_member", "tasks", "pipelined"),
    [
        pytest.param(2, (PL, BE), True, id="pipelined-plus-pending-best-effort"),
        pytest.param(2, (A, BE), True, id="ready-plus-pending-best-effort"),
        pytest.param(2, (PL, P), False, id="pending-task-that-requests-counts-not"),
        pytest.param(3, (PL, A, BE), True, id="all-three-kinds"),
        pytest.param(3, (PL, BE), False, id="short-by-one"),
        pytest.param(1, (BE,), True, id="best-effort-alone"),
    ],
)
def test_is_pipelined_counts_pending_best_effort_tasks(
    min_member: int, tasks: tuple[TaskStatus | str, ...], pipelined: bool
) -> None:
    """Volcano's IsPipelined: WaitingTaskNum + ReadyTaskNum + PendingBestEffortTaskNum >= MinAvailable;
    IsStarving leaves the best-effort tasks out."""
    job = JobInfo(PodGroupSpec(name="pg", namespace="ns", queue="default", min_member=min_member))
    for i, kind in enumerate(tasks):
        status = P if kind == BE else TaskStatus(kind)
        request = Resource() if kind == BE else Resource(milli_cpu=1000)
        job.add_task(TaskInfo(uid=TaskID(f"u{i}"), name=f"w-{i}", namespace="ns", resreq=request, status=status))
    assert job.is_pipelined() is pipelined
    assert job.is_starving() is (job.waiting_task_num() + job.ready_task_num() < min_member)


def test_init_containers_count_in_what_a_task_holds() -> None:
    """Volcano's NewTaskInfo: Resreq is InitResreq (init containers included), so a job's request and
    allocated, a node's used and best-effort all read the init-inclusive figure."""
    sidecar = {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}}
    setup = {"name": "setup", "resources": {"requests": {"cpu": "3", "memory": "2Gi"}}}
    snapshot = cluster(
        node(name="n1", cpu="8"),
        pod(name="a", node_name="n1", cpu="1", spec={"initContainers": [sidecar, setup]}),
        pod(name="b", cpu="", memory="", spec={"initContainers": [{**setup, "resources": {"requests": {"cpu": "1"}}}]}),
    )
    task_a, task_b = (next(t for j in snapshot.jobs.values() for t in j.tasks.values() if t.name == n) for n in "ab")
    assert task_a.init_resreq is task_a.resreq and task_a.job is not None
    assert (task_a.resreq.milli_cpu, task_a.resreq.memory) == (3500, 2 * 2**30)
    assert snapshot.jobs[task_a.job].allocated.milli_cpu == 3500
    assert snapshot.nodes["n1"].used.milli_cpu == 3500
    assert snapshot.nodes["n1"].idle.milli_cpu == 4500
    assert (task_b.resreq.milli_cpu, task_b.best_effort) == (1000, False)


@settings(max_examples=80, deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.integers(0, 5), st.booleans(), st.sampled_from(list(TaskStatus))), min_size=1, max_size=30
    )
)
def test_ready_and_pending_best_effort_tasks_are_counted_as_the_index_changes(
    steps: list[tuple[int, bool, TaskStatus]],
) -> None:
    """The kept counts equal counts over the tasks after any adds and status changes, in the job and in
    its clone: pending best-effort tasks, and tasks in a ready status (Volcano's ReadyTaskNum)."""
    ready = {TaskStatus.BOUND, TaskStatus.BINDING, TaskStatus.RUNNING, TaskStatus.ALLOCATED, TaskStatus.SUCCEEDED}
    job = JobInfo(PodGroupSpec(name="pg", namespace="ns", queue="default", min_member=1))
    for index, best_effort, status in steps:
        uid = TaskID(f"u{index}")
        if uid in job.tasks:
            job.update_task_status(job.tasks[uid], status)
        else:
            resreq = Resource() if best_effort else Resource(milli_cpu=100)
            job.add_task(TaskInfo(uid=uid, name=f"t-{index}", namespace="ns", resreq=resreq, status=status))
        for each in (job, job.clone()):
            recount = sum(1 for task in each.tasks.values() if task.status is TaskStatus.PENDING and task.best_effort)
            assert each.pending_best_effort_task_num() == recount
            assert each.ready_task_num() == sum(1 for task in each.tasks.values() if task.status in ready)
            assert each.ready_task_num() == each.count(*ready)
