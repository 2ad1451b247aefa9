"""`-o yaml` holds the same data as `-o json`, on every command that has `-o json`."""

from __future__ import annotations

import json

import pytest
import yaml

from k3deploy.cli.output import as_yaml
from tests.conftest import run_cli


@pytest.mark.parametrize(
    "args", [("profiles",), ("plan", "-p", "kimi-k3-gb300-tp16"), ("plan", "-p", "local-cpu")], ids=str
)
def test_yaml_is_the_json_document(args: tuple[str, ...]) -> None:
    as_json, as_yml = run_cli(*args, "-o", "json"), run_cli(*args, "-o", "yaml")
    assert as_json.returncode == as_yml.returncode == 0, as_yml.stderr
    assert yaml.safe_load(as_yml.stdout) == json.loads(as_json.stdout)


def test_a_stream_document_starts_with_its_marker_and_long_strings_stay_on_one_line() -> None:
    text = as_yaml({"b": "x" * 300, "a": [1]}, document=True)
    assert text.splitlines() == ["---", "b: " + "x" * 300, "a:", "- 1"]
