"""Rich table of preflight results: one row per check with what was found, what was expected and the fix."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from k3deploy.console import safe_text
from k3deploy.report.model import CheckResult, Status

_STYLES = {Status.PASS: "green", Status.WARN: "yellow", Status.FAIL: "bold red", Status.SKIP: "dim"}


def _cell(value: object) -> Text:
    """A plain-text cell (no markup), its terminal controls shown as escapes: values come from nodes and registries."""
    return Text("" if value is None else safe_text(str(value)))


def preflight_table(profile_name: str, results: list[CheckResult]) -> Table:
    """The preflight table; the FIX column holds the detail, then the hint for WARN and FAIL rows."""
    table = Table(box=None, title=f"preflight: {profile_name}")
    table.add_column("CHECK", no_wrap=True)
    table.add_column("STATUS", no_wrap=True)
    # Fold rather than truncate: a cut-off fix is worse than a tall row.
    table.add_column("FOUND", overflow="fold", ratio=2)
    table.add_column("EXPECTED", overflow="fold", ratio=2)
    table.add_column("DETAIL / FIX", overflow="fold", ratio=5)
    for result in results:
        fix = result.detail
        if result.hint and result.status in (Status.WARN, Status.FAIL):
            fix = f"{fix}\nfix: {result.hint}" if fix else f"fix: {result.hint}"
        table.add_row(
            _cell(result.name),
            Text(result.status.value.upper(), style=_STYLES[result.status]),
            _cell(result.measured),
            _cell(result.target),
            _cell(fix),
        )
    return table
