"""Kubernetes resource quantities: parse `500m`, `4Gi`, `1e3` and format them back."""

from __future__ import annotations

import functools
import re
from decimal import Decimal, DecimalException

__all__ = ["format_cpu", "format_memory", "format_scalar", "parse_quantity"]

_SUFFIXES: dict[str, Decimal] = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}
#: Kubernetes converts quantities to int64 (`Quantity.Value`); anything larger cannot be a real amount.
_LIMIT = Decimal(2**63 - 1)
_MAX = float(_LIMIT)
_PATTERN = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$")


def parse_quantity(value: object) -> float:
    """Return the quantity's value in base units (cores, bytes, count); raise ValueError when malformed."""
    if type(value) is str:
        return _parse_text(value)
    if isinstance(value, bool):
        raise ValueError(f"not a quantity: {value!r}")
    if isinstance(value, int | float):
        if not abs(value) <= _MAX:  # also refuses NaN
            raise ValueError(f"quantity out of range: {value!r}")
        return float(value)
    if not isinstance(value, str):
        raise ValueError(f"not a quantity: {value!r}")
    return _parse_text(value)


@functools.lru_cache(maxsize=4096)
def _parse_text(value: str) -> float:
    """Parse a quantity string (kept for the few thousand distinct strings a cluster repeats in every pod)."""
    match = _PATTERN.match(value.strip())
    if match is None:
        raise ValueError(f"not a quantity: {value!r}")
    number, suffix = match.groups()
    try:
        amount = Decimal(number) * _SUFFIXES[suffix or ""]
    except DecimalException as exc:  # an exponent beyond Decimal's range (`1e1000000`) overflows
        raise ValueError(f"quantity out of range: {value!r}") from exc
    if abs(amount) > _LIMIT:
        raise ValueError(f"quantity out of range: {value!r}")
    return float(amount)


def _trim(number: float) -> str:
    text = f"{number:.3f}".rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"


def format_cpu(milli_cpu: float) -> str:
    """Format milli-CPU as a quantity: whole cores as `2`, the rest as `500m`."""
    if abs(milli_cpu - round(milli_cpu / 1000) * 1000) < 0.5:
        return str(round(milli_cpu / 1000))
    return f"{_trim(milli_cpu)}m"


def format_memory(memory: float) -> str:
    """Format bytes as the largest exact binary suffix (`4Gi`), else plain bytes."""
    for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
        unit = float(_SUFFIXES[suffix])
        if memory >= unit and abs(memory / unit - round(memory / unit)) < 1e-9:
            return f"{round(memory / unit)}{suffix}"
    return _trim(memory)


def format_scalar(milli_value: float) -> str:
    """Format a scalar resource held in milli units (`1000` -> `1`)."""
    return _trim(milli_value / 1000)
