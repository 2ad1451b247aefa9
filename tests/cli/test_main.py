"""The entry point's contract: `--debug` adds a traceback but never changes the exit code or drops the error line;
`python -m k3deploy` and the installed `k3deploy` script reach it, and a real process keeps data and messages apart.
"""

from __future__ import annotations

import subprocess

from tests.conftest import EXAMPLE_SETS, REPO_ROOT, cli_env, run_cli, run_cli_process, venv_tool


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


def test_python_m_k3deploy_is_the_same_entry_point() -> None:
    result = run_cli_process()
    assert result.returncode == 2
    assert result.stderr.startswith("Usage: k3deploy [OPTIONS] COMMAND [ARGS]...") and result.stdout == ""


def test_the_console_script_is_the_same_entry_point() -> None:
    script = venv_tool("k3deploy")
    assert script is not None, "k3deploy is not installed beside this interpreter"
    result = subprocess.run(
        [script, "smoke", "--endpoint", "notaurl"],
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env(),
        cwd=REPO_ROOT,
    )
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines()[0] == "error: --endpoint 'notaurl' is not an http(s) URL"


def test_a_process_writes_data_to_stdout_and_messages_to_stderr() -> None:
    data = run_cli_process("render", "-p", "kimi-k3-gb300-tp16", *EXAMPLE_SETS, "-o", "-")
    assert (
        data.returncode == 0
        and data.stdout.startswith(("---", "apiVersion:", "#"))
        and "apiVersion:" not in data.stderr
    )
    refused = run_cli_process(
        "render", "-p", "kimi-k3-gb300-tp16", *EXAMPLE_SETS, "--set", "no_such.field=1", "-o", "-"
    )
    assert refused.returncode == 2 and refused.stdout == "" and refused.stderr.startswith("error: ")
