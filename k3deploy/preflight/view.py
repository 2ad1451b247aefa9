"""Rich table of preflight results: one row per check with its status and fix; `-o wide` adds what was found and
what was expected."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from k3deploy.console import safe_text
from k3deploy.report.model import CheckResult, Status

_STYLES = {Status.PASS: "green", Status.WARN: "yellow", Status.FAIL: "bold red", Status.SKIP: "dim"}


def _cell(value: object) -> Text:
    """A plain-text cell (no markup), its terminal controls shown as escapes: values come from nodes and registries."""
    return Text("" if value is None else safe_text(str(value)))


def preflight_table(profile_name: str, results: list[CheckResult], *, wide: bool = False) -> Table:
    """The preflight table: CHECK, STATUS and DETAIL / FIX (the detail, then the hint for WARN and FAIL rows);
    `wide` (`-o wide`, as `kubectl get -o wide`) adds the long columns, FOUND and EXPECTED."""
    table = Table(box=None, title=f"preflight: {profile_name}")
    table.add_column("CHECK", no_wrap=True)
    table.add_column("STATUS", no_wrap=True)
    # Fold rather than truncate (on a terminal; a file or a pipe gets whole rows): a cut-off fix is worse than a tall row.
    if wide:
        table.add_column("FOUND", overflow="fold", ratio=2)
        table.add_column("EXPECTED", overflow="fold", ratio=2)
    table.add_column("DETAIL / FIX", overflow="fold", ratio=5)
    for result in results:
        fix = result.detail
        if result.hint and result.status in (Status.WARN, Status.FAIL):
            fix = f"{fix}\nfix: {result.hint}" if fix else f"fix: {result.hint}"
        values = [_cell(result.measured), _cell(result.target)] if wide else []
        table.add_row(
            _cell(result.name),
            Text(result.status.value.upper(), style=_STYLES[result.status]),
            *values,
            _cell(fix),
        )
    return table
