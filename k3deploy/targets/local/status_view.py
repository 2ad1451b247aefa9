"""What the rollout commands show for the local target: `status`'s table (the server process, its endpoint and
last smoke) and `down`'s question."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from k3deploy.profile.model import Profile


def local_status_view(report: dict[str, Any]) -> Group:
    """A rich renderable of a local status report (the dict `-o json` prints)."""
    if not report.get("running"):
        return Group(
            Text(f"local server of {report['profile']}: {report.get('detail', 'not running')}"),
            Text(f"state directory: {report['state_dir']}"),
        )
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
        (
            "profile",
            "matches the running server" if report.get("matches_profile") else "differs: `up` would replace the server",
        ),
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


def local_down_question(profile: Profile, purge: bool, report: dict[str, Any]) -> str:
    """What `down` asks on a terminal: the local server (pid, endpoint) it stops; `report` is its status report."""
    if report.get("running"):
        what = f"Stop the local vLLM server of {profile.name!r} (pid {report.get('pid')}, {report.get('endpoint')})"
    else:
        what = f"No local vLLM server of {profile.name!r} is running (port {profile.vllm.port}); clear its record"
    if purge:
        what += (
            f" and delete the generated model and vLLM's cache under {report.get('state_dir') or 'its state directory'}"
        )
    return what + "?"
