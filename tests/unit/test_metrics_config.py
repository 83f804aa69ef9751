"""The `volcano_config_unsupported` gauge: one series per action or plugin the loaded configuration skips."""

from __future__ import annotations

from py_volcano.metrics import Metrics
from py_volcano.registry import load_conf

UNSUPPORTED = 'actions: "enqueue, dance, allocate"\ntiers:\n- plugins:\n  - name: gang\n  - name: magic\n'


def _series(metrics: Metrics) -> list[str]:
    return [line for line in metrics.render().decode().splitlines() if line.startswith("volcano_config_unsupported{")]


def test_each_skipped_name_is_a_series_of_1() -> None:
    metrics = Metrics()
    metrics.observe_conf(load_conf(UNSUPPORTED))
    assert _series(metrics) == [
        'volcano_config_unsupported{kind="action",name="dance"} 1.0',
        'volcano_config_unsupported{kind="plugin",name="magic"} 1.0',
    ]


def test_a_reload_replaces_the_series() -> None:
    """A name the new configuration no longer holds loses its series; a clean file leaves none."""
    metrics = Metrics()
    metrics.observe_conf(load_conf(UNSUPPORTED))
    metrics.observe_conf(load_conf(UNSUPPORTED.replace("dance, ", "")))
    assert _series(metrics) == ['volcano_config_unsupported{kind="plugin",name="magic"} 1.0']
    metrics.observe_conf(load_conf(None))
    assert _series(metrics) == []
