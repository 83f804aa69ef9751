"""overcommit: its `overcommit-factor` argument, parsed once when the configuration loads."""

from __future__ import annotations

import pytest

from py_volcano.errors import ConfigError
from py_volcano.plugins.overcommit import OvercommitArgs
from tests.unit.arguments import plugin_args


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        pytest.param({}, OvercommitArgs(factor=1.2), id="default"),
        pytest.param({"overcommit-factor": 2}, OvercommitArgs(factor=2.0), id="integer"),
        pytest.param({"overcommit-factor": "1.5"}, OvercommitArgs(factor=1.5), id="string"),
        pytest.param({"overcommit-factor": 1.0}, OvercommitArgs(factor=1.0), id="one"),
        pytest.param({"overcommit-factor": 0.5}, OvercommitArgs(factor=1.2), id="below-one-means-the-default"),
    ],
)
def test_factor_parses(arguments: dict[str, object], expected: OvercommitArgs) -> None:
    """Volcano's default 1.2; a factor below 1 falls back to it, as in Volcano."""
    assert plugin_args("overcommit", arguments) == expected


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        pytest.param("abc", "'abc'", id="text"),
        pytest.param(True, "True", id="bool"),
        pytest.param("nan", "'nan'", id="not-finite"),
        pytest.param(None, "None", id="empty"),
    ],
)
def test_a_bad_factor_is_a_config_error_naming_plugin_key_and_value(value: object, shown: str) -> None:
    """The configuration does not load; the error names the plugin, the key and the value."""
    with pytest.raises(ConfigError) as info:
        plugin_args("overcommit", {"overcommit-factor": value})
    assert str(info.value) == f"scheduler conf: plugin overcommit: argument overcommit-factor: {shown} is not a number"
