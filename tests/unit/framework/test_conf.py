"""volcano-scheduler.conf parsing: switches, arguments, configurations and errors."""

from __future__ import annotations

import pytest

from py_volcano.errors import ConfigError
from py_volcano.framework import Arguments, parse_conf

ACTIONS = {"enqueue", "allocate", "backfill", "preempt"}
PLUGINS = {"priority", "gang", "capacity", "binpack"}


def parse(text: str):  # type: ignore[no-untyped-def]
    return parse_conf(text, actions=ACTIONS, plugins=PLUGINS, source="test.conf")


def test_switches_default_on_and_both_spellings_are_read() -> None:
    """An unwritten switch means on; enabledXxx and enableXxx both count."""
    conf = parse(
        """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
    enablePreemptable: false
  - name: capacity
    enableHierarchy: true
    enabledJobOrder: false
"""
    )
    gang, capacity = conf.tiers[0]
    assert not gang.is_enabled("preemptable")
    assert gang.is_enabled("job_order")
    assert capacity.is_enabled("hierarchy") and not capacity.is_enabled("job_order")
    assert conf.actions == ("enqueue", "allocate")


def test_arguments_and_configurations() -> None:
    """Plugin arguments and per-action configurations are kept."""
    conf = parse(
        """
actions: "allocate, preempt"
tiers:
- plugins:
  - name: binpack
    arguments:
      binpack.weight: 10
configurations:
- name: preempt
  arguments:
    enableTopologyAwarePreemption: true
"""
    )
    assert conf.tiers[0][0].arguments == {"binpack.weight": 10}
    assert conf.configurations["preempt"]["enableTopologyAwarePreemption"] is True


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param('actions: "enqueue, shuffle"', "action 'shuffle' is unknown", id="unknown-action"),
        pytest.param('actions: "allocate"\ntiers:\n- plugins:\n  - name: magic', "plugin 'magic' is unknown", id="unknown-plugin"),
        pytest.param("tiers: []", "key actions: Field required", id="missing-actions"),
        pytest.param("actions: [", "not valid YAML", id="bad-yaml"),
        pytest.param('actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n    enableJobOrder: maybe', "expected true or false", id="bad-switch"),
    ],
)
def test_errors_name_source_and_culprit(text: str, message: str) -> None:
    """ConfigError names the file and what is wrong."""
    with pytest.raises(ConfigError, match=message) as info:
        parse(text)
    assert str(info.value).startswith("test.conf")


def test_unknown_plugin_key_warns() -> None:
    """An unknown key is reported but does not stop the configuration."""
    with pytest.warns(UserWarning, match="unknown key 'enableMagic'"):
        parse('actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n    enableMagic: true')


def test_arguments_typed_getters_warn_and_keep_default() -> None:
    """Arguments.get_* convert strings and keep the default on bad values."""
    args = Arguments({"a": "3", "b": "x", "c": "true", "d": 2.5}, owner="plugin p")
    assert args.get_int("a", 1) == 3
    assert args.get_bool("c", False) is True
    assert args.get_float("d", 0.0) == 2.5
    with pytest.warns(UserWarning, match="argument b"):
        assert args.get_int("b", 7) == 7
