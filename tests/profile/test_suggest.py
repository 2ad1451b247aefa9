"""An unknown field says where it came from (which file, or --set) and the nearest known field."""

from __future__ import annotations

from pathlib import Path

import pytest

from k3deploy.errors import ProfileError
from k3deploy.profile import Profile, load_profile
from k3deploy.profile.suggest import field_paths, nearest
from tests.conftest import run_cli

KNOWN = field_paths(Profile)


def test_field_paths_reach_into_sections() -> None:
    assert {"vllm", "vllm.port", "kubernetes.namespace", "local.python"} <= set(KNOWN)


@pytest.mark.parametrize(
    ("unknown", "meant"),
    [
        ("local.port", "vllm.port"),
        ("vllm.prot", "vllm.port"),
        ("vlm", "vllm"),
        ("kubernetes.namespce", "kubernetes.namespace"),
    ],
)
def test_the_nearest_field(unknown: str, meant: str) -> None:
    assert nearest(unknown, KNOWN) == meant


def test_nothing_close_suggests_nothing() -> None:
    assert nearest("zzzzzz.qqqqqq", KNOWN) is None


def test_a_set_key_names_set_and_the_nearest_field() -> None:
    with pytest.raises(ProfileError) as info:
        load_profile("kimi-k3-gb300-tp16", ["local.port=8000"])
    assert "local.port: unknown field (from --set local.port; did you mean vllm.port?)" in info.value.message


def test_a_file_key_names_the_file_it_came_from(tmp_path: Path) -> None:
    bad, good = tmp_path / "bad.yaml", tmp_path / "good.yaml"
    bad.write_text("vllm:\n  prot: 1\n")
    good.write_text("vllm:\n  port: 18600\n")
    result = run_cli("plan", "-p", "local-cpu", "-p", str(bad), "-p", str(good))
    assert result.returncode == 2
    assert (
        f"vllm.prot: unknown field (from profile file {str(bad)!r}; did you mean vllm.port?)"
        in result.stderr.splitlines()[0]
    )
