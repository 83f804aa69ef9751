"""The scheduling framework: configuration, sessions, tiers and extension points, statements."""

from scheduler.framework.conf import SWITCHES, Arguments, PluginOption, SchedulerConf, default_conf_text, parse_conf
from scheduler.framework.cycle import run_cycle
from scheduler.framework.extension_points import CycleState, EventHandler, PredicateStatus, ValidateResult
from scheduler.framework.plugin import Action, ActionBuilder, Plugin, PluginBuilder, Registry
from scheduler.framework.priority_queue import PriorityQueue, ordered
from scheduler.framework.results import CycleResult, PodGroupStatus, QueueFigures
from scheduler.framework.session import IndexArray, Session, close_session, open_session
from scheduler.framework.statement import Operation, Statement

__all__ = [
    "SWITCHES",
    "Action",
    "ActionBuilder",
    "Arguments",
    "CycleResult",
    "CycleState",
    "EventHandler",
    "IndexArray",
    "Operation",
    "Plugin",
    "PluginBuilder",
    "PluginOption",
    "PodGroupStatus",
    "PredicateStatus",
    "PriorityQueue",
    "QueueFigures",
    "Registry",
    "SchedulerConf",
    "Session",
    "Statement",
    "ValidateResult",
    "close_session",
    "default_conf_text",
    "open_session",
    "ordered",
    "parse_conf",
    "run_cycle",
]
