"""cdp: cooldown protection: a running pod is not a victim within its cooldown time (Volcano's cdp).

A pod's cooldown is its label, else its annotation, `volcano.sh/cooldown-time` (a Go duration, `600s`);
a running pod whose `PodScheduled` condition turned True less than that long ago is kept out of the
victims of preempt and reclaim. Pods without the key, with an unreadable value, not Running or without
the condition are offered as usual. docs/plugins.md, "cdp".
"""

from __future__ import annotations

from py_volcano.api import TaskID, TaskInfo, TaskStatus, Vote, parse_duration
from py_volcano.framework import NoArgs, Session

__all__ = ["COOLDOWN_TIME", "NAME", "CooldownProtectionPlugin", "new"]

NAME = "cdp"
COOLDOWN_TIME = "volcano.sh/cooldown-time"


class CooldownProtectionPlugin:
    """Filters victims of preempt and reclaim by their cooldown."""

    name = NAME

    def __init__(self, args: NoArgs) -> None:
        self.args = args
        self.ssn: Session | None = None
        self.cooldowns: dict[TaskID, float | None] = {}

    def on_session_open(self, ssn: Session) -> None:
        """Register the victim filter for preempt and reclaim."""
        self.ssn = ssn
        self.cooldowns = {}
        ssn.add_preemptable_fn(NAME, self.victims)
        ssn.add_reclaimable_fn(NAME, self.victims)

    def on_session_close(self, ssn: Session) -> None:
        """Drop the session state."""
        self.ssn = None
        self.cooldowns = {}

    def cooldown(self, task: TaskInfo) -> float | None:
        """The task's cooldown in seconds; None without a readable `volcano.sh/cooldown-time`."""
        if task.uid in self.cooldowns:
            return self.cooldowns[task.uid]
        text = task.labels.get(COOLDOWN_TIME, task.annotations.get(COOLDOWN_TIME))
        seconds: float | None = None
        if text is not None:
            try:
                seconds = parse_duration(text)
            except ValueError:
                if self.ssn is not None:
                    self.ssn.warn(f"Pod {task.key}: {COOLDOWN_TIME}: {text!r} is not a duration; no cooldown")
        self.cooldowns[task.uid] = seconds
        return seconds

    def is_cooling_down(self, task: TaskInfo) -> bool:
        """True when the task runs and was scheduled less than its cooldown ago."""
        cooldown = self.cooldown(task)
        if cooldown is None or task.status is not TaskStatus.RUNNING or task.scheduled_at is None:
            return False
        assert self.ssn is not None
        return task.scheduled_at + cooldown > self.ssn.now.timestamp()

    def victims(self, evictor: TaskInfo, evictees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
        """Keep the evictees that are not cooling down (an empty answer still votes)."""
        return [task for task in evictees if not self.is_cooling_down(task)], Vote.PERMIT


def new(args: NoArgs) -> CooldownProtectionPlugin:
    """Build the plugin."""
    return CooldownProtectionPlugin(args)
