"""preempt: intra-queue preemption, normal or topology-aware; see `action` for the outline.

The rules: docs/semantics.md, "Preempt".
"""

from py_volcano.actions.preempt.action import NAME, PreemptAction, PreemptArgs, new

__all__ = ["NAME", "PreemptAction", "PreemptArgs", "new"]
