"""What the rollout commands show for a Kubernetes deployment: `status`'s tables and `down`'s question."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from k3deploy.console import safe_text
from k3deploy.fault_guard.health import GroupHealth, domain_text, tray_text
from k3deploy.kobject import JsonObject
from k3deploy.profile.model import Profile
from k3deploy.targets.kubernetes.summary import fold_groups, group_ranges, pod_states, summarised


def _text(value: object) -> Text:
    """A cell of what the cluster said (node names, labels, conditions): plain text, controls shown as escapes."""
    return Text(safe_text(str(value)))


def kubernetes_status_view(report: JsonObject, details: bool = False) -> Group:
    """A rich renderable of a Kubernetes status report (the dict `-o json` prints); more than SUMMARY_ABOVE groups
    are summarised (pods by state, healthy groups folded into a count) unless `details`."""
    objects = Table("KIND", "NAME", "STATE", "READY", "DETAIL", box=None)
    for row in report.get("objects", []):
        objects.add_row(
            row["kind"], row["name"], row["state"], "yes" if row["ready"] else "no", _text(row.get("detail", ""))
        )
    groups_rows = report.get("groups") or []
    summary = summarised(len({p.get("group") for p in report.get("pods", [])}), details)
    pods = _pod_states_table(report["pods"]) if summary else _pods_table(report.get("pods", []))
    groups = groups_table(groups_rows, details)
    revision = report.get("revision") or {}
    smoke = report.get("smoke")
    state = "ready" if report.get("ready") else ("not ready" if report.get("deployed") else "not deployed")
    return Group(
        Text(f"deployment {report.get('deployment')} in namespace {report.get('namespace')}: {state}"),
        objects,
        pods if report.get("pods") else Text("no serving pods"),
        *([groups] if groups_rows else []),
        Text(f"endpoint: {report.get('endpoint')}"),
        Text(
            f"revision: current {revision.get('current') or '-'} (applied {revision.get('current_applied_at') or '-'}), "
            f"previous {revision.get('previous') or '-'}"
        ),
        Text(f"last smoke: {smoke.get('status') if smoke else 'not recorded'}"),
        *(_canary_lines(report["canary"]) if "canary" in report else []),
        *_admission_lines(report.get("admission") or [], summary),
        *_blue_green_lines(report.get("blue_green") or {}),
        *([Text(SUMMARY_NOTE, style="dim")] if summary else []),
    )


#: Said under a summarised status (or watch --groups) view.
SUMMARY_NOTE = "summarised by state: --details lists every pod and tray, -o json carries them all"


def _pods_table(pods: list[JsonObject]) -> Table:
    """A row per serving pod."""
    table = Table("POD", "GROUP", "WORKER", "NODE", "CLIQUE", "STATE", "RESTARTS", "WEIGHTS", box=None)
    for pod in pods:
        table.add_row(
            pod["name"],
            str(pod.get("group") or "-"),
            str(pod.get("worker") or "-"),
            _text(pod.get("node") or "-"),
            _text(pod.get("clique") or "-"),
            pod["phase"],
            str(pod["restarts"]),
            _text(pod.get("weights") or "-"),
        )
    return table


def _pod_states_table(pods: list[JsonObject]) -> Table:
    """A row per pod state (summary.py `pod_states`): how many pods, their restarts, which groups."""
    table = Table("STATE", "READY", "PODS", "RESTARTS", "GROUPS", box=None, title="serving pods by state")
    for row in pod_states(pods):
        table.add_row(_text(row.phase), "yes" if row.ready else "no", str(row.pods), str(row.restarts), row.groups)
    return table


def groups_table(groups: list[GroupHealth], details: bool = True) -> Table:
    """Each serving group's ComputeDomain state and its trays' health, a line per tray (fault_guard/health.py rows);
    `status` and `watch --groups` show it. More than SUMMARY_ABOVE groups and not `details`: the healthy groups are
    one row with their count (summary.py `fold_groups`), every other group its own row."""
    table = Table("GROUP", "COMPUTEDOMAIN", "TRAYS", box=None)
    shown = groups
    if summarised(len(groups), details):
        folded, shown = fold_groups(groups)
        for row in folded:
            table.add_row(
                f"{row.groups} ({row.count} groups)",
                "Ready (all trays Ready)" if row.compute_domain else "-",
                f"{row.trays} trays, all healthy",
            )
    for group in shown:
        trays = "\n".join(tray_text(t) for t in group["trays"]) or "-"
        table.add_row(str(group["group"]), domain_text(group.get("compute_domain")), _text(trays))
    return table


def _canary_lines(run: dict[str, object] | None) -> list[Text]:
    """The last canary run's line (shown when the profile runs the canary: the status then has the key)."""
    if run is None:
        return [Text("last canary: none recorded")]
    return [Text(safe_text(str(run["line"])), style="" if run.get("verdict") == "ok" else "yellow")]


def _admission_lines(groups: list[dict[str, object]], summary: bool = False) -> list[Text]:
    """A line per group Kueue admits (or still holds), with its Workload and Kueue's reason; summarised, the admitted
    groups are one line with their count and only the held ones have a line each."""
    lines = []
    if summary:
        admitted = [g for g in groups if g["admitted"]]
        groups = [g for g in groups if not g["admitted"]]
        if admitted:
            lines.append(
                _text(f"kueue: {len(admitted)} group(s) admitted ({group_ranges(str(g['group']) for g in admitted)})")
            )
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
