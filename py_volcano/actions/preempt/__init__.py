"""preempt: intra-queue preemption, normal or topology-aware (seed 004); see `action` for the outline."""

from py_volcano.actions.preempt.action import NAME, PreemptAction, PreemptArgs, new

__all__ = ["NAME", "PreemptAction", "PreemptArgs", "new"]
