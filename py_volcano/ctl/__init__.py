"""The operator's command line: `queues`, `queue open|close`, `jobs`, `explain`, against any cluster.

It reads (and, for a Queue's state, writes) the cluster through the kubeconfig with the cache's API
client, and shows what the scheduler recorded there; it never runs a scheduling cycle of its own.
"""

from py_volcano.ctl.commands import add_commands

__all__ = ["add_commands"]
