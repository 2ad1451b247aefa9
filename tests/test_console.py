"""A table written to a file or a pipe prints whole rows at their natural width, as `kubectl get` does: never cut
with "…", never folded at 80 columns (a pod name or a number split mid-digit)."""

from __future__ import annotations

import io

import pytest
from rich.console import Group
from rich.table import Table

from k3deploy.rich_console import RichConsole as _Console
from tests.conftest import run_cli


def _table() -> Table:
    table = Table("FIELD", "VALUE", box=None)
    table.add_row("hardware.runtime_reserve_mib_" + "x" * 60, "8192 MiB")
    return table


def test_a_table_to_a_pipe_prints_each_row_whole_on_one_line() -> None:
    buffer = io.StringIO()
    console = _Console(file=buffer, width=40, force_terminal=False, soft_wrap=True)  # as console.py makes them
    table = _table()
    table.add_row("kimi-k3-gb300-tp16-0-1", "1234567890" * 5)
    console.print(Group("nested:", table))  # nested renderables are rendered through the same method
    lines = buffer.getvalue().splitlines()
    assert "…" not in buffer.getvalue() and len(lines) == 4  # "nested:", the header, two rows: nothing folded
    assert lines[2].split() == ["hardware.runtime_reserve_mib_" + "x" * 60, "8192", "MiB"]
    assert lines[3].split() == ["kimi-k3-gb300-tp16-0-1", "1234567890" * 5]


def test_a_preflight_table_to_a_file_keeps_each_check_on_its_lines() -> None:
    from k3deploy.preflight.view import preflight_table
    from k3deploy.report.model import CheckResult, Status

    nodes = ", ".join(f"gb300-{i:02d}" for i in range(1, 19))
    rows = [
        CheckResult(
            name="nodes.gpus", status=Status.FAIL, measured=nodes, target="4 GPUs each", detail="3 on gb300-03"
        ),
        CheckResult(name="gpu.memory", status=Status.PASS, measured=287_565_037_568, target=1, detail="ok"),
    ]
    buffer = io.StringIO()
    _Console(file=buffer, width=80, force_terminal=False, soft_wrap=True).print(preflight_table("p", rows, wide=True))
    lines = buffer.getvalue().splitlines()
    assert len(lines) == 4 and nodes in lines[2] and "287565037568" in lines[3], lines


def test_on_a_terminal_rich_keeps_its_own_choice() -> None:
    buffer = io.StringIO()
    console = _Console(file=buffer, width=40, force_terminal=True, color_system=None)
    console.print(_table())
    assert "…" in buffer.getvalue()


def test_plan_through_a_pipe_has_every_character() -> None:
    result = run_cli("plan", "-p", "kimi-k3-gb300-tp16", env={"COLUMNS": "80"})
    assert result.returncode == 0, result.stderr
    assert "…" not in result.stdout and "hardware.runtime_r" in result.stdout


def test_terminal_controls_from_elsewhere_print_as_escapes() -> None:
    from k3deploy.console import safe_text

    assert safe_text("ok\x1b]0;owned\x07 \x1b[2J\x9b\u202etxt\tand\nnext") == (
        "ok\\x1b]0;owned\\x07 \\x1b[2J\\x9b\\u202etxt\tand\nnext"
    )


def test_an_error_and_a_preflight_row_never_carry_a_raw_escape(capsys: pytest.CaptureFixture[str]) -> None:
    """A registry's error text, a Prometheus label or a node label reach the terminal as text (before: raw ESC)."""
    import io

    from rich.console import Console

    from k3deploy.console import print_error
    from k3deploy.preflight.view import preflight_table
    from k3deploy.report.model import CheckResult, Status

    print_error("registry said \x1b[31mnope\x1b]8;;http://x\x07", "retry [bold]later\x1b[0m")
    printed = capsys.readouterr().err
    assert "\x1b" not in printed and "\\x1b[31mnope" in printed and "[bold]later" in printed
    buffer = io.StringIO()
    row = CheckResult(name="nodes", status=Status.WARN, measured="gpu=\x1b[8mhidden", detail="label \x1b]0;t\x07")
    Console(file=buffer, force_terminal=True, width=200).print(preflight_table("p", [row], wide=True))
    shown = buffer.getvalue()
    assert "\x1b[8m" not in shown and "\x1b]0;" not in shown and "\\x1b[8mhidden" in shown


def test_a_plain_line_is_what_the_console_printed_for_ordinary_text(capsys: pytest.CaptureFixture[str]) -> None:
    """`plain` (render's messages, without loading rich) prints what `err.print(markup=False)` did; a terminal
    control is shown as its escape (rich dropped it), an emoji code and a tab as written."""
    from k3deploy.console import plain
    from k3deploy.rich_console import RichConsole

    line = "warning: vllm.image vllm/vllm-openai:kimi-k3 floats until pinned: `k3deploy pin` resolves it [x]"
    buffer = io.StringIO()
    RichConsole(file=buffer, highlight=False, soft_wrap=True).print(line, markup=False, highlight=False)
    plain(line)
    plain("a :smile: b\tc \x1b[2Jd")
    assert capsys.readouterr().err == buffer.getvalue() + "a :smile: b\tc \\x1b[2Jd\n"
