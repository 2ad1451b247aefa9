"""Exit codes and messages at the CLI's edges: a closed stdout, malformed endpoints, a report path that is a
folder, and `plan` on a profile whose weights do not fit (docs/operations/scripts-ci.md: FAIL, exit 1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE_SETS, REPO_ROOT, cli_env, run_cli

K3 = "kimi-k3-gb300-tp16"


def _with_closed_stdout(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the CLI with stdout a pipe whose reader is already gone (`k3deploy ... | head -1`, deterministic)."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [sys.executable, "-m", "k3deploy", *args],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            env=cli_env(),
            cwd=REPO_ROOT,
        )
    finally:
        os.close(write)


@pytest.mark.parametrize(
    "args",
    [
        ["render", "-p", K3, *EXAMPLE_SETS, "-o", "-"],  # sys.stdout
        ["plan", "-p", K3, "-o", "json"],  # rich print_json
        ["profiles"],  # a rich table
        ["schema"],  # typer.echo
        ["--help"],
    ],
)
def test_a_broken_pipe_ends_quietly(args: list[str]) -> None:
    result = _with_closed_stdout(*args)
    assert result.returncode == 141  # what a shell reports for SIGPIPE, not 1 ("a check failed")
    assert result.stderr == ""


def test_the_shell_pipeline_to_head_prints_the_first_line_only(tmp_path: Path) -> None:
    result = subprocess.run(
        f"{sys.executable} -m k3deploy render -p {K3} --set production=false -o - | head -1",
        shell=True,
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env(),
        cwd=REPO_ROOT,
    )
    assert result.returncode == 0 and result.stdout == "---\n"
    # Only render's own warnings (the versions that float): no broken-pipe noise, no traceback.
    assert all(line.startswith("warning: ") for line in result.stderr.splitlines()), result.stderr


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://127.0.0.1:99999", "Port out of range"),
        ("http://127.0.0.1:0", "port 0"),
        ("http://[::1:8000", "Invalid IPv6 URL"),
        ("http://[zz::1]:8000", "zz::1"),
        ("http://10.0.0.5:80a", "not a valid URL"),
    ],
)
def test_a_malformed_endpoint_is_a_usage_error_for_every_command(url: str, reason: str) -> None:
    for args in (
        ["smoke", "-p", "local-cpu", "--endpoint", url],
        ["status", "-p", K3, "--kubeconfig", "/nonexistent", "--endpoint", url],
        ["up", "-p", K3, "--kubeconfig", "/nonexistent", "--endpoint", url],
    ):
        result = run_cli(*args)
        assert result.returncode == 2, (args, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 2 and lines[0].startswith("error: --endpoint ") and reason in lines[0], (
            args,
            result.stderr,
        )
        assert "unexpected" not in result.stderr


def test_report_at_a_folder_is_refused_before_the_run(tmp_path: Path) -> None:
    # The endpoint is a closed port: were the run started, it would end in exit 3 after trying it.
    result = run_cli("smoke", "-p", "local-cpu", "--endpoint", "http://127.0.0.1:9", "--report", str(tmp_path))
    assert result.returncode == 2, result.stderr
    assert (
        result.stderr.splitlines()[0] == f"error: --report {tmp_path} is a folder; k3deploy writes only regular files"
    )
    assert list(tmp_path.iterdir()) == []


def test_plan_exits_1_with_the_plan_when_the_weights_do_not_fit() -> None:
    result = run_cli("plan", "-p", K3, "--set", "model.checkpoint_bytes=9000000000000", "-o", "json")
    assert result.returncode == 1, result.stderr
    assert json.loads(result.stdout)["fits"] is False
    assert result.stderr.splitlines()[0].startswith(f"error: plan for {K3!r} does not fit: weights do not fit")
    # The other commands still refuse such a profile as invalid (exit 2): nothing is deployed that cannot load.
    assert run_cli("render", "-p", K3, *EXAMPLE_SETS, "--set", "model.checkpoint_bytes=9000000000000").returncode == 2
