"""Arguments: the typed getters plugins and actions parse their `arguments` with, once at load."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from py_volcano.errors import ConfigError
from py_volcano.framework import Arguments, NoArgs

Getter = Callable[[Arguments, str], object]


def get_int(args: Arguments, key: str) -> object:
    return args.get_int(key, 7)


def get_float(args: Arguments, key: str) -> object:
    return args.get_float(key, 0.5)


def get_bool(args: Arguments, key: str) -> object:
    return args.get_bool(key, False)


def get_str(args: Arguments, key: str) -> object:
    return args.get_str(key, "default")


@pytest.mark.parametrize(
    ("getter", "value", "expected"),
    [
        pytest.param(get_int, 3, 3, id="int"),
        pytest.param(get_int, "-3", -3, id="int-string"),
        pytest.param(get_int, " 12 ", 12, id="int-string-spaces"),
        pytest.param(get_float, 2, 2.0, id="float-from-int"),
        pytest.param(get_float, 2.5, 2.5, id="float"),
        pytest.param(get_float, "1.25", 1.25, id="float-string"),
        pytest.param(get_bool, True, True, id="bool"),
        pytest.param(get_bool, "TRUE", True, id="bool-string-any-case"),
        pytest.param(get_bool, " false", False, id="bool-string-spaces"),
        pytest.param(get_str, "a,b", "a,b", id="str"),
    ],
)
def test_good_values_convert(getter: Getter, value: object, expected: object) -> None:
    """Each getter takes its YAML type and the string spelling of it."""
    result = getter(Arguments({"k": value}), "k")
    assert result == expected and type(result) is type(expected)


@pytest.mark.parametrize(
    ("getter", "value", "problem"),
    [
        pytest.param(get_int, "abc", "'abc' is not an integer", id="int-text"),
        pytest.param(get_int, 2.5, "2.5 is not an integer", id="int-float"),
        pytest.param(get_int, True, "True is not an integer", id="int-bool"),
        pytest.param(get_int, "", "'' is not an integer", id="int-empty-string"),
        pytest.param(get_int, None, "None is not an integer", id="int-null"),
        pytest.param(get_float, "x", "'x' is not a number", id="float-text"),
        pytest.param(get_float, False, "False is not a number", id="float-bool"),
        pytest.param(get_float, float("inf"), "inf is not a number", id="float-infinite"),
        pytest.param(get_bool, "yes", "'yes' is not true or false", id="bool-yes"),
        pytest.param(get_bool, 1, "1 is not true or false", id="bool-number"),
        pytest.param(get_str, 5, "5 is not a string", id="str-number"),
        pytest.param(get_str, ["a"], "['a'] is not a string", id="str-list"),
    ],
)
def test_bad_values_raise_naming_owner_key_and_value(getter: Getter, value: object, problem: str) -> None:
    """A value the getter cannot use is a ConfigError `<owner>: argument <key>: <value> is not <type>`."""
    with pytest.raises(ConfigError) as info:
        getter(Arguments({"k": value}, owner="test.conf: plugin p"), "k")
    assert str(info.value) == f"test.conf: plugin p: argument k: {problem}"


@pytest.mark.parametrize("getter", [get_int, get_float, get_bool, get_str])
def test_an_unset_key_gives_the_default(getter: Getter) -> None:
    """Defaults are the parser's, untouched."""
    defaults: dict[Getter, object] = {get_int: 7, get_float: 0.5, get_bool: False, get_str: "default"}
    assert getter(Arguments({}), "k") == defaults[getter]


def test_unread_lists_the_keys_no_getter_asked_for() -> None:
    """The loader warns about these; asking for an unset key does not make it unread."""
    args = Arguments({"a": 1, "b": 2, "c": 3})
    args.get_int("b", 0)
    args.get_int("z", 0)
    assert args.unread() == ["a", "c"]


def test_no_args_reads_nothing() -> None:
    """A plugin without arguments leaves every written key unread."""
    args = Arguments({"a": 1})
    assert NoArgs.parse(args) == NoArgs()
    assert args.unread() == ["a"]
