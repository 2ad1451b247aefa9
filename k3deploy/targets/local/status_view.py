"""The table `k3deploy status` prints for the local target: the server process, its endpoint and last smoke."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text


def local_status_view(report: dict[str, Any]) -> Group:
    """A rich renderable of a local status report (the dict `-o json` prints)."""
    if not report.get("running"):
        return Group(Text(f"local server of {report['profile']}: {report.get('detail', 'not running')}"),
                     Text(f"state directory: {report['state_dir']}"))
    health = "healthy" if report.get("healthy") else "not answering /health"
    table = Table("FIELD", "VALUE", box=None, show_header=False)
    model = report.get("model", "")
    if report.get("rehearsal"):
        model += " (rehearsal model: random weights, not Kimi K3)"
    for field, value in (
        ("pid", str(report.get("pid"))),
        ("endpoint", report.get("endpoint", "")),
        ("model", model),
        ("revision", f"{report.get('revision')} (started {report.get('started_at')})"),
        ("profile", "matches the running server" if report.get("matches_profile") else "differs: `up` would replace the server"),
        ("log", report.get("log", "")),
        *((("found", report["found_by"]),) if report.get("found_by") else ()),
    ):
        table.add_row(field, value)
    smoke = report.get("last_smoke")
    return Group(
        Text(f"local server of {report['profile']}: running, {health}"),
        table,
        Text(f"last smoke: {smoke.get('status') if smoke else 'not recorded'}"),
    )
