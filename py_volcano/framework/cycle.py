"""One scheduling cycle: open a session over a snapshot, run the configured actions, close it."""

from __future__ import annotations

import time

import structlog

from py_volcano.api import ClusterInfo, CycleResult
from py_volcano.framework.conf import SchedulerConf
from py_volcano.framework.plugin import Registry
from py_volcano.framework.session import close_session, open_session

__all__ = ["run_cycle"]

log = structlog.get_logger(__name__)


def run_cycle(cluster: ClusterInfo, conf: SchedulerConf, registry: Registry, *, cycle: int = 0) -> CycleResult:
    """Run every action of `conf` in order over `cluster` (which the cycle then owns)."""
    ssn = open_session(cluster, conf, registry, cycle=cycle)
    durations: dict[str, float] = {}
    for name in conf.actions:
        action = registry.actions[name].new(conf.action_args[name])
        started = time.perf_counter()
        action.execute(ssn)
        durations[name] = time.perf_counter() - started
    result = close_session(ssn)
    result.action_durations = durations
    log.debug(
        "cycle_done",
        cycle=cycle,
        binds=len(result.binds),
        evictions=len(result.evictions),
        pipelined=len(result.pipelined),
        duration_ms=round(sum(durations.values()) * 1000, 3),
    )
    return result
