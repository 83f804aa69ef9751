"""pdb: keep victims within their PodDisruptionBudgets (Volcano's pdb plugin).

For preempt, reclaim and shuffle, each call walks the candidates in the order given and charges one
disruption to every PDB of the candidate's namespace whose selector matches its labels; a candidate that
takes some budget below zero is dropped, the others are the plugin's victims (an empty answer still
votes, so the tier defers to the next: docs/semantics.md, "Victim selection"). A budget is the PDB's
`status.disruptionsAllowed` (computed from `minAvailable`/`maxUnavailable` when the PDB carries no
status), less the pods it selects that this cycle already evicted. A PDB with an empty selector
selects nothing, as in Volcano. docs/plugins.md, "pdb".
"""

from __future__ import annotations

from py_volcano.api import PdbSpec, TaskID, TaskInfo, TaskStatus, Vote, disruptions_allowed, match_label_selector
from py_volcano.framework import NoArgs, Session

__all__ = ["NAME", "PdbPlugin", "new"]

NAME = "pdb"


class _Budget:
    """One PDB: what it selects, what it allowed at open, and who was already leaving then."""

    __slots__ = ("allowed", "before", "members", "pdb")

    def __init__(self, pdb: PdbSpec, members: list[TaskInfo], allowed: int, before: frozenset[TaskID]) -> None:
        self.pdb = pdb
        self.members = members
        self.allowed = allowed
        self.before = before

    def left(self) -> int:
        """Disruptions still allowed: the budget at open less the members this cycle evicted."""
        evicted = sum(1 for task in self.members if task.status is TaskStatus.RELEASING and task.uid not in self.before)
        return self.allowed - evicted

    def selects(self, task: TaskInfo) -> bool:
        """True when the PDB's namespace and selector take the task."""
        return task.namespace == self.pdb.namespace and match_label_selector(self.pdb.selector, task.labels)


class PdbPlugin:
    """Filters victims of preempt, reclaim and shuffle by the PDBs of the snapshot."""

    name = NAME

    def __init__(self, args: NoArgs) -> None:
        self.args = args
        self.budgets: list[_Budget] = []

    def on_session_open(self, ssn: Session) -> None:
        """Read the budgets; register the victim filter for preempt, reclaim and shuffle."""
        self.budgets = _budgets(ssn)
        ssn.add_preemptable_fn(NAME, self.victims)
        ssn.add_reclaimable_fn(NAME, self.victims)
        ssn.add_victim_tasks_fn(NAME, self.within_budgets)

    def on_session_close(self, ssn: Session) -> None:
        """Drop the session state."""
        self.budgets = []

    def within_budgets(self, tasks: list[TaskInfo]) -> list[TaskInfo]:
        """Return the tasks, in order, that every PDB selecting them can still afford, each charged as it goes."""
        left = {id(budget): budget.left() for budget in self.budgets}
        chosen: list[TaskInfo] = []
        for task in tasks:
            fits = True
            for budget in self.budgets:
                if budget.selects(task):
                    left[id(budget)] -= 1
                    fits = fits and left[id(budget)] >= 0
            if fits:
                chosen.append(task)
        return chosen

    def victims(self, evictor: TaskInfo, evictees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
        """Keep the evictees within their budgets (an empty answer still votes)."""
        return self.within_budgets(evictees), Vote.PERMIT


def _budgets(ssn: Session) -> list[_Budget]:
    """One budget per PDB of the session; an unreadable amount is warned about and the PDB ignored."""
    if not ssn.pdbs:
        return []
    pods: dict[TaskID, TaskInfo] = {}
    for job in ssn.jobs.values():
        pods.update(job.tasks)
    for node in ssn.node_list:
        for uid, task in node.tasks.items():
            pods.setdefault(uid, task)
    budgets: list[_Budget] = []
    for pdb in ssn.pdbs:
        if not (pdb.selector.get("matchLabels") or pdb.selector.get("matchExpressions")):
            continue  # Volcano: an empty selector selects nothing
        members = [
            task
            for task in pods.values()
            if task.namespace == pdb.namespace and match_label_selector(pdb.selector, task.labels)
        ]
        before = frozenset(task.uid for task in members if task.status is TaskStatus.RELEASING)
        try:
            allowed = disruptions_allowed(pdb, members, before)
        except ValueError as exc:
            ssn.warn(f"PodDisruptionBudget {pdb.key}: field spec.minAvailable/maxUnavailable: {exc}; ignored")
            continue
        if allowed is not None:
            budgets.append(_Budget(pdb, members, allowed, before))
    return budgets


def new(args: NoArgs) -> PdbPlugin:
    """Build the plugin."""
    return PdbPlugin(args)
