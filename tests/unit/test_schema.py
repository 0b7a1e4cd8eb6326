"""The declared schemas: strict about YAML's types, one line naming file, key path and fix, and
never imported with the plugin (a pytest run that reads no lab file must not pay for cattrs)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

import attrs
import pytest

from pytest_pinet.errors import ConfigError
from pytest_pinet.judge.threshold_rules import thresholds_from_data
from pytest_pinet.schema.checks import ForKeys, Integer, OneOf, Text
from pytest_pinet.schema.convert import hint, structure


@attrs.frozen
class Item:
    schema_label: ClassVar[str] = "name"

    name: Annotated[str, Text()]
    size: Annotated[int, Integer(1, 10)] = 1
    on: bool = False


@attrs.frozen
class Doc:
    items: tuple[Item, ...] = attrs.field(metadata=hint("list what the doc holds"))
    title: str = ""


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"items": [{"name": "a", "size": True}]},
            "f.yaml: items[0] (a).size must be an integer 1..10, got True",
        ),
        (
            {"items": [{"name": "a", "size": "3"}]},
            "f.yaml: items[0] (a).size must be an integer 1..10, got '3'",
        ),
        ({"items": [{"name": "a", "on": "yes"}]}, "f.yaml: items[0] (a).on must be true or false, got 'yes'"),
        ({"items": "abc"}, "f.yaml: items must be a list"),
        ({"items": [], "title": 5}, "f.yaml: title must be text, got 5"),
        ({"items": [{"name": "a", "colour": 1}]}, "f.yaml: items[0] (a): unknown keys ['colour']"),
        ({"items": [{"size": 2}]}, "f.yaml: items[0]: missing ['name']"),
        ({}, "f.yaml: missing ['items'] (list what the doc holds)"),
        ({"items": [], None: 1}, "f.yaml: unknown top-level keys [None]"),
        ([1], "f.yaml: expected a mapping (keys: ['items', 'title'])"),
    ],
)
def test_a_bad_value_is_one_line_with_file_path_and_fix(data, message):
    with pytest.raises(ConfigError) as info:
        structure(data, Doc, "f.yaml")
    assert str(info.value).startswith(message), str(info.value)


def test_a_good_document_reads_into_the_declared_classes():
    doc = structure({"items": [{"name": 7, "size": 3}, {"name": "b", "on": True}]}, Doc, "f.yaml")
    assert doc == Doc((Item("7", 3, False), Item("b", 1, True)))


@pytest.mark.parametrize("floor", [float("nan"), float("inf")])
def test_a_floor_that_no_figure_can_meet_is_refused(floor):
    with pytest.raises(ConfigError, match=r"rules\[0\] \(r\)\.min_mbps must be a positive number"):
        thresholds_from_data({"rules": [{"id": "r", "min_mbps": floor}]}, "t.yaml")


Size = Annotated[int, Integer(1, 10)]


@attrs.frozen
class Shelf:
    # One size for every colour, or one per colour.
    size: Size | Mapping[Annotated[str, OneOf(("red", "blue"))], Size]
    # Any text under any key, but "kind" must be one of two words.
    tags: Annotated[Mapping[str, str], ForKeys(kind=OneOf(("a", "b")))] = attrs.field(factory=dict)


@pytest.mark.parametrize(
    ("data", "read"),
    [
        ({"size": 3}, 3),
        ({"size": {"red": 2, "blue": 9}}, {"red": 2, "blue": 9}),
        ({"size": {"red": 11}}, "f.yaml: size.red must be an integer 1..10, got 11"),
        ({"size": {"green": 1}}, "f.yaml: size: is 'green' (use one of ['red', 'blue'])"),
        ({"size": "3"}, "f.yaml: size must be an integer 1..10, got '3'"),
        ({"size": 1, "tags": {"kind": "c", "x": "y"}}, "f.yaml: tags.kind is 'c' (use one of ['a', 'b'])"),
        ({"size": 1, "tags": {"kind": "a", "x": 5}}, "f.yaml: tags.x must be text, got 5"),
    ],
)
def test_one_value_or_one_per_key_and_checks_for_some_keys_of_a_mapping(data: Any, read: Any):
    if isinstance(read, str):
        with pytest.raises(ConfigError) as info:
            structure(data, Shelf, "f.yaml")
        assert str(info.value) == read
    else:
        assert structure(data, Shelf, "f.yaml").size == read


def test_the_plugin_imports_no_schema_library():
    code = (
        "import sys, pytest_pinet.plugin.hooks\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'cattrs' or 'schema' in m)\n"
        "print(loaded)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout
