"""Profiles layered in order (`-p a -p b`, later wins) and `--set` with list indices, as Helm's -f and --set."""

from __future__ import annotations

from pathlib import Path

import pytest

from k3deploy.errors import ProfileError
from k3deploy.profile import load_profile
from k3deploy.profile.load import load_raw
from k3deploy.profile.overrides import apply_overrides, key_path, merge
from tests.conftest import EXAMPLE_SETS, run_cli


def test_merge_goes_key_by_key_and_replaces_lists_whole() -> None:
    base = {"a": {"x": 1, "y": [1, 2]}, "b": 1}
    assert merge(base, {"a": {"y": [3]}, "c": 2}) == {"a": {"x": 1, "y": [3]}, "b": 1, "c": 2}
    assert base == {"a": {"x": 1, "y": [1, 2]}, "b": 1}  # not changed in place


def test_key_paths_take_indices() -> None:
    assert key_path("a.b[0].c") == ["a", "b", 0, "c"]
    assert key_path("m[1][2]") == ["m", 1, 2]
    with pytest.raises(ProfileError, match=r"'b\[x\]' is not a field name or name\[index\]"):
        key_path("a.b[x]")


def test_set_with_indices_replaces_appends_and_refuses_a_gap() -> None:
    data = {"a": {"b": ["x", "y"]}}
    assert apply_overrides(data, ["a.b[1]=z"]) == {"a": {"b": ["x", "z"]}}
    assert apply_overrides(data, ["a.b[2]=z"]) == {"a": {"b": ["x", "y", "z"]}}
    assert apply_overrides({}, ["l[0].name=n", "l[0].v=1"]) == {"l": [{"name": "n", "v": 1}]}
    with pytest.raises(ProfileError, match=r"index 5 is past the end of a list of 2"):
        apply_overrides(data, ["a.b[5]=z"])
    with pytest.raises(ProfileError, match=r"\[0\] indexes something that is not a list"):
        apply_overrides({"a": {"b": "s"}}, ["a.b[0]=z"])


def test_later_profiles_win_key_by_key_and_sets_win_over_all(tmp_path: Path) -> None:
    base, site = tmp_path / "base.yaml", tmp_path / "site.yaml"
    base.write_text("vllm:\n  port: 18500\n  max_num_seqs: 4\n")
    site.write_text("vllm:\n  port: 18600\n")
    prof = load_profile(["local-cpu", str(base), str(site)])
    assert (prof.vllm.port, prof.vllm.max_num_seqs) == (18600, 4)
    assert prof.name == load_profile("local-cpu").name  # what no layer names stays the first one's
    assert load_profile(["local-cpu", str(base), str(site)], ["vllm.port=18700"]).vllm.port == 18700
    _, origin = load_raw(["local-cpu", str(site)])
    assert origin == f"built-in profile 'local-cpu' + profile file {str(site)!r}"


def test_the_cli_layers_repeated_profiles(tmp_path: Path) -> None:
    site = tmp_path / "site.yaml"
    site.write_text("vllm:\n  port: 18600\n")
    result = run_cli("render", "-p", "kimi-k3-gb300-tp16", *EXAMPLE_SETS, "-p", str(site), "-o", "-")
    assert result.returncode == 0, result.stderr
    assert "containerPort: 18600" in result.stdout and "containerPort: 8000" not in result.stdout
