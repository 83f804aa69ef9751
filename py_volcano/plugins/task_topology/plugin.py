"""The task-topology plugin: task order by bucket, node score by bucket, placements followed through events."""

from __future__ import annotations

from dataclasses import dataclass

from py_volcano.api import ZERO, JobID, NodeInfo, TaskID, TaskInfo, TaskStatus
from py_volcano.framework import Arguments, EventHandler, Session
from py_volcano.plugins.task_topology.buckets import JobBuckets, TopologyError, read_topology

__all__ = ["NAME", "TaskTopologyArgs", "TaskTopologyPlugin"]

NAME = "task-topology"
MAX_NODE_SCORE = 100.0


@dataclass(slots=True, frozen=True)
class TaskTopologyArgs:
    """task-topology's arguments."""

    weight: int = 1
    """`task-topology.weight`: multiplies the node score."""

    @classmethod
    def parse(cls, args: Arguments) -> TaskTopologyArgs:
        """Read the arguments; ConfigError on a value that is not an integer."""
        return cls(weight=args.get_int("task-topology.weight", 1))


class TaskTopologyPlugin:
    """Orders a job's tasks bucket by bucket and scores nodes by the bucket a task belongs to."""

    name = NAME

    def __init__(self, args: TaskTopologyArgs) -> None:
        self.args = args
        self.jobs: dict[JobID, JobBuckets] = {}
        self.placed: set[TaskID] = set()

    def on_session_open(self, ssn: Session) -> None:
        """Build the buckets of every job with pending tasks and a topology; register the functions."""
        self.jobs, self.placed = {}, set()
        for job in ssn.jobs.values():
            if not job.count(TaskStatus.PENDING):
                continue
            try:
                topology = read_topology(job)
            except TopologyError as exc:
                ssn.warn(f"PodGroup {job.uid}: field metadata.annotations[{exc.key}]: {exc.reason}; no task topology")
                continue
            if topology is not None:
                buckets = self.jobs[job.uid] = JobBuckets(topology)
                buckets.build(job.tasks.values())
        ssn.add_task_order_fn(NAME, self.task_order)
        ssn.add_node_order_fn(NAME, self.score)
        ssn.add_event_handler(EventHandler(allocate=self._placed, deallocate=self._unplaced))

    def on_session_close(self, ssn: Session) -> None:
        """Drop the session state."""
        self.jobs, self.placed = {}, set()

    def task_order(self, l: TaskInfo, r: TaskInfo) -> int:
        """Tasks in a bucket first; within a job the bigger bucket, then the older; in one bucket the role order."""
        left_job = self.jobs.get(l.job) if l.job is not None else None
        right_job = self.jobs.get(r.job) if r.job is not None else None
        if left_job is None or right_job is None:
            return 0
        left, right = left_job.bucket(l), right_job.bucket(r)
        if (left is None) != (right is None):
            return -1 if left is not None else 1
        if l.job != r.job or left is None or right is None:
            return 0
        if len(left.tasks) != len(right.tasks):
            return -1 if len(left.tasks) > len(right.tasks) else 1
        if left.index == right.index:
            return -left_job.affinity_order(l, r)
        return -1 if left.index < right.index else 1

    def bucket_score(self, task: TaskInfo, node: NodeInfo) -> tuple[int, JobBuckets | None]:
        """Volcano's bucket score: the bucket's tasks already on the node, less anti-affinity there, plus the
        bucket's pending tasks that would fit the node with this one."""
        room = node.idle.clone().add(node.releasing)
        if room.less_partly(task.resreq, ZERO):
            return 0, None
        job = self.jobs.get(task.job) if task.job is not None else None
        bucket = job.bucket(task) if job is not None else None
        if job is None or bucket is None:
            return 0, job
        score = bucket.nodes.get(node.name, 0)
        roles = job.node_roles.get(node.name)
        if roles:
            score += min(job.affinity(task.role, roles, only_anti=True), 0)
        score += len(bucket.tasks)
        if bucket.request.less_equal(room, ZERO):
            return score, job
        remains = bucket.request.clone()
        # Volcano takes the other pending tasks out in map order (random); here in the order they joined.
        for uid, other in bucket.tasks.items():
            if uid == task.uid:
                continue
            remains.sub_without_assert(other.resreq)
            score -= 1
            if remains.less_equal(room, ZERO):
                break
        return score, job

    def score(self, task: TaskInfo, node: NodeInfo) -> float:
        """The bucket score times `task-topology.weight`, scaled to 0..100 by the job's largest bucket."""
        score, job = self.bucket_score(task, node)
        value = float(score * self.args.weight)
        if job is not None and job.max_size:
            value = value * MAX_NODE_SCORE / job.max_size
        return value

    def _placed(self, task: TaskInfo) -> None:
        # An undone eviction also calls allocate handlers: only new placements count.
        if task.status not in (TaskStatus.ALLOCATED, TaskStatus.PIPELINED):
            return
        job = self.jobs.get(task.job) if task.job is not None else None
        if job is not None:
            job.place(task, 1)
            self.placed.add(task.uid)

    def _unplaced(self, task: TaskInfo) -> None:
        job = self.jobs.get(task.job) if task.job is not None else None
        if job is not None and task.uid in self.placed:
            job.place(task, -1)
            self.placed.discard(task.uid)
