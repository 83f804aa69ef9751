"""gangpreempt: whole-gang preemption inside a queue; see `action` for the outline.

Layout: `action` (the arguments, the walk over queues and jobs, the victim candidates), `bundles` (victims
grouped per job into safe and whole bundles, and their ranking), `plan` (the dry run that evicts a prefix
of the ranking and pipelines the gang); gangreclaim reuses all three. docs/plugins.md, "gangpreempt".
"""

from py_volcano.actions.gangpreempt.action import NAME, GangEvictionArgs, GangPreemptAction, new

__all__ = ["NAME", "GangEvictionArgs", "GangPreemptAction", "new"]
