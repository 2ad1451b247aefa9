"""A table written to a file or a pipe is never cut with "…": what does not fit folds onto the next line."""

from __future__ import annotations

import io

from rich.console import Group
from rich.table import Table

from k3deploy.console import _Console
from tests.conftest import run_cli


def _table() -> Table:
    table = Table("FIELD", "VALUE", box=None)
    table.add_row("hardware.runtime_reserve_mib_" + "x" * 60, "8192 MiB")
    return table


def test_a_table_to_a_pipe_folds_instead_of_cutting() -> None:
    buffer = io.StringIO()
    console = _Console(file=buffer, width=40, force_terminal=False)
    console.print(Group("nested:", _table()))  # nested renderables are rendered through the same method
    text = buffer.getvalue()
    assert "…" not in text
    assert "".join(line.split()[0] for line in text.splitlines()[2:]) == "hardware.runtime_reserve_mib_" + "x" * 60


def test_on_a_terminal_rich_keeps_its_own_choice() -> None:
    buffer = io.StringIO()
    console = _Console(file=buffer, width=40, force_terminal=True, color_system=None)
    console.print(_table())
    assert "…" in buffer.getvalue()


def test_plan_through_a_pipe_has_every_character() -> None:
    result = run_cli("plan", "-p", "kimi-k3-gb300-tp16", env={"COLUMNS": "80"})
    assert result.returncode == 0, result.stderr
    assert "…" not in result.stdout and "hardware.runtime_r" in result.stdout
