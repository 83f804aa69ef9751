"""Go durations (`time.ParseDuration`): the format of Volcano's time annotations and arguments.

`sla-waiting-time: 1h2m3s`, `volcano.sh/cooldown-time: 600s`: a sign, then one or more decimal numbers
each with a unit (`ns`, `us`/`µs`, `ms`, `s`, `m`, `h`); `0` alone needs no unit.
"""

from __future__ import annotations

import re

__all__ = ["parse_duration"]

_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "\u00b5s": 1e-6,  # micro sign
    "\u03bcs": 1e-6,  # Greek mu
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Return the duration in seconds; ValueError names the text when Go would refuse it."""
    body = text[1:] if text[:1] in ("-", "+") else text
    sign = -1.0 if text[:1] == "-" else 1.0
    if body == "0":
        return 0.0
    if not body:
        raise ValueError(f"invalid duration {text!r}")
    seconds = 0.0
    position = 0
    while position < len(body):
        part = _PART.match(body, position)
        if part is None:
            raise ValueError(f"invalid duration {text!r}")
        seconds += float(part.group(1)) * _UNITS[part.group(2)]
        position = part.end()
    return sign * seconds
