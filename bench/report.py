"""Medians over repeated runs and the plain-text tables the benchmarks print."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["median_of", "print_table", "ratio"]


def median_of(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Return one record whose numbers are the medians of `runs` (other values from the first run).

    Nested mappings are merged the same way; a key missing or None in some runs takes the median of the
    others. The record gets `runs` (how many were merged).
    """
    if not runs:
        return {}
    out: dict[str, Any] = {}
    for key, first in runs[0].items():
        values = [run.get(key) for run in runs]
        if isinstance(first, Mapping):
            out[key] = median_of([v for v in values if isinstance(v, Mapping)])
            out[key].pop("runs", None)
        elif isinstance(first, bool) or not isinstance(first, int | float):
            out[key] = first
        else:
            numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
            median = statistics.median(numbers) if numbers else None
            out[key] = round(median, 3) if isinstance(median, float) else median
    out["runs"] = len(runs)
    return out


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """Return numerator / denominator rounded to 3 places, None when either is missing or zero."""
    if not numerator or not denominator:
        return None
    return round(numerator / denominator, 3)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value)


def print_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[tuple[str, str]]) -> None:
    """Print `rows` as an aligned table of `columns` (key, heading); a missing value prints '-'."""
    cells = [[heading for _, heading in columns]]
    cells += [[_cell(row.get(key)) for key, _ in columns] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    for n, line in enumerate(cells):
        print("  ".join(c.rjust(w) if n else c.ljust(w) for c, w in zip(line, widths, strict=True)))
    print(flush=True)
