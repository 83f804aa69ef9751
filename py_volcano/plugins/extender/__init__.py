"""extender: extension points served by an HTTP server (Volcano's extender plugin).

Layout: `args` (the arguments, under Volcano's names), `wire` (the JSON of tasks, jobs, nodes and queues
in Volcano's field names), `client` (the HTTP calls, their timeout and failures), `plugin` (the points).
"""

from py_volcano.plugins.extender.args import ExtenderArgs
from py_volcano.plugins.extender.plugin import NAME, new

__all__ = ["NAME", "ExtenderArgs", "new"]
