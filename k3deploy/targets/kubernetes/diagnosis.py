"""Why a rollout failed: the failing object, its reason, the last events and log lines, as one block.

Logs are captured by the waiter the moment a container crashes (LeaderWorkerSet deletes the whole group
on a restart, and the logs with it); events are read when the block is built.
"""

from __future__ import annotations

from k3deploy.errors import CapturedLog, Diagnosis
from k3deploy.kobject import KubeObject
from k3deploy.kube.port import KubePort

#: Events shown in a diagnosis (the latest ones).
EVENT_LINES = 10
#: Log lines kept from a crashed container.
LOG_LINES = 40


def _event_time(event: KubeObject) -> str:
    return str(
        event.get("lastTimestamp")
        or event.get("eventTime")
        or event.get("firstTimestamp")
        or event.get("metadata", {}).get("creationTimestamp")
        or ""
    )


def format_events(events: list[KubeObject], names: set[str], limit: int = EVENT_LINES) -> list[str]:
    """The last `limit` events about any of `names`, oldest first, one line each."""
    involved = [e for e in events if (e.get("involvedObject") or {}).get("name") in names]
    involved.sort(key=_event_time)
    lines = []
    for event in involved[-limit:]:
        obj = event.get("involvedObject") or {}
        count = int(event.get("count") or 1)
        repeat = f" (x{count})" if count > 1 else ""
        lines.append(
            f"{event.get('type', 'Normal')} {event.get('reason', '')} {obj.get('kind')}/{obj.get('name')}: "
            f"{(event.get('message') or '').strip()}{repeat}"
        )
    return lines


def _running_again(pod: KubeObject, container: str | None) -> bool:
    status = pod.get("status") or {}
    for cs in list(status.get("initContainerStatuses") or []) + list(status.get("containerStatuses") or []):
        if container is None or cs.get("name") == container:
            return "running" in (cs.get("state") or {}) and int(cs.get("restartCount") or 0) > 0
    return False


def read_log(api: KubePort, pod: KubeObject, container: str | None, lines: int = LOG_LINES) -> CapturedLog:
    """The tail of the log of a container's crashed run.

    A container waiting to restart (CrashLoopBackOff) or terminated still shows that run as its current log;
    one already running again has it as `--previous`. The other one is the fallback.
    """
    meta = pod.get("metadata", {})
    name, namespace = meta.get("name", ""), meta.get("namespace", "")
    previous_first = _running_again(pod, container)
    text = api.pod_log(name, namespace, container, tail_lines=lines, previous=previous_first)
    if not text.strip():
        text = api.pod_log(name, namespace, container, tail_lines=lines, previous=not previous_first)
    return CapturedLog(name, container, text.splitlines()[-lines:])


def diagnose(
    api: KubePort, namespace: str, subject: str, reason: str, message: str, names: set[str], log: CapturedLog | None
) -> Diagnosis:
    """Build the diagnosis block, reading the namespace's events now."""
    return Diagnosis(subject, reason, message, format_events(api.events(namespace), names), log)
