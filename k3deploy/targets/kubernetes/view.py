"""What the rollout commands show for a Kubernetes deployment: `status`'s tables and `down`'s question."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from k3deploy.console import safe_text
from k3deploy.fault_guard.health import GroupHealth, domain_text, tray_text
from k3deploy.kobject import JsonObject
from k3deploy.profile.model import Profile


def _text(value: object) -> Text:
    """A cell of what the cluster said (node names, labels, conditions): plain text, controls shown as escapes."""
    return Text(safe_text(str(value)))


def kubernetes_status_view(report: JsonObject) -> Group:
    """A rich renderable of a Kubernetes status report (the dict `-o json` prints)."""
    objects = Table("KIND", "NAME", "STATE", "READY", "DETAIL", box=None)
    for row in report.get("objects", []):
        objects.add_row(
            row["kind"], row["name"], row["state"], "yes" if row["ready"] else "no", _text(row.get("detail", ""))
        )
    pods = Table("POD", "GROUP", "WORKER", "NODE", "CLIQUE", "STATE", "RESTARTS", "WEIGHTS", box=None)
    for pod in report.get("pods", []):
        pods.add_row(
            pod["name"],
            str(pod.get("group") or "-"),
            str(pod.get("worker") or "-"),
            _text(pod.get("node") or "-"),
            _text(pod.get("clique") or "-"),
            pod["phase"],
            str(pod["restarts"]),
            _text(pod.get("weights") or "-"),
        )
    groups = groups_table(report.get("groups") or [])
    revision = report.get("revision") or {}
    smoke = report.get("smoke")
    state = "ready" if report.get("ready") else ("not ready" if report.get("deployed") else "not deployed")
    return Group(
        Text(f"deployment {report.get('deployment')} in namespace {report.get('namespace')}: {state}"),
        objects,
        pods if report.get("pods") else Text("no serving pods"),
        *([groups] if report.get("groups") else []),
        Text(f"endpoint: {report.get('endpoint')}"),
        Text(
            f"revision: current {revision.get('current') or '-'} (applied {revision.get('current_applied_at') or '-'}), "
            f"previous {revision.get('previous') or '-'}"
        ),
        Text(f"last smoke: {smoke.get('status') if smoke else 'not recorded'}"),
        *(_canary_lines(report["canary"]) if "canary" in report else []),
        *_admission_lines(report.get("admission") or []),
        *_blue_green_lines(report.get("blue_green") or {}),
    )


def groups_table(groups: list[GroupHealth]) -> Table:
    """Each serving group's ComputeDomain state and its trays' health, a line per tray (fault_guard/health.py rows);
    `status` and `watch --groups` show it."""
    table = Table("GROUP", "COMPUTEDOMAIN", "TRAYS", box=None)
    for group in groups:
        trays = "\n".join(tray_text(t) for t in group["trays"]) or "-"
        table.add_row(str(group["group"]), domain_text(group.get("compute_domain")), _text(trays))
    return table


def _canary_lines(run: dict[str, object] | None) -> list[Text]:
    """The last canary run's line (shown when the profile runs the canary: the status then has the key)."""
    if run is None:
        return [Text("last canary: none recorded")]
    return [Text(safe_text(str(run["line"])), style="" if run.get("verdict") == "ok" else "yellow")]


def _admission_lines(groups: list[dict[str, object]]) -> list[Text]:
    """A line per group Kueue admits (or still holds), with its Workload and Kueue's reason."""
    lines = []
    for g in groups:
        state = "admitted" if g["admitted"] else f"queued ({g['reason']}: {g['message']})"
        lines.append(_text(f"kueue: {g['lws']} group {g['group']} {state}, Workload/{g['workload']}"))
    return lines


def _blue_green_lines(state: JsonObject) -> list[Text]:
    """A line while two groups exist (a blue-green under way, or left half-done by a failure)."""
    if not state.get("in_progress"):
        return []
    others = [name for name in state.get("groups", []) if name != state.get("serving")]
    previews = f"; preview Service {', '.join(state['previews'])}" if state.get("previews") else ""
    return [
        Text(
            f"blue-green in progress: {state.get('serving') or 'no group'} serving, "
            f"{', '.join(others) or 'no other group'} beside it{previews} "
            "(`up --strategy blue-green` again replaces it, `down` removes both)"
        )
    ]


def kubernetes_down_question(profile: Profile, purge: bool) -> str:
    """What `down` asks on a terminal: the namespace it empties (and whether the weights go too)."""
    deleted = "everything, including the downloaded weights" if purge else "the deployment (weights kept)"
    return f"Delete {deleted} of {profile.name!r} in namespace {profile.kubernetes.namespace!r}?"
