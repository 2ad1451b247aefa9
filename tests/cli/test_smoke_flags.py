"""`k3deploy smoke` flag checking: bad values are usage errors that name the flag, found before any request is sent."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli

# Port 1 on loopback: nothing listens, so reaching the network would give exit 3, not 2.
_NOWHERE = "http://127.0.0.1:1"


@pytest.mark.parametrize(("flag", "value", "message"), [
    ("--requests", "0", "error: Invalid value for '--requests': Input should be greater than or equal to 1"),
    ("--output-tokens", "1", "error: Invalid value for '--output-tokens': Input should be greater than or equal to 2"),
])
def test_out_of_range_counts_name_the_flag(flag: str, value: str, message: str) -> None:
    result = run_cli("smoke", "--endpoint", _NOWHERE, flag, value)
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == message


def test_report_into_a_missing_folder_is_refused_before_the_run(tmp_path: Path) -> None:
    target = tmp_path / "missing" / "report.json"
    result = run_cli("smoke", "--endpoint", _NOWHERE, "--report", str(target))
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == f"error: --report {target}: folder {target.parent} does not exist"
    assert "liveness" not in result.stderr
