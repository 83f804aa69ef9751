"""PodDisruptionBudget awareness for victim choice (beyond Volcano, whose preempt leaves it as a TODO).

A budget says how many of the pods a PDB selects may be disrupted now: `status.disruptionsAllowed`
when the PDB carries a status, else computed from `minAvailable`/`maxUnavailable` over the selected
pods that run. Evictions planned in this cycle (committed or still in an open statement) count against
it, read from the tasks' live statuses, so a discarded statement gives its disruptions back.

Breaking a budget is a preference, not a veto: the API server answers such an eviction with 429 and
the runner retries it in a later cycle. Actions therefore take a breaking victim only when no
non-breaking one is left on the node (`victims.pick`).
"""

from __future__ import annotations

from collections.abc import Collection

from py_volcano.api import TaskID, TaskInfo, TaskStatus, disruptions_allowed, match_label_selector
from py_volcano.framework import Session

__all__ = ["DisruptionBudgets"]


class _Budget:
    __slots__ = ("allowed", "before", "members")

    def __init__(self, members: list[TaskInfo], allowed: int, before: frozenset[TaskID]) -> None:
        self.members = members
        self.allowed = allowed
        self.before = before

    def used(self) -> int:
        """Disruptions this cycle planned: members Releasing that were not Releasing before it."""
        return sum(1 for task in self.members if task.status is TaskStatus.RELEASING and task.uid not in self.before)


class DisruptionBudgets:
    """The PDBs of a session, by the tasks they select."""

    __slots__ = ("_covering",)

    def __init__(self) -> None:
        self._covering: dict[TaskID, list[_Budget]] = {}

    @classmethod
    def build(cls, ssn: Session) -> DisruptionBudgets:
        """Read every PDB of the session; pods evicted earlier in the cycle count as disruptions already."""
        budgets = cls()
        if not ssn.pdbs:
            return budgets
        pods = _pods(ssn)
        evicted = {task.uid for task, _ in ssn.evictions}
        for pdb in ssn.pdbs:
            members = [
                task
                for task in pods
                if task.namespace == pdb.namespace and match_label_selector(pdb.selector, task.labels)
            ]
            before = frozenset(
                task.uid for task in members if task.status is TaskStatus.RELEASING and task.uid not in evicted
            )
            try:
                allowed = disruptions_allowed(pdb, members, before)
            except ValueError as exc:
                ssn.warn(f"PodDisruptionBudget {pdb.key}: field spec.minAvailable/maxUnavailable: {exc}; ignored")
                continue
            if allowed is None:
                continue
            budget = _Budget(members, allowed, before)
            for task in members:
                budgets._covering.setdefault(task.uid, []).append(budget)
        return budgets

    def breaks(self, task: TaskInfo, planned: Collection[TaskInfo] = ()) -> bool:
        """True when evicting `task`, after this cycle's evictions and `planned` ones, exceeds a budget."""
        budgets = self._covering.get(task.uid)
        if not budgets:
            return False
        planned_uids = {victim.uid for victim in planned if victim.status is not TaskStatus.RELEASING}
        for budget in budgets:
            extra = sum(1 for member in budget.members if member.uid in planned_uids) if planned_uids else 0
            if budget.used() + extra + 1 > budget.allowed:
                return True
        return False

    def __bool__(self) -> bool:
        return bool(self._covering)


def _pods(ssn: Session) -> list[TaskInfo]:
    """Every pod the session knows: the jobs' own tasks (live statuses), then pods only seen on nodes."""
    pods: dict[TaskID, TaskInfo] = {}
    for job in ssn.jobs.values():
        pods.update(job.tasks)
    for node in ssn.node_list:
        for uid, task in node.tasks.items():
            pods.setdefault(uid, task)
    return list(pods.values())
