"""volcano-scheduler.conf parsing: switches, arguments, configurations and errors."""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import pytest

from py_volcano.actions import ACTIONS, allocate, preempt
from py_volcano.errors import ConfigError
from py_volcano.framework import ActionEntry, NoArgs, Registry, SchedulerConf, open_session, parse_conf, run_cycle
from py_volcano.plugins import PLUGINS
from py_volcano.plugins.binpack import BinpackArgs, BinpackPlugin
from tests.builders import cluster, node, pod, pod_group

REGISTRY = Registry(
    plugins={name: PLUGINS[name] for name in ("priority", "gang", "capacity", "binpack")},
    actions={name: ACTIONS[name] for name in ("enqueue", "allocate", "backfill", "preempt")},
)


def parse(text: str) -> SchedulerConf:
    return parse_conf(text, REGISTRY, source="test.conf")


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
    """Plugin arguments and per-action configurations are parsed into their frozen Args; an action without
    configurations gets its defaults."""
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
    assert conf.tiers[0][0].args == BinpackArgs(weight=10)
    assert conf.action_args["preempt"] == preempt.PreemptArgs(enable_topology_aware_preemption=True)
    assert conf.action_args["allocate"] == NoArgs()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            'actions: "allocate"\ntiers:\n- plugins:\n  - name: drf\n    enableHierarchy: true\n  - name: proportion',
            "tiers\\[0\\]: proportion and drf with hierarchy enabled conflict",
            id="hierarchical-drf-beside-proportion",
        ),
        pytest.param("tiers: []", "key actions: Field required", id="missing-actions"),
        pytest.param("actions: [", "not valid YAML", id="bad-yaml"),
        pytest.param(
            'actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n    enableJobOrder: maybe',
            "expected true or false",
            id="bad-switch",
        ),
        pytest.param(
            'actions: "allocate"\ntiers:\n- plugins:\n  - name: binpack\n    arguments:\n      binpack.weight: abc',
            "plugin binpack: argument binpack.weight: 'abc' is not an integer",
            id="bad-plugin-argument",
        ),
        pytest.param(
            'actions: "allocate"\nconfigurations:\n- name: preempt\n  arguments:\n    minCandidateNodesAbsolute: 1.5',
            "action preempt: argument minCandidateNodesAbsolute: 1.5 is not an integer",
            id="bad-argument-of-an-action-not-run",
        ),
    ],
)
def test_errors_name_source_and_culprit(text: str, message: str) -> None:
    """ConfigError names the file and what is wrong."""
    with pytest.raises(ConfigError, match=message) as info:
        parse(text)
    assert str(info.value).startswith("test.conf")


def test_unknown_actions_and_plugins_are_skipped_and_listed() -> None:
    """Names the registry lacks do not refuse the file (a change made on purpose: Volcano logs a plugin it
    has no builder for and runs the rest); they are left out and listed once each, in written order."""
    conf = parse(
        """
actions: "enqueue, juggle, allocate, dance"
tiers:
- plugins:
  - name: priority
  - name: magic
    arguments: {magic.weight: abc}
- plugins:
  - name: magic
  - name: gang
configurations:
- name: juggle
  arguments: {anything: 1}
"""
    )
    assert conf.actions == ("enqueue", "allocate")
    assert [[option.name for option in tier] for tier in conf.tiers] == [["priority"], ["gang"]]
    assert conf.unsupported == (("action", "juggle"), ("action", "dance"), ("plugin", "magic"))
    assert "juggle" not in conf.action_args
    assert conf.unsupported_messages("test.conf") == [
        "test.conf: action 'juggle' is not supported by py-volcano; it is skipped and the rest runs",
        "test.conf: action 'dance' is not supported by py-volcano; it is skipped and the rest runs",
        "test.conf: plugin 'magic' is not supported by py-volcano; it is skipped and the rest runs",
    ]


def test_a_configuration_naming_an_unknown_plugin_still_schedules() -> None:
    """The rest of the configuration runs: the pod binds."""
    conf = parse('actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n  - name: wizard')
    result = run_cycle(cluster(node(name="n"), pod(name="p")), conf, REGISTRY)
    assert [(task.key, node_name) for task, node_name in result.binds] == [("default/p", "n")]


def test_hierarchical_drf_in_another_tier_than_proportion_is_accepted() -> None:
    """Volcano refuses the pair only inside one tier."""
    registry = Registry(plugins=PLUGINS, actions=ACTIONS)
    text = 'actions: "allocate"\ntiers:\n- plugins:\n  - name: drf\n    enableHierarchy: true\n'
    text += "- plugins:\n  - name: proportion"
    conf = parse_conf(text, registry)
    assert [option.name for tier in conf.tiers for option in tier] == ["drf", "proportion"]


def test_namespace_order_is_accepted_and_said_to_have_no_effect() -> None:
    """Volcano v1.8 removed namespace fair share: the switch is read by nothing, which the load says."""
    with pytest.warns(UserWarning, match="enableNamespaceOrder has no effect"):
        conf = parse('actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n    enableNamespaceOrder: true')
    assert conf.tiers[0][0].switches == {"namespace_order": True}


def test_unknown_plugin_key_warns() -> None:
    """An unknown key is reported but does not stop the configuration."""
    with pytest.warns(UserWarning, match="unknown key 'enableMagic'"):
        parse('actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n    enableMagic: true')


def test_an_unknown_argument_warns_once_at_load_and_never_per_cycle() -> None:
    """Volcano ignores an argument nobody reads; py-volcano also says so, when the configuration loads."""
    text = 'actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n    arguments:\n      gang.magic: 1'
    with pytest.warns(UserWarning) as caught:
        conf = parse(text)
    assert [str(w.message) for w in caught] == ["test.conf: plugin gang: unknown argument 'gang.magic' ignored"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run_cycle(cluster(node(name="n"), pod_group(name="g"), pod(name="g-0", group="g")), conf, REGISTRY)


def test_plugins_and_actions_are_built_from_the_args_parsed_at_load() -> None:
    """Nothing re-reads `arguments` per cycle: each cycle's plugins and actions get the loaded objects."""
    built: list[object] = []

    def new(args: object) -> Any:
        built.append(args)
        return allocate.new(NoArgs())

    registry = Registry(plugins=REGISTRY.plugins, actions={"allocate": ActionEntry(NoArgs.parse, new)})
    text = 'actions: "allocate"\ntiers:\n- plugins:\n  - name: binpack\n    arguments:\n      binpack.weight: "5"'
    conf = parse_conf(text, registry)
    for cycle in range(2):
        run_cycle(cluster(node(name="n")), conf, registry, cycle=cycle)
        ssn = open_session(cluster(node(name="n")), conf, registry)
        plugin = ssn.plugins["binpack"]
        assert isinstance(plugin, BinpackPlugin) and plugin.args is conf.tiers[0][0].args
    assert built == [conf.action_args["allocate"]] * 2 and built[0] is conf.action_args["allocate"]


def test_the_parsed_configuration_is_frozen() -> None:
    """Switches and parsed arguments cannot be changed once loaded."""
    conf = parse('actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n    enableJobOrder: false')
    with pytest.raises(TypeError):
        conf.tiers[0][0].switches["job_order"] = True  # type: ignore[index]
    with pytest.raises(TypeError):
        conf.action_args["allocate"] = NoArgs()  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        conf.tiers[0][0].args = NoArgs()  # type: ignore[misc]
