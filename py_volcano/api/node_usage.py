"""A node's measured CPU and memory load, and the `metrics` section that says where it comes from.

Volcano's cache asks a metrics source, every `metrics.interval`, for each node's CPU and memory usage
averaged over the last `METRICS_PERIOD`, and stamps it with the time of the answer; the usage plugin
ignores usage older than five minutes. A node never measured has no usage (`NodeInfo.usage` is None),
which the plugin treats as stale.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from py_volcano.api.duration import parse_duration
from py_volcano.errors import ConfigError

__all__ = [
    "DEFAULT_METRICS_INTERVAL",
    "METRICS_PERIOD",
    "METRICS_TYPES",
    "PROMETHEUS",
    "UNSUPPORTED_METRICS_TYPES",
    "MetricsConf",
    "NodeUsage",
]

METRICS_PERIOD = "10m"
"""The window the usage is averaged over (Volcano's NODE_METRICS_PERIOD)."""
DEFAULT_METRICS_INTERVAL = 30.0
"""Seconds between two collections when `metrics.interval` is not written (Volcano's default)."""
PROMETHEUS = "prometheus"
UNSUPPORTED_METRICS_TYPES = frozenset({"prometheus_adaptor", "elasticsearch"})
"""Sources Volcano reads that py-volcano does not: accepted, reported, and nothing is collected."""
METRICS_TYPES = frozenset({PROMETHEUS}) | UNSUPPORTED_METRICS_TYPES

_TLS_SKIP_VERIFY = "tls.insecureSkipVerify"


@dataclass(slots=True, frozen=True)
class NodeUsage:
    """Usage percentages (0-100) averaged over `METRICS_PERIOD`, and when they were collected."""

    cpu: float
    memory: float
    metrics_time: datetime


@dataclass(slots=True, frozen=True)
class MetricsConf:
    """The `metrics` section of volcano-scheduler.conf; `type` empty means no usage is collected."""

    type: str = ""
    """`type`: `prometheus` (collected), `prometheus_adaptor` or `elasticsearch` (not supported here)."""
    address: str = ""
    """`address`: the source's base URL, e.g. `http://prometheus.monitoring:9090`."""
    interval: float = DEFAULT_METRICS_INTERVAL
    """`interval`: seconds between collections (a Go duration, `30s` by default)."""
    insecure_skip_verify: bool = False
    """`tls.insecureSkipVerify`: accept any certificate from an `https` address."""

    @property
    def collects(self) -> bool:
        """Whether py-volcano polls a source for node usage under this configuration."""
        return self.type == PROMETHEUS

    @classmethod
    def parse(cls, values: Mapping[str, object] | None, *, source: str) -> MetricsConf:
        """Read the section as Volcano does (string values; `tls` may also be a nested map).

        ConfigError names the key: an unknown `type`, a `prometheus` without `address`, an `interval`
        that is not a positive Go duration, a `tls.insecureSkipVerify` that is not true or false.
        """
        if values is None:
            return cls()
        if not isinstance(values, Mapping):
            raise ConfigError(f"{source}: key metrics: expected a map, got {values!r}")
        flat = _flatten(values, source)
        kind = flat.get("type", "")
        if kind and kind not in METRICS_TYPES:
            raise ConfigError(
                f"{source}: key metrics.type: {kind!r} is not a metrics source "
                f"(one of {', '.join(sorted(METRICS_TYPES))})"
            )
        address = flat.get("address", "")
        if kind == PROMETHEUS and not address.startswith(("http://", "https://")):
            raise ConfigError(f"{source}: key metrics.address: expected an http:// or https:// URL, got {address!r}")
        interval = DEFAULT_METRICS_INTERVAL
        if "interval" in flat:
            try:
                interval = parse_duration(flat["interval"])
            except ValueError:
                interval = 0.0
            if interval <= 0:
                raise ConfigError(
                    f"{source}: key metrics.interval: expected a positive duration such as 30s, "
                    f"got {flat['interval']!r}"
                )
        skip = flat.get(_TLS_SKIP_VERIFY, "false").lower()
        if skip not in ("true", "false"):
            raise ConfigError(f"{source}: key metrics.{_TLS_SKIP_VERIFY}: expected true or false, got {skip!r}")
        return cls(type=kind, address=address.rstrip("/"), interval=interval, insecure_skip_verify=skip == "true")


def _flatten(values: Mapping[str, object], source: str, prefix: str = "") -> dict[str, str]:
    """Return `key: string` pairs, nested maps joined with dots (`tls: {insecureSkipVerify: true}`)."""
    flat: dict[str, str] = {}
    for key, value in values.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(_flatten(value, source, f"{name}."))
        elif isinstance(value, bool):
            flat[name] = "true" if value else "false"
        elif isinstance(value, (str, int, float)):
            flat[name] = str(value)
        else:
            raise ConfigError(f"{source}: key metrics.{name}: expected a string, got {value!r}")
    return flat
