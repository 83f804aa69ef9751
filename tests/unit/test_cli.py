"""`py-volcano simulate` exit codes and one-line errors (docs/scenarios.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from py_volcano.cli import main
from tests.builders import node, pod

GOOD = {
    "name": "tiny",
    "schedulerConfig": 'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n',
    "objects": [node(name="n1"), pod(name="p")],
    "expect": {"bound": {"default/p": "n1"}, "boundCount": 1},
}

BAD_BINPACK_WEIGHT = (
    'actions: "allocate"\ntiers:\n- plugins:\n  - name: binpack\n    arguments:\n      binpack.weight: abc'
)


def write(tmp_path: Path, name: str, content: object) -> Path:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else yaml.safe_dump(content))
    return path


def test_passing_scenario_exits_0_with_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Exit 0 and the report of docs/scenarios.md."""
    assert main(["simulate", str(write(tmp_path, "s.yaml", GOOD))]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and report["binds"] == {"default/p": "n1"}
    assert set(report) >= {"scenario", "failures", "warnings", "evictions", "podGroups", "queues", "cycleSeconds"}


def test_failing_expectation_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Exit 1 and a failure line per broken expectation."""
    bad = {**GOOD, "expect": {"bound": {"default/p": "n2"}}}
    assert main(["simulate", str(write(tmp_path, "s.yaml", bad))]) == 1
    assert json.loads(capsys.readouterr().out)["failures"] == ["bound: default/p expected on n2, but it is on n1"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param("name: [", "not valid YAML", id="yaml"),
        pytest.param(
            {**GOOD, "objects": [node(name="n1", cpu="many")]}, "Node n1: field status.allocatable.cpu", id="quantity"
        ),
        pytest.param(
            {**GOOD, "schedulerConfig": BAD_BINPACK_WEIGHT},
            "plugin binpack: argument binpack.weight: 'abc' is not an integer",
            id="plugin-argument",
        ),
        pytest.param(
            {k: v for k, v in GOOD.items() if k != "expect"}, "expect: missing required field", id="missing-field"
        ),
        pytest.param(
            {**GOOD, "objects": [{"apiVersion": "v1", "kind": "Node", "metadata": {}}]},
            "metadata.name",
            id="missing-name",
        ),
    ],
)
def test_invalid_scenario_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: object, message: str
) -> None:
    """Exit 2 with a one-line error naming the file and the culprit."""
    path = write(tmp_path, "bad.yaml", content)
    assert main(["simulate", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err and message in err


def test_unknown_action_and_plugin_are_warnings_and_the_rest_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An action or plugin py-volcano lacks no longer makes the file invalid (changed on purpose, as Volcano
    runs the rest): the scenario is played and each name is a warning."""
    conf = 'actions: "allocate, dance"\ntiers:\n- plugins:\n  - name: magic\n  - name: gang'
    path = write(tmp_path, "s.yaml", {**GOOD, "schedulerConfig": conf})
    assert main(["simulate", str(path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["binds"] == {"default/p": "n1"}
    assert report["warnings"][:2] == [
        f"{path}: schedulerConfig: action 'dance' is not supported by py-volcano; it is skipped and the rest runs",
        f"{path}: schedulerConfig: plugin 'magic' is not supported by py-volcano; it is skipped and the rest runs",
    ]


def test_run_with_a_bad_plugin_argument_exits_2_before_connecting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`py-volcano run` does not start on a configuration whose argument value it cannot use."""
    text = "actions: allocate\ntiers:\n- plugins:\n  - name: nodeorder\n    arguments:\n      nodeaffinity.weight: x"
    path = write(tmp_path, "volcano-scheduler.conf", text)
    assert main(["run", "--scheduler-conf", str(path), "--kubeconfig", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {path}: plugin nodeorder: argument nodeaffinity.weight: 'x' is not an integer"


def test_every_file_is_run_and_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Several files: a JSON list, one report each; the worst exit code wins."""
    good = write(tmp_path, "good.yaml", GOOD)
    bad = write(tmp_path, "bad.yaml", {**GOOD, "expect": {"boundCount": 5}})
    assert main(["simulate", str(good), str(bad)]) == 1
    reports = json.loads(capsys.readouterr().out)
    assert [r["ok"] for r in reports] == [True, False]


def test_cluster_states_a_real_cluster_can_hold_are_warnings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A PodGroup naming a missing queue is warned about; the rest still schedules."""
    from tests.builders import pod_group

    scenario = {
        **GOOD,
        "objects": [node(name="n1"), pod_group(name="g", queue="ghost"), pod(name="g-0", group="g"), pod(name="p")],
        "expect": {"bound": {"default/p": "n1"}, "unbound": ["default/g-0"]},
    }
    assert main(["simulate", str(write(tmp_path, "s.yaml", scenario))]) == 0
    assert any("ghost" in w for w in json.loads(capsys.readouterr().out)["warnings"])
