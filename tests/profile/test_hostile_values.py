"""Profile input that used to end as "unexpected <Exception> ... report it": each is a clean ProfileError now, or
(`lws_version=0.9`, a bare date) the value the user wrote."""

from __future__ import annotations

from pathlib import Path

import pytest

from k3deploy.errors import ProfileError
from k3deploy.profile import load_profile
from k3deploy.targets import target_for
from tests.conftest import EXAMPLE_SETS, run_cli

K3 = "kimi-k3-gb300-tp16"


def _render(ref: str | list[str], sets: list[str]) -> str:
    profile = load_profile(ref, sets)
    return target_for(profile).render(profile).stream


@pytest.mark.parametrize("depth", [33, 1000, 5000])
def test_a_dotted_set_key_past_the_depth_limit_is_refused(depth: int) -> None:
    with pytest.raises(ProfileError, match=f"{depth + 1} levels deep; a profile's fields are at most 32"):
        load_profile("local-cpu", ["speculative.extra." + ".".join(["a"] * (depth - 1)) + "=1"])


@pytest.mark.parametrize("value", ["!!binary aGVsbG8=", "!!set {a, b}", "!!timestamp 2001-12-14", "!!omap [a: 1]"])
def test_yaml_tags_beyond_json_are_refused(value: str) -> None:
    with pytest.raises(ProfileError, match=r"YAML tag !!\w+ is not accepted"):
        load_profile(K3, [f"speculative.extra.k={value}"])


def test_a_bare_date_in_a_free_form_field_is_the_text_written(tmp_path: Path) -> None:
    assert '"k":"2024-01-01"' in _render(K3, ["speculative.extra.k=2024-01-01"])
    layer = tmp_path / "layer.yaml"
    layer.write_text("vllm:\n  attention_config:\n    since: 2024-01-01\n")
    assert (load_profile([K3, str(layer)]).vllm.attention_config or {})["since"] == "2024-01-01"


def test_duplicate_keys_are_refused(tmp_path: Path) -> None:
    layer = tmp_path / "layer.yaml"
    layer.write_text("vllm:\n  port: 8000\n  port: 9000\n")
    with pytest.raises(ProfileError, match=r"duplicate key 'port' \(line 3, column 3\)"):
        load_profile([K3, str(layer)])
    with pytest.raises(ProfileError, match="duplicate key 'a'"):
        load_profile(K3, ["speculative.extra={a: 1, a: 2}"])


@pytest.mark.parametrize("item", ["vllm.env.A=a\0b", 'vllm.extra_args=["--x\\u0000"]', 'vllm.env={B: "c\\0"}'])
def test_nul_bytes_in_env_and_arguments_are_refused(item: str) -> None:
    with pytest.raises(ProfileError, match="holds a NUL character"):
        load_profile("local-cpu", [item])


@pytest.mark.parametrize("written", ["0.9", "0.10"])
def test_a_set_number_for_a_text_field_is_the_text_written(written: str) -> None:
    assert load_profile(K3, [f"kubernetes.lws_version={written}"]).kubernetes.lws_version == written


def test_a_number_for_a_text_field_in_a_file_is_still_refused(tmp_path: Path) -> None:
    layer = tmp_path / "layer.yaml"
    layer.write_text("kubernetes:\n  lws_version: 0.9\n")  # in a file, quoting is the user's: the float is refused
    with pytest.raises(ProfileError, match="lws_version: Input should be a valid string"):
        load_profile([K3, str(layer)])


def test_the_cli_prints_one_error_and_one_hint_for_each() -> None:
    for item in ["a" + ".a" * 3000 + "=1", "speculative.extra.k=!!binary aGVsbG8="]:
        result = run_cli("render", "-p", K3, *EXAMPLE_SETS, "--set", item, "-o", "-")
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 2 and len(lines) == 2, result.stderr
        assert lines[0].startswith("error: ") and "unexpected" not in lines[0] and lines[1].startswith("hint: ")
