"""What the rollout commands show for the local target: `status`'s table (the server process, its endpoint and
last smoke) and `down`'s question.

Every value comes from a file (the server record, the smoke report, the profile) or from the server: each is
shown through `console.safe_text`, so a model name, a log path or a recorded verdict carrying terminal escapes
(ESC [ ... CSI, ESC ] ... OSC, C1 controls) prints as text and never drives the terminal."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from k3deploy.console import safe_text
from k3deploy.kobject import JsonObject
from k3deploy.profile.model import Profile


def _shown(value: Any) -> str:
    """`value` as text for the terminal, its control characters shown as escapes."""
    return safe_text("" if value is None else str(value))


def local_status_view(report: JsonObject) -> Group:
    """A rich renderable of a local status report (the dict `-o json` prints)."""
    if not report.get("running"):
        return Group(
            Text(f"local server of {_shown(report['profile'])}: {_shown(report.get('detail', 'not running'))}"),
            Text(f"state directory: {_shown(report['state_dir'])}"),
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
        table.add_row(field, _shown(value))
    smoke = report.get("last_smoke")
    verdict = smoke.get("status") if isinstance(smoke, dict) else None
    return Group(
        Text(f"local server of {_shown(report['profile'])}: running, {health}"),
        table,
        Text(f"last smoke: {_shown(verdict) if smoke else 'not recorded'}"),
    )


def local_down_question(profile: Profile, purge: bool, report: JsonObject) -> str:
    """What `down` asks on a terminal: the local server (pid, endpoint) it stops; `report` is its status report."""
    if report.get("running"):
        what = (
            f"Stop the local vLLM server of {profile.name!r} (pid {_shown(report.get('pid'))}, "
            f"{_shown(report.get('endpoint'))})"
        )
    else:
        what = f"No local vLLM server of {profile.name!r} is running (port {profile.vllm.port}); clear its record"
    if purge:
        what += (
            f" and delete the generated model and vLLM's cache under "
            f"{_shown(report.get('state_dir')) or 'its state directory'}"
        )
    return what + "?"
