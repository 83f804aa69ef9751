"""`--podgroup-controller` / `--no-podgroup-controller`: parsed into the settings, on by default, documented."""

from __future__ import annotations

import pytest

from py_volcano.cli import build_parser
from py_volcano.settings import Settings
from tests.unit.deploy import operations_doc


@pytest.mark.parametrize(
    ("flags", "enabled"),
    [
        pytest.param([], True, id="default-on"),
        pytest.param(["--no-podgroup-controller"], False, id="off"),
        pytest.param(["--podgroup-controller"], True, id="on"),
    ],
)
def test_the_flag_sets_the_controller(flags: list[str], enabled: bool) -> None:
    args = build_parser().parse_args(["run", *flags])
    assert Settings.from_args(args).controller.enabled is enabled


def test_both_spellings_are_in_the_operations_table() -> None:
    assert {"--podgroup-controller", "--no-podgroup-controller"} <= operations_doc.flags()
