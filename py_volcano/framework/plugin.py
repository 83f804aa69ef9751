"""The shapes of plugins and actions, and the registry that names them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from py_volcano.framework.conf import Arguments

if TYPE_CHECKING:
    from py_volcano.framework.session import Session

__all__ = ["Action", "ActionBuilder", "Plugin", "PluginBuilder", "Registry"]


class Plugin(Protocol):
    """A plugin registers functions on a session when it opens and may report when it closes."""

    name: str

    def on_session_open(self, ssn: Session) -> None: ...

    def on_session_close(self, ssn: Session) -> None: ...


class Action(Protocol):
    """An action runs once per cycle over the session."""

    name: str

    def execute(self, ssn: Session) -> None: ...


PluginBuilder = Callable[[Arguments], Plugin]
ActionBuilder = Callable[[Arguments], Action]


@dataclass(slots=True, frozen=True)
class Registry:
    """The plugins and actions a scheduler knows, by name."""

    plugins: Mapping[str, PluginBuilder]
    actions: Mapping[str, ActionBuilder]
