"""The scheduling framework: configuration, sessions, tiers and extension points, statements."""

from py_volcano.framework.conf import SWITCHES, Arguments, PluginOption, SchedulerConf, default_conf_text, parse_conf
from py_volcano.framework.cycle import run_cycle
from py_volcano.framework.extension_points import CycleState, EventHandler, PredicateStatus, ValidateResult
from py_volcano.framework.plugin import Action, ActionBuilder, Plugin, PluginBuilder, Registry
from py_volcano.framework.priority_queue import PriorityQueue, ordered
from py_volcano.framework.results import CycleResult, PodGroupStatus, QueueFigures
from py_volcano.framework.session import IndexArray, Session, close_session, open_session
from py_volcano.framework.statement import Operation, Statement

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
