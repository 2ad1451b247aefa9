"""`k3deploy profiles` and `k3deploy schema`: the built-in list, and a JSON Schema an editor can validate profiles with."""

from __future__ import annotations

import json
from importlib import resources

import jsonschema
import pytest
import yaml

from tests.conftest import run_cli


def test_profiles_json_lists_each_builtin_with_its_target_and_model() -> None:
    result = run_cli("profiles", "-o", "json")
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: (row["target"], row["model"]) for row in json.loads(result.stdout)}
    assert rows == {
        "cluster-cpu": ("kubernetes", "rehearsal-llama-tiny"),
        "kimi-k3-gb300-tp16": ("kubernetes", "moonshotai/Kimi-K3"),
        "local-cpu": ("local", "rehearsal-llama-tiny"),
    }


def _schema() -> dict:
    result = run_cli("schema")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("name", ["cluster-cpu", "kimi-k3-gb300-tp16", "local-cpu"])
def test_schema_accepts_the_builtin_profile_files(name: str) -> None:
    text = resources.files("k3deploy.profile.builtin").joinpath(f"{name}.yaml").read_text(encoding="utf-8")
    jsonschema.validate(yaml.safe_load(text), _schema())


def test_schema_rejects_unknown_keys_and_wrong_types() -> None:
    schema = _schema()
    base = yaml.safe_load(
        resources.files("k3deploy.profile.builtin").joinpath("local-cpu.yaml").read_text(encoding="utf-8")
    )
    with pytest.raises(jsonschema.ValidationError, match="'bogus' was unexpected"):
        jsonschema.validate({**base, "bogus": 1}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**base, "vllm": {**base["vllm"], "port": "eighty"}}, schema)
