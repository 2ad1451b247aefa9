"""What an apply changes: object comparison without server-set fields, unified diffs, field-manager conflicts.

Pure: raw dicts and the API server's Status bodies in, plain data out.
"""

from __future__ import annotations

import copy
import difflib
import re
from dataclasses import dataclass

import yaml

from k3deploy.kobject import KubeObject

#: Metadata the server sets on every write; a diff of these says nothing about the desired state.
SERVER_METADATA = ("resourceVersion", "generation", "managedFields", "uid", "creationTimestamp", "selfLink")
_MANAGER = re.compile(r'conflict with "([^"]*)"')


def normalize(obj: KubeObject | None) -> KubeObject:
    """A copy without status and server-set metadata (empty dict for a missing object)."""
    if not obj:
        return {}
    clean = copy.deepcopy(obj)
    clean.pop("status", None)
    meta = clean.get("metadata") or {}
    for key in SERVER_METADATA:
        meta.pop(key, None)
    annotations = meta.get("annotations") or {}
    annotations.pop("kubectl.kubernetes.io/last-applied-configuration", None)
    if not annotations:
        meta.pop("annotations", None)
    return clean


def same(live: KubeObject | None, desired: KubeObject | None) -> bool:
    """True when two versions of an object agree once server-set fields are dropped."""
    return normalize(live) == normalize(desired)


def unified_diff(key: str, live: KubeObject | None, desired: KubeObject) -> str:
    """`diff -u` of the live object against what the apply would make it ('' when identical)."""

    def lines(obj: KubeObject | None) -> list[str]:
        """Sorted YAML lines of the normalized object (none for a missing one)."""
        clean = normalize(obj)
        return (
            yaml.safe_dump(clean, sort_keys=True, default_flow_style=False).splitlines(keepends=True) if clean else []
        )

    return "".join(difflib.unified_diff(lines(live), lines(desired), fromfile=f"live/{key}", tofile=f"applied/{key}"))


@dataclass(frozen=True)
class FieldConflict:
    """One field another field manager owns."""

    manager: str
    field: str


def conflicts(status: KubeObject) -> list[FieldConflict]:
    """The field conflicts of a 409 Status from a server-side apply (causes, else parsed from the message)."""
    found = []
    for cause in (status.get("details") or {}).get("causes") or []:
        match = _MANAGER.search(cause.get("message") or "")
        found.append(FieldConflict(match.group(1) if match else "unknown", cause.get("field") or "?"))
    if not found:
        message = status.get("message") or ""
        # "Apply failed with 1 conflict: conflict with "kubectl" using apps/v1: .spec.replicas"
        for part in message.split("conflict with ")[1:]:
            manager = part.split('"')[1] if part.startswith('"') else "unknown"
            field = part.rsplit(":", 1)[-1].strip() if ":" in part else "?"
            found.append(FieldConflict(manager, field))
    return found


def describe_conflicts(key: str, found: list[FieldConflict]) -> str:
    """One line naming each contested field and who owns it."""
    parts = ", ".join(f"{c.field} (owned by {c.manager!r})" for c in found) or "fields owned by another manager"
    return f"apply {key}: conflict with another field manager: {parts}"


def immutable_fields(status: KubeObject) -> list[str]:
    """The fields a 422 Invalid Status says cannot change in place (`field is immutable`, a CRD rule such as
    ComputeDomain's `A computeDomain.spec is immutable`); empty when any cause is about something else.
    """
    causes = (status.get("details") or {}).get("causes") or []
    if status.get("code") != 422 or not causes:
        return []
    found = [c.get("field") or "?" for c in causes if "immutable" in (c.get("message") or "")]
    return found if len(found) == len(causes) else []
