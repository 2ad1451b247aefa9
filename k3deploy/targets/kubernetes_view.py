"""What the rollout commands show: `status`'s table and `down`'s confirmation question.

A Kubernetes report gets its object and pod tables; any other target's report is shown as key/value rows.
"""

from __future__ import annotations

import json
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from k3deploy.profile.model import Profile


def _kubernetes_view(report: dict[str, Any]) -> Group:
    objects = Table("KIND", "NAME", "STATE", "READY", "DETAIL", box=None)
    for row in report.get("objects", []):
        objects.add_row(row["kind"], row["name"], row["state"], "yes" if row["ready"] else "no", row.get("detail", ""))
    pods = Table("POD", "GROUP", "WORKER", "NODE", "CLIQUE", "STATE", "RESTARTS", box=None)
    for pod in report.get("pods", []):
        pods.add_row(pod["name"], str(pod.get("group") or "-"), str(pod.get("worker") or "-"), pod.get("node") or "-",
                     pod.get("clique") or "-", pod["phase"], str(pod["restarts"]))
    revision = report.get("revision") or {}
    smoke = report.get("smoke")
    state = "ready" if report.get("ready") else ("not ready" if report.get("deployed") else "not deployed")
    return Group(
        Text(f"deployment {report.get('deployment')} in namespace {report.get('namespace')}: {state}"),
        objects,
        pods if report.get("pods") else Text("no serving pods"),
        Text(f"endpoint: {report.get('endpoint')}"),
        Text(f"revision: current {revision.get('current') or '-'} (applied {revision.get('current_applied_at') or '-'}), "
             f"previous {revision.get('previous') or '-'}"),
        Text(f"last smoke: {smoke.get('status') if smoke else 'not recorded'}"),
    )


def status_view(report: dict[str, Any]) -> Group | Table:
    """A rich renderable of a status report (the dict `-o json` prints)."""
    if report.get("target") == "local":
        from k3deploy.cli.local_status_view import local_status_view

        return local_status_view(report)
    if report.get("target") == "kubernetes":
        return _kubernetes_view(report)
    table = Table("FIELD", "VALUE", box=None)
    for key, value in report.items():
        table.add_row(key, value if isinstance(value, str) else json.dumps(value))
    return table


def down_question(profile: Profile, purge: bool, local_status: dict[str, Any] | None = None) -> str:
    """What `down` asks on a terminal: the local server (pid, endpoint) it stops, or the namespace it empties.

    `local_status` is the local target's status report (pid and endpoint when a server runs).
    """
    if profile.target == "local":
        state = local_status or {}
        if state.get("running"):
            what = f"Stop the local vLLM server of {profile.name!r} (pid {state.get('pid')}, {state.get('endpoint')})"
        else:
            what = f"No local vLLM server of {profile.name!r} is running (port {profile.vllm.port}); clear its record"
        if purge:
            what += f" and delete the generated model and vLLM's cache under {state.get('state_dir') or 'its state directory'}"
        return what + "?"
    deleted = "everything, including the downloaded weights" if purge else "the deployment (weights kept)"
    return f"Delete {deleted} of {profile.name!r} in namespace {profile.kubernetes.namespace!r}?"
