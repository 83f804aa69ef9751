"""The scheduling framework: configuration, sessions, tiers and extension points, statements."""

from py_volcano.framework.arguments import Arguments, NoArgs
from py_volcano.framework.backlog import shares_backlog
from py_volcano.framework.cluster_total import overcommitted_in
from py_volcano.framework.conf import PluginOption, SchedulerConf, default_conf_text, parse_conf
from py_volcano.framework.cycle import run_cycle
from py_volcano.framework.extension_points import (
    SWITCHES,
    CycleState,
    EventHandler,
    EvictionContext,
    EvictionKind,
    PredicateStatus,
    ValidateResult,
)
from py_volcano.framework.memory import PluginMemory, SpecState
from py_volcano.framework.node_search import NodesToFind
from py_volcano.framework.placements import ReleasedTasks
from py_volcano.framework.plugin import Action, ActionEntry, JobTaker, Plugin, PluginEntry, Registry, takes_jobs
from py_volcano.framework.priority_queue import PriorityQueue, ordered
from py_volcano.framework.session import IndexArray, Session, close_session, end_session, open_session, report_session
from py_volcano.framework.statement import Operation, Statement

__all__ = [
    "SWITCHES",
    "Action",
    "ActionEntry",
    "Arguments",
    "CycleState",
    "EventHandler",
    "EvictionContext",
    "EvictionKind",
    "IndexArray",
    "JobTaker",
    "NoArgs",
    "NodesToFind",
    "Operation",
    "Plugin",
    "PluginEntry",
    "PluginMemory",
    "PluginOption",
    "PredicateStatus",
    "PriorityQueue",
    "Registry",
    "ReleasedTasks",
    "SchedulerConf",
    "Session",
    "SpecState",
    "Statement",
    "ValidateResult",
    "close_session",
    "default_conf_text",
    "end_session",
    "open_session",
    "ordered",
    "overcommitted_in",
    "parse_conf",
    "report_session",
    "run_cycle",
    "shares_backlog",
    "takes_jobs",
]
