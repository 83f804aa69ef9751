"""A plugin's or action's `arguments` map, read once into its typed, frozen `Args` when the configuration loads.

Each plugin and action declares a frozen dataclass with a `parse(args: Arguments)` classmethod that
reads its keys with the typed getters below. A bad value is a ConfigError naming the owner (source and
plugin or action), the key and the value; a key nobody reads is reported by the loader (Volcano ignores
it). Values are what YAML gives Volcano's getters, plus the string spellings a ConfigMap author may
write ("3", "true").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from py_volcano.api import parse_duration
from py_volcano.errors import ConfigError

__all__ = ["Arguments", "NoArgs"]

T = TypeVar("T")


class Arguments:
    """One `arguments` map and who it belongs to; typed getters raise ConfigError on a value they cannot use."""

    __slots__ = ("_read", "_values", "owner")

    def __init__(self, values: Mapping[str, object] | None = None, *, owner: str = "arguments") -> None:
        self._values = dict(values or {})
        self._read: set[str] = set()
        self.owner = owner

    def error(self, key: str, problem: str) -> ConfigError:
        """Return the ConfigError for `key`: `<owner>: argument <key>: <problem>`."""
        return ConfigError(f"{self.owner}: argument {key}: {problem}")

    def unread(self) -> list[str]:
        """Return the keys no getter asked for, in written order."""
        return [key for key in self._values if key not in self._read]

    def _typed(self, key: str, default: T, convert: Callable[[object], T | None], expected: str) -> T:
        self._read.add(key)
        if key not in self._values:
            return default
        value = self._values[key]
        converted = convert(value)
        if converted is None:
            raise self.error(key, f"{value!r} is not {expected}")
        return converted

    def get_int(self, key: str, default: int) -> int:
        """Return an integer argument (an int, or a string holding one)."""
        return self._typed(key, default, _to_int, "an integer")

    def get_float(self, key: str, default: float) -> float:
        """Return a finite number argument (an int, a float, or a string holding one)."""
        return self._typed(key, default, _to_float, "a number")

    def get_bool(self, key: str, default: bool) -> bool:
        """Return a boolean argument (`true`/`false`, any case, as strings too)."""
        return self._typed(key, default, _to_bool, "true or false")

    def get_str(self, key: str, default: str) -> str:
        """Return a string argument."""
        return self._typed(key, default, _to_str, "a string")

    def get_duration(self, key: str, default: float) -> float:
        """Return a duration in seconds, written as Go's time.ParseDuration reads it (`100ms`, `1m30s`, `2h`)."""
        return self._typed(key, default, _to_duration, "a duration such as 100ms, 30s, 5m or 1h")

    def get_value(self, key: str) -> object | None:
        """Return an argument as written (None when absent), for structured values its owner checks itself."""
        self._read.add(key)
        return self._values.get(key)

    def keys(self) -> list[str]:
        """Return the keys written, in written order (reading one still goes through a getter)."""
        return list(self._values)


def _to_int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip():
        try:
            return int(value)
        except ValueError:
            return None
    return None


def _to_float(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    number: float | None = None
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str) and value.strip():
        try:
            number = float(value)
        except ValueError:
            return None
    return number if number is not None and math.isfinite(number) else None


def _to_bool(value: object) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


def _to_str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _to_duration(value: object) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return parse_duration(value.strip())
    except ValueError:
        return None


@dataclass(slots=True, frozen=True)
class NoArgs:
    """The arguments of a plugin or action that reads none (every key written is reported unknown)."""

    @classmethod
    def parse(cls, args: Arguments) -> NoArgs:
        """Read nothing."""
        return cls()
