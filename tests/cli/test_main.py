"""The entry point's contract: `--debug` adds a traceback but never changes the exit code or drops the error line."""

from __future__ import annotations

from tests.conftest import run_cli


def test_debug_keeps_the_usage_exit_code_of_a_k3deploy_error() -> None:
    result = run_cli("--debug", "smoke", "--endpoint", "notaurl")
    assert result.returncode == 2
    assert "Traceback (most recent call last)" in result.stderr
    assert "error: --endpoint 'notaurl' is not an http(s) URL" in result.stderr


def test_debug_keeps_the_usage_exit_code_of_a_bad_flag() -> None:
    result = run_cli("render", "--no-such-flag", "--debug")
    assert result.returncode == 2
    assert "Traceback (most recent call last)" in result.stderr
    assert "error: No such option: --no-such-flag" in result.stderr


def test_without_debug_there_is_no_traceback() -> None:
    result = run_cli("smoke", "--endpoint", "notaurl")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines()[0] == "error: --endpoint 'notaurl' is not an http(s) URL"


def test_bare_command_prints_the_help_and_exits_2() -> None:
    result = run_cli()
    assert result.returncode == 2
    assert result.stderr.startswith("Usage: k3deploy [OPTIONS] COMMAND [ARGS]...")
    assert "error:" not in result.stderr and "  smoke " in result.stderr
