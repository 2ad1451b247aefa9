"""`k3deploy apply --dry-run / --diff` on the local target: say what would happen, start and write nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli


@pytest.mark.parametrize(("flag", "code"), [("--dry-run", 0), ("--diff", 1)])
def test_dry_run_starts_no_server_and_writes_no_state(tmp_path: Path, flag: str, code: int) -> None:
    state = tmp_path / "state"
    result = run_cli("apply", "-p", "local-cpu", "--set", f"local.state_dir={state}", flag)
    # --diff exits 1 when something would change, as `kubectl diff` does.
    assert result.returncode == code, result.stderr
    assert "apply: dry run: would start vLLM; nothing started or stopped" in result.stderr
    # No record, no log, no generated model: nothing was started or prepared.
    assert not (state / "server.json").exists()
    assert not (state / "model").exists()
    assert not (state / "server.log").exists()


def test_diff_prints_the_planned_argv_against_nothing_running(tmp_path: Path) -> None:
    result = run_cli("apply", "-p", "local-cpu", "--set", f"local.state_dir={tmp_path / 'state'}", "--diff")
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:2] == ["--- running", "+++ planned"]
    assert "+--speculative-config" in lines


def test_diff_with_json_output_keeps_stdout_one_json_document(tmp_path: Path) -> None:
    result = run_cli(
        "apply", "-p", "local-cpu", "--set", f"local.state_dir={tmp_path / 'state'}", "--diff", "-o", "json"
    )
    assert result.returncode == 1, result.stderr
    summary = json.loads(result.stdout)
    [entry] = summary["diff"]
    assert entry["object"] == "process"
    assert entry["diff"].startswith("--- running\n+++ planned\n")
    assert "+--speculative-config\n" in entry["diff"]
