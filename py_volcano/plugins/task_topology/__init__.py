"""task-topology: affinity and anti-affinity between a job's task roles, placed bucket by bucket (Volcano's
task-topology; docs/plugins.md, "task-topology").

Layout: `buckets` (the annotations, the role relations and the buckets of one job), `plugin` (task order,
node score and the event handlers).
"""

from py_volcano.plugins.task_topology.plugin import NAME, TaskTopologyArgs, TaskTopologyPlugin

__all__ = ["NAME", "TaskTopologyArgs", "new"]


def new(args: TaskTopologyArgs) -> TaskTopologyPlugin:
    """Build the plugin."""
    return TaskTopologyPlugin(args)
