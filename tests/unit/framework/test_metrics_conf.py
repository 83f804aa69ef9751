"""The `metrics` section of volcano-scheduler.conf: Volcano's keys, its defaults, and errors naming the key."""

from __future__ import annotations

import warnings

import pytest

from py_volcano.api import MetricsConf
from py_volcano.errors import ConfigError
from py_volcano.framework import SchedulerConf
from py_volcano.registry import load_conf

HEAD = "actions: allocate\ntiers:\n- plugins:\n  - name: usage\n"


def parse(metrics: str) -> SchedulerConf:
    return load_conf(HEAD + metrics, source="test.conf")


def test_no_section_collects_nothing() -> None:
    conf = load_conf(HEAD, source="test.conf")
    assert conf.metrics == MetricsConf() and not conf.metrics.collects and conf.metrics.interval == 30.0


def test_volcanos_prometheus_section() -> None:
    """Volcano's documented section: string values, the flat `tls.insecureSkipVerify` key."""
    conf = parse(
        "metrics:\n  type: prometheus\n  address: https://prom.monitoring:9090/\n  interval: 1m30s\n"
        '  tls.insecureSkipVerify: "true"\n'
    )
    assert conf.metrics == MetricsConf(
        type="prometheus", address="https://prom.monitoring:9090", interval=90.0, insecure_skip_verify=True
    )
    assert conf.metrics.collects


def test_nested_tls_map_and_default_interval() -> None:
    """The design document's nested `tls:` map reads the same; no interval means 30s."""
    conf = parse("metrics:\n  type: prometheus\n  address: http://p:9090\n  tls:\n    insecureSkipVerify: false\n")
    assert conf.metrics == MetricsConf(type="prometheus", address="http://p:9090")


@pytest.mark.parametrize("kind", ["elasticsearch", "prometheus_adaptor"])
def test_a_source_py_volcano_does_not_read_warns_and_collects_nothing(kind: str) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        conf = parse(f"metrics:\n  type: {kind}\n  address: http://es:9200\n")
    assert not conf.metrics.collects
    assert [str(w.message) for w in caught] == [
        f"test.conf: key metrics.type: {kind!r} is not supported by py-volcano (only prometheus); "
        "node usage is not collected"
    ]


@pytest.mark.parametrize(
    ("section", "message"),
    [
        pytest.param("metrics: [prometheus]", "test.conf: key metrics: Input should be a valid dictionary", id="list"),
        pytest.param("metrics: {type: graphite}", "key metrics.type: 'graphite' is not a metrics source", id="type"),
        pytest.param("metrics: {type: prometheus}", "key metrics.address: expected an http:// or https:// URL",
                     id="no-address"),
        pytest.param("metrics: {type: prometheus, address: 'prom:9090'}", "key metrics.address: .*'prom:9090'",
                     id="address"),
        pytest.param("metrics: {type: prometheus, address: 'http://p', interval: often}",
                     "key metrics.interval: expected a positive duration such as 30s, got 'often'", id="interval"),
        pytest.param("metrics: {type: prometheus, address: 'http://p', interval: 0s}",
                     "key metrics.interval: .* got '0s'", id="zero-interval"),
        pytest.param("metrics: {type: prometheus, address: 'http://p', tls.insecureSkipVerify: maybe}",
                     "key metrics.tls.insecureSkipVerify: expected true or false, got 'maybe'", id="tls"),
        pytest.param("metrics: {type: prometheus, address: 'http://p', interval: [1]}",
                     "key metrics.interval: expected a string, got \\[1\\]", id="interval-list"),
    ],
)
def test_a_bad_value_names_the_key(section: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse(section + "\n")
