"""rescheduling: choose running tasks to move, by strategy, once every `interval` (Volcano's rescheduling).

The plugin only chooses; the `shuffle` action evicts what it chose, and the pods' controllers recreate
them for a later cycle to place. The strategies run when at least `interval` has passed since the
last run (or since the scheduler started); in other sessions the plugin registers nothing.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from py_volcano.api import TaskInfo
from py_volcano.framework import Arguments, Session
from py_volcano.plugins.rescheduling.low_node_utilization import NAME as LOW_NODE_UTILIZATION
from py_volcano.plugins.rescheduling.low_node_utilization import LowNodeUtilization

__all__ = ["NAME", "ReschedulingArgs", "ReschedulingMemory", "ReschedulingPlugin", "new"]

NAME = "rescheduling"
#: The strategies Volcano implements, by the name a configuration gives them.
STRATEGIES: Mapping[str, Callable[[Mapping[str, object], Arguments, str], LowNodeUtilization]] = {
    LOW_NODE_UTILIZATION: LowNodeUtilization.parse,
}
#: Names Volcano's design lists but does not implement: accepted, reported, and they choose nothing.
_UNIMPLEMENTED = ("offlineOnly", "lowPriorityFirst", "shortLifeTimeFirst", "bigObjectFirst", "moreReplicasFirst")


@dataclass(slots=True, frozen=True)
class ReschedulingArgs:
    """rescheduling's arguments."""

    interval: float = 300.0
    """`interval` (a Go duration, default 5m): the least time between two runs of the strategies."""
    strategies: tuple[LowNodeUtilization, ...] = field(default_factory=lambda: (LowNodeUtilization(),))
    """`strategies`: a list of `{name, params}`, in order; default lowNodeUtilization with its defaults."""

    @classmethod
    def parse(cls, args: Arguments) -> ReschedulingArgs:
        """Read the arguments; ConfigError on a malformed value. `metricsPeriod` is read and has no effect."""
        if args.get_value("metricsPeriod") is not None:
            warnings.warn(
                f"{args.owner}: argument metricsPeriod has no effect: py-volcano measures utilisation by what "
                "pods request, not by usage metrics",
                stacklevel=4,
            )
        return cls(interval=args.get_duration("interval", 300.0), strategies=_strategies(args))


def _strategies(args: Arguments) -> tuple[LowNodeUtilization, ...]:
    """Read `strategies`; an empty or absent list keeps the default, as in Volcano; a name written twice
    keeps its last parameters."""
    written = args.get_value("strategies")
    if written is None or written == []:
        return (LowNodeUtilization(),)
    if not isinstance(written, list):
        raise args.error("strategies", f"{written!r} is not a list of {{name, params}}")
    chosen: dict[str, LowNodeUtilization] = {}
    for index, entry in enumerate(written):
        path = f"strategies[{index}]"
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            raise args.error(path, f"{entry!r} is not a map with a name")
        params = entry.get("params") or {}
        if not isinstance(params, Mapping):
            raise args.error(f"{path}.params", f"{params!r} is not a map")
        parse = STRATEGIES.get(entry["name"])
        if parse is None:
            known = "Volcano does not implement it" if entry["name"] in _UNIMPLEMENTED else "unknown strategy"
            warnings.warn(f"{args.owner}: argument {path}: {entry['name']!r} ignored ({known})", stacklevel=5)
            continue
        chosen.pop(entry["name"], None)
        chosen[entry["name"]] = parse(params, args, path)
    return tuple(chosen.values())


class ReschedulingMemory:
    """What rescheduling keeps between sessions: when its strategies last ran."""

    __slots__ = ("last_run",)

    def __init__(self) -> None:
        self.last_run: datetime | None = None


class ReschedulingPlugin:
    """Victims by strategy, every `interval`."""

    name = NAME

    def __init__(self, args: ReschedulingArgs) -> None:
        self.args = args
        self.ssn: Session | None = None

    def on_session_open(self, ssn: Session) -> None:
        """Register the strategies' victim chooser when it is time to run them."""
        if not self._time_to_run(ssn) or not self.args.strategies:
            return
        self.ssn = ssn
        ssn.add_victim_tasks_fn(NAME, self.victim_tasks)

    def _time_to_run(self, ssn: Session) -> bool:
        """True (and the run noted) when `interval` has passed since the last run or the scheduler's start."""
        memory = ssn.memory.recall(NAME, ReschedulingMemory)
        last = memory.last_run or ssn.memory.started
        if ssn.now < last + timedelta(seconds=self.args.interval):
            return False
        memory.last_run = ssn.now
        return True

    def victim_tasks(self, tasks: list[TaskInfo]) -> list[TaskInfo]:
        """Every strategy's victims among the offered tasks, in strategy order."""
        assert self.ssn is not None
        victims: list[TaskInfo] = []
        for strategy in self.args.strategies:
            victims += strategy.victims(self.ssn, tasks)
        return victims

    def on_session_close(self, ssn: Session) -> None:
        """Drop the session."""
        self.ssn = None


def new(args: ReschedulingArgs) -> ReschedulingPlugin:
    """Build the plugin."""
    return ReschedulingPlugin(args)
