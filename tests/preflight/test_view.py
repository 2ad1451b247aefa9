"""preflight's table: narrow by default (CHECK, STATUS, DETAIL / FIX), `-o wide` adds FOUND and EXPECTED, as
`kubectl get -o wide` adds its long columns."""

from __future__ import annotations

from tests.conftest import run_cli


def _header(stdout: str) -> list[str]:
    return stdout.splitlines()[1].split()


def test_the_default_table_is_narrow_and_wide_adds_the_long_columns() -> None:
    narrow = run_cli("preflight", "-p", "local-cpu", env={"COLUMNS": "80"})
    wide = run_cli("preflight", "-p", "local-cpu", "-o", "wide", env={"COLUMNS": "80"})
    assert narrow.returncode == wide.returncode and "Traceback" not in narrow.stderr + wide.stderr
    assert _header(narrow.stdout) == ["CHECK", "STATUS", "DETAIL", "/", "FIX"]
    assert _header(wide.stdout) == ["CHECK", "STATUS", "FOUND", "EXPECTED", "DETAIL", "/", "FIX"]
    # Whole rows at their natural width: one line per check, in both.
    checks = [line.split()[0] for line in wide.stdout.splitlines()[2:] if line.startswith(" local.")]
    assert checks and checks == [
        line.split()[0] for line in narrow.stdout.splitlines()[2:] if line.startswith(" local.")
    ]
    assert "vLLM importable" in wide.stdout and "vLLM importable" not in narrow.stdout


def test_json_and_yaml_are_unchanged() -> None:
    done = run_cli("preflight", "-p", "local-cpu", "-o", "json")
    assert '"checks"' in done.stdout and "Traceback" not in done.stderr
    bad = run_cli("preflight", "-p", "local-cpu", "-o", "tall")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
