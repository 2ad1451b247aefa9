"""The API server's audit log as the plane's count of one user's requests: the flags that turn it on, its policy
(each request of the named users recorded once, when received, at Metadata level; nothing else), and a reader that
counts the events past an offset by (verb, resource).

`apiserver_request_total` has no user label (verb, dry_run, group, version, resource, subresource, scope,
component, code), so its delta also counts what the controllers, KWOK and the scheduler did meanwhile; the audit log
is the server's own record of each request with the user who made it.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

LOG_NAME = "audit.jsonl"


def policy(users: list[str]) -> dict[str, Any]:
    """An audit policy that records each request of `users` once, when received (Metadata level), and nothing else."""
    return {
        "apiVersion": "audit.k8s.io/v1",
        "kind": "Policy",
        "omitStages": ["ResponseStarted", "ResponseComplete", "Panic"],
        "rules": [{"level": "Metadata", "users": users}, {"level": "None"}],
    }


def log_path(plane_dir: Path) -> Path:
    """Where a plane started in `plane_dir` writes its audit log."""
    return plane_dir / "logs" / LOG_NAME


def flags(plane_dir: Path, users: list[str]) -> list[str]:
    """kube-apiserver flags for an audit log of `users`' requests (none without users)."""
    if not users:
        return []
    policy_file = plane_dir / "audit-policy.yaml"
    policy_file.write_text(yaml.safe_dump(policy(users)))
    # blocking: the event is written before the request is handled, so once a client has had its answer the request
    # is in the log (a count read after a command exits is complete).
    return [
        f"--audit-policy-file={policy_file}",
        f"--audit-log-path={log_path(plane_dir)}",
        "--audit-log-format=json",
        "--audit-log-mode=blocking",
        "--audit-log-maxsize=0",
    ]


def resource_of(event: dict[str, Any]) -> str:
    """`resource[/subresource]` of an event's object, or the path of a non-resource request (discovery)."""
    ref = event.get("objectRef") or {}
    if not ref.get("resource"):
        return str(event.get("requestURI", "")).split("?", 1)[0]
    sub = ref.get("subresource")
    return f"{ref['resource']}/{sub}" if sub else str(ref["resource"])


def offset(path: Path) -> int:
    """The log's current end (where the next command's events start)."""
    return path.stat().st_size if path.exists() else 0


def count(path: Path, since: int, user: str) -> Counter[tuple[str, str]]:
    """Requests of `user` recorded after byte `since`, by (verb, resource)."""
    counts: Counter[tuple[str, str]] = Counter()
    with path.open("rb") as log:
        log.seek(since)
        for line in log:
            if not line.strip():
                continue
            event = json.loads(line)
            if event.get("stage") != "RequestReceived" or (event.get("user") or {}).get("username") != user:
                continue
            counts[(str(event.get("verb", "")), resource_of(event))] += 1
    return counts
