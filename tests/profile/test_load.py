"""Reading profile files and `--set` values: hostile YAML (alias bombs, deep nesting, binary, non-UTF-8, huge files)
is refused with exit 2 and one `error:` line naming what is wrong, before anything is rendered."""

from __future__ import annotations

from pathlib import Path

import pytest

from k3deploy.profile.load import MAX_DEPTH, MAX_PROFILE_BYTES
from tests.conftest import EXAMPLE_SETS, REPO_ROOT, run_cli

BUILTIN = REPO_ROOT / "k3deploy" / "profile" / "builtin" / "kimi-k3-gb300-tp16.yaml"
#: Nine levels of nine-fold aliases: 9^9 (387 million) list items once expanded, 1 KB of YAML.
BOMB = "\n".join(
    ["  a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    + [f"  a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
)


def _one_error(result, expected: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("error: ") and lines[1].startswith("hint: "), result.stderr
    assert expected in lines[0]
    assert "Traceback" not in result.stderr


def test_alias_bomb_in_a_free_form_field_of_a_file_is_refused(tmp_path: Path) -> None:
    profile = tmp_path / "bomb.yaml"
    text = BUILTIN.read_text().replace(
        "  draft_bytes: 7120000000", "  draft_bytes: 7120000000\n  extra:\n" + BOMB.replace("  a", "    a")
    )
    profile.write_text(text)
    result = run_cli("render", "-p", str(profile), "-o", "-", timeout=60)
    _one_error(result, "YAML anchors and aliases are not accepted (line")


def test_alias_in_a_set_value_is_refused() -> None:
    result = run_cli(
        "render",
        "-p",
        "kimi-k3-gb300-tp16",
        *EXAMPLE_SETS,
        "--set",
        "vllm.attention_config={a: &x [1, 2], b: *x}",
        "-o",
        "-",
    )
    _one_error(result, "error: --set vllm.attention_config: YAML anchors and aliases are not accepted")


@pytest.mark.parametrize("style", ["flow", "block"])
def test_deep_nesting_is_refused(tmp_path: Path, style: str) -> None:
    profile = tmp_path / "deep.yaml"
    if style == "flow":
        profile.write_text("name: x\nspeculative: {extra: " + "[" * 5000 + "]" * 5000 + "}\n")
    else:
        profile.write_text(
            "name: x\n"
            + "".join("  " * i + f"k{i}:\n" for i in range(MAX_DEPTH + 2))
            + "  " * (MAX_DEPTH + 2)
            + "v: 1\n"
        )
    _one_error(run_cli("plan", "-p", str(profile)), f"YAML nested deeper than {MAX_DEPTH} levels")
    deep_set = "{" * 3000 + "}" * 3000
    _one_error(
        run_cli("plan", "-p", "kimi-k3-gb300-tp16", "--set", f"speculative.extra={deep_set}"),
        "error: --set speculative.extra: YAML nested deeper",
    )


def test_nesting_within_the_bound_is_accepted() -> None:
    nested = "{a: " * (MAX_DEPTH - 3) + "1" + "}" * (MAX_DEPTH - 3)
    result = run_cli(
        "render", "-p", "kimi-k3-gb300-tp16", *EXAMPLE_SETS, "--set", f"speculative.extra={nested}", "-o", "-"
    )
    assert result.returncode == 0, result.stderr


def test_non_utf8_binary_and_huge_profiles_are_usage_errors(tmp_path: Path) -> None:
    latin = tmp_path / "latin1.yaml"
    latin.write_bytes("name: café\n".encode("latin-1"))
    _one_error(run_cli("plan", "-p", str(latin)), f"error: profile file {str(latin)!r} is not UTF-8 text (byte 9)")
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(bytes(range(256)) * 4)
    _one_error(run_cli("render", "-p", str(binary)), "is not UTF-8 text")
    control = tmp_path / "control.yaml"
    control.write_bytes(b"name: x\x00\x01\n")
    _one_error(run_cli("render", "-p", str(control)), "is not valid YAML")
    huge = tmp_path / "huge.yaml"
    huge.write_bytes(b"# " + b"x" * MAX_PROFILE_BYTES + b"\nname: x\n")
    _one_error(run_cli("plan", "-p", str(huge)), "is larger than 1024 KiB: not a profile")


def test_a_directory_as_profile_is_a_usage_error(tmp_path: Path) -> None:
    _one_error(run_cli("plan", "-p", str(tmp_path)), "is neither a built-in profile nor a file")


def test_text_that_is_not_unicode_is_a_usage_error_naming_the_field() -> None:
    # A YAML escape for a lone surrogate, and command-line bytes that are not UTF-8 (kept as surrogate escapes).
    _one_error(
        run_cli("render", "-p", "kimi-k3-gb300-tp16", *EXAMPLE_SETS, "--set", 'description="\\ud800"', "-o", "-"),
        "description: not valid Unicode text",
    )
    _one_error(
        run_cli("render", "-p", "kimi-k3-gb300-tp16", *EXAMPLE_SETS, "--set", "vllm.env.X=\udcff", "-o", "-"),
        "vllm.env.X: not valid Unicode text",
    )
