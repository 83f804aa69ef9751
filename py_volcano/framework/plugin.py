"""The shapes of plugins and actions, and the registry that names them with their argument parsers."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from py_volcano.framework.arguments import Arguments

if TYPE_CHECKING:
    from py_volcano.api import JobInfo
    from py_volcano.framework.session import Session

__all__ = ["Action", "ActionEntry", "JobTaker", "Plugin", "PluginEntry", "Registry", "takes_jobs"]

ArgsT = TypeVar("ArgsT")


class Plugin(Protocol):
    """A plugin registers functions on a session when it opens and may report when it closes.

    Two hooks are optional: `report(ssn)` reports what its close would without closing (a session kept
    open for the fast path: `session.report_session`), and `on_job_added(ssn, job)` (`JobTaker`)."""

    name: str

    def on_session_open(self, ssn: Session) -> None: ...

    def on_session_close(self, ssn: Session) -> None: ...


class JobTaker(Protocol):
    """A plugin that counts a job added to its open session as it would have counted it at open."""

    def on_job_added(self, ssn: Session, job: JobInfo) -> None: ...


def takes_jobs(plugin: Plugin) -> bool:
    """Whether the plugin can take jobs into an open session (`Session.add_job`)."""
    return callable(getattr(plugin, "on_job_added", None))


class Action(Protocol):
    """An action runs once per cycle over the session."""

    name: str

    def execute(self, ssn: Session) -> None: ...


@dataclass(slots=True, frozen=True)
class PluginEntry(Generic[ArgsT]):
    """A plugin's `parse` (its `arguments` into its frozen Args, once at load) and `new` (per session)."""

    parse: Callable[[Arguments], ArgsT]
    new: Callable[[ArgsT], Plugin]


@dataclass(slots=True, frozen=True)
class ActionEntry(Generic[ArgsT]):
    """An action's `parse` (its `configurations` arguments into its frozen Args, once at load) and `new`."""

    parse: Callable[[Arguments], ArgsT]
    new: Callable[[ArgsT], Action]


@dataclass(slots=True, frozen=True)
class Registry:
    """The plugins and actions a scheduler knows, by name."""

    plugins: Mapping[str, PluginEntry[Any]]
    actions: Mapping[str, ActionEntry[Any]]
