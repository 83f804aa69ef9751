"""A job's task topology and its buckets: groups of its tasks meant to share a node.

The PodGroup annotations name roles (the pod annotation `volcano.sh/task-spec`):
`volcano.sh/task-topology-affinity` (`ps,worker;ps,evaluator`: roles that should share nodes; a role alone,
`ps`, should share nodes with itself), `volcano.sh/task-topology-anti-affinity` (the same syntax, for roles
that should not), `volcano.sh/task-topology-task-order` (`ps,worker`: the roles placed first). Tasks of
roles the annotations name go into buckets: bound tasks by their node, then pending ones in order (higher
task order, then stronger topology, then name), each into the bucket whose tasks it has most affinity
with (fewest requests on ties), or a new one when every bucket has some anti-affinity to it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from py_volcano.api import JobInfo, Resource, TaskID, TaskInfo

__all__ = ["AFFINITY", "ANTI_AFFINITY", "TASK_ORDER", "Bucket", "JobBuckets", "TopologyError", "read_topology"]

AFFINITY = "volcano.sh/task-topology-affinity"
ANTI_AFFINITY = "volcano.sh/task-topology-anti-affinity"
TASK_ORDER = "volcano.sh/task-topology-task-order"

# How strongly a role is tied to others; the stronger go first (Volcano's affinityPriority).
_SELF_ANTI, _INTER, _SELF, _INTER_ANTI = 4, 3, 2, 1


class Topology:
    """The role groups of the three annotations."""

    __slots__ = ("affinity", "anti_affinity", "order")

    def __init__(self, affinity: list[list[str]], anti_affinity: list[list[str]], order: list[str]) -> None:
        self.affinity = affinity
        self.anti_affinity = anti_affinity
        self.order = order


class TopologyError(ValueError):
    """An annotation names a role the job lacks, or one twice in a group."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"{key}: {reason}")
        self.key = key
        self.reason = reason


def read_topology(job: JobInfo) -> Topology | None:
    """The job's topology; None without the annotations; TopologyError when they name roles wrongly."""
    annotations = job.pod_group.annotations
    if not any(key in annotations for key in (AFFINITY, ANTI_AFFINITY, TASK_ORDER)):
        return None
    roles = {task.role for task in job.tasks.values()}
    groups = [_groups(annotations.get(key), roles, key) for key in (AFFINITY, ANTI_AFFINITY)]
    order = annotations[TASK_ORDER].split(",") if TASK_ORDER in annotations else []
    _check([order], roles, TASK_ORDER)
    return Topology(groups[0], groups[1], order)


def _groups(text: str | None, roles: set[str], key: str) -> list[list[str]]:
    if text is None:
        return []
    groups = [part.split(",") for part in text.split(";")]
    _check(groups, roles, key)
    return groups


def _check(groups: Iterable[list[str]], roles: set[str], key: str) -> None:
    for group in groups:
        seen: set[str] = set()
        for role in group:
            if not role:
                continue
            if role not in roles:
                raise TopologyError(key, f"task {role!r} does not exist in the job")
            if role in seen:
                raise TopologyError(key, f"task {role!r} is listed twice in one group")
            seen.add(role)


class Bucket:
    """Tasks meant for one node: the pending ones, how many per role, the nodes of the bound ones."""

    __slots__ = ("bound", "index", "nodes", "request", "request_score", "roles", "tasks")

    def __init__(self, index: int) -> None:
        self.index = index
        self.tasks: dict[TaskID, TaskInfo] = {}
        self.roles: dict[str, int] = {}
        self.request = Resource()
        self.request_score = 0.0
        self.bound = 0
        self.nodes: dict[str, int] = {}

    def add(self, role: str, task: TaskInfo) -> None:
        """Add a task: a bound one counts on its node, a pending one by its request."""
        self.roles[role] = self.roles.get(role, 0) + 1
        if task.node_name:
            self.nodes[task.node_name] = self.nodes.get(task.node_name, 0) + 1
            self.bound += 1
            return
        self.tasks[task.uid] = task
        self._count(task.resreq, 1.0)

    def place(self, task: TaskInfo, node: str, sign: int) -> None:
        """Move a pending task onto `node` (sign 1), or back (sign -1, a discarded placement)."""
        self.nodes[node] = self.nodes.get(node, 0) + sign
        self.bound += sign
        if sign > 0:
            self.tasks.pop(task.uid, None)
        else:
            self.tasks[task.uid] = task
        self._count(task.resreq, -float(sign))

    def _count(self, request: Resource, sign: float) -> None:
        # Volcano weighs 1 milli-CPU, 1 MiB of memory and one milli-unit of any scalar alike.
        score = request.milli_cpu + request.memory / 1024 / 1024 + sum(request.scalars.values())
        self.request_score += sign * score
        if sign > 0:
            self.request.add(request)
        else:
            self.request.sub_without_assert(request)


class JobBuckets:
    """One job's topology as role relations, its buckets, and where its tasks were placed this session."""

    __slots__ = (
        "bucket_of",
        "buckets",
        "inter",
        "inter_anti",
        "max_size",
        "node_roles",
        "order",
        "self_affinity",
        "self_anti",
        "strength",
    )

    def __init__(self, topology: Topology) -> None:
        self.buckets: list[Bucket] = []
        self.bucket_of: dict[TaskID, int] = {}
        self.strength: dict[str, int] = {}
        self.order: dict[str, int] = {role: len(topology.order) - i for i, role in enumerate(topology.order)}
        self.inter: dict[str, set[str]] = {}
        self.inter_anti: dict[str, set[str]] = {}
        self.self_affinity: set[str] = set()
        self.self_anti: set[str] = set()
        self.max_size = 0
        self.node_roles: dict[str, dict[str, int]] = {}
        self._relate(topology.affinity, self.self_affinity, self.inter, _SELF, _INTER)
        self._relate(topology.anti_affinity, self.self_anti, self.inter_anti, _SELF_ANTI, _INTER_ANTI)

    def _relate(
        self, groups: list[list[str]], alone: set[str], pairs: dict[str, set[str]], alone_rank: int, pair_rank: int
    ) -> None:
        for group in groups:
            if len(group) == 1:
                alone.add(group[0])
                self._mark(group[0], alone_rank)
                continue
            for index, role in enumerate(group):
                for other in group[:index]:
                    pairs.setdefault(role, set()).add(other)
                    pairs.setdefault(other, set()).add(role)
                self._mark(role, pair_rank)

    def _mark(self, role: str, rank: int) -> None:
        self.strength[role] = max(self.strength.get(role, 0), rank)

    def affinity_order(self, left: TaskInfo, right: TaskInfo) -> int:
        """1 when `left`'s role goes first (higher task order, then stronger topology), -1 the other way, 0 else."""
        if left.role == right.role:
            return 0
        for rank in (self.order, self.strength):
            lv, rv = rank.get(left.role, 0), rank.get(right.role, 0)
            if lv != rv:
                return 1 if lv > rv else -1
        return 0

    def affinity(self, role: str, roles: Mapping[str, int], *, only_anti: bool) -> int:
        """Tasks of `roles` the role likes (unless `only_anti`) less those it dislikes."""
        total = 0
        if not role:
            return total
        for other, count in roles.items():
            same = other == role
            if not only_anti and (role in self.self_affinity if same else other in self.inter.get(role, ())):
                total += count
            if role in self.self_anti if same else other in self.inter_anti.get(role, ()):
                total -= count
        return total

    def build(self, tasks: Iterable[TaskInfo]) -> None:
        """Put the tasks of roles with a topology into buckets (bound ones by node first)."""
        ranked = [task for task in tasks if task.role and task.role in self.strength]
        bound = sorted((t for t in ranked if t.node_name), key=lambda t: t.node_name)
        pending = [t for t in ranked if not t.node_name]
        pending.sort(key=lambda t: t.name)
        pending.sort(key=lambda t: (self.order.get(t.role, 0), self.strength.get(t.role, 0)), reverse=True)
        by_node: dict[str, Bucket] = {}
        for task in bound:
            bucket = by_node.get(task.node_name)
            if bucket is None:
                bucket = by_node[task.node_name] = self._new_bucket()
            self._add(bucket, task)
        for task in pending:
            self._add(self._best_bucket(task), task)

    def _best_bucket(self, task: TaskInfo) -> Bucket:
        best: Bucket | None = None
        best_affinity = 0
        for bucket in self.buckets:
            value = self.affinity(task.role, bucket.roles, only_anti=False)
            if (
                best is None
                or value > best_affinity
                or (value == best_affinity and bucket.request_score < best.request_score)
            ):
                best, best_affinity = bucket, value
        return best if best is not None and best_affinity >= 0 else self._new_bucket()

    def _new_bucket(self) -> Bucket:
        bucket = Bucket(len(self.buckets))
        self.buckets.append(bucket)
        return bucket

    def _add(self, bucket: Bucket, task: TaskInfo) -> None:
        self.bucket_of[task.uid] = bucket.index
        bucket.add(task.role, task)
        self.max_size = max(self.max_size, len(bucket.tasks) + bucket.bound)

    def bucket(self, task: TaskInfo) -> Bucket | None:
        """The task's bucket; None when its role has no topology."""
        index = self.bucket_of.get(task.uid)
        return self.buckets[index] if index is not None else None

    def place(self, task: TaskInfo, sign: int) -> None:
        """Count a placement of this session on its node (sign 1), or take a discarded one back (-1)."""
        if task.role:
            roles = self.node_roles.setdefault(task.node_name, {})
            roles[task.role] = roles.get(task.role, 0) + sign
        bucket = self.bucket(task)
        if bucket is not None:
            bucket.place(task, task.node_name, sign)
