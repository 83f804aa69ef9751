"""Which configurations let a snapshot share its backlog jobs (`api.Backlog`) with other cycles.

Sharing a job between cycles is safe when nothing the cycle runs changes a job it backed off whose
every task is pending, and when the plugins that read every job read the backlog's sums instead of
walking its jobs. Checked for these actions and plugins: `enqueue`, `allocate` and `backfill` walk
only jobs that are not backed off; priority, gang, conformance, predicates, nodeorder and binpack
read jobs only as an action hands them over (or at close, read-only); proportion and overcommit read
the backlog's per-queue sums, and drf gives backlog jobs no share of their own (they allocate nothing,
and no walk orders them). `enqueue` must run: without it the session turns Pending jobs Inqueue as it
opens, a change to shared jobs. Any other action or plugin, or a hierarchy switch, and the runner
builds every job afresh, as before.
"""

from __future__ import annotations

from py_volcano.framework.conf import SchedulerConf

__all__ = ["shares_backlog"]

_ACTIONS = frozenset({"enqueue", "allocate", "backfill"})
_PLUGINS = frozenset(
    {"priority", "gang", "conformance", "overcommit", "drf", "predicates", "proportion", "nodeorder", "binpack"}
)


def shares_backlog(conf: SchedulerConf) -> bool:
    """Whether cycles under `conf` may share backlog jobs between snapshots."""
    if "enqueue" not in conf.actions or not _ACTIONS.issuperset(conf.actions):
        return False
    return all(
        option.name in _PLUGINS and not option.switches.get("hierarchy", False)
        for tier in conf.tiers
        for option in tier
    )
