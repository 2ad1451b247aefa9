"""Watch-based waiting for a phase of the set: never sleep-polling the API.

One thread per watched kind (the waited objects' kinds, plus the namespace's pods) lists, then watches from
the list's resourceVersion, resumes from the last seen version after a dropped connection, re-lists after
`410 Gone`, and feeds one queue. The main loop judges the objects with the pure readiness predicates after
every batch of events, captures a crashed container's log at once, and stops at the deadline.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from k3deploy.errors import K3DeployError
from k3deploy.kube.api import KubeApi, http_status
from k3deploy.kube.client import translate
from k3deploy.kube.retry import is_transient
from k3deploy.rollout.diagnosis import CapturedLog, RolloutFailed, RolloutTimeout, diagnose, read_log
from k3deploy.rollout.progress import ProgressView, Row
from k3deploy.rollout.readiness import (
    LWS_GROUP_LABEL,
    LWS_NAME_LABEL,
    LWS_WORKER_LABEL,
    PodProblem,
    Readiness,
    is_fatal,
    pod_phase_label,
    pod_problems,
    readiness,
    restarts,
)

#: Crashes seen across a serving group's pods (recreated groups included) that make the rollout fail.
CRASH_LIMIT = 3
#: How long the server keeps one watch connection open before the waiter re-opens it.
WATCH_TIMEOUT_S = 60
#: Kinds whose readiness is waited for; the other kinds of a phase are ready once applied.
WAITED_KINDS = frozenset({"LeaderWorkerSet", "Job"})


class _Stream(threading.Thread):
    """List then watch one kind in a namespace, forever resuming, until stopped; messages go to `out`."""

    def __init__(self, api: KubeApi, api_version: str, kind: str, namespace: str, out: queue.Queue[tuple[Any, ...]],
                 stop: threading.Event) -> None:
        super().__init__(name=f"watch-{kind}", daemon=True)
        self.api, self.api_version, self.kind, self.namespace = api, api_version, kind, namespace
        self.out, self.stop = out, stop
        self._watcher: Any = None

    def halt(self) -> None:
        """Stop now: end the open watch connection instead of waiting for the server to close it."""
        self.stop.set()
        watcher = self._watcher
        if watcher is not None:
            watcher.stop()

    def _pause(self, seconds: float) -> None:
        self.stop.wait(seconds)

    def run(self) -> None:
        """The thread: list, watch, resume or re-list, until stopped or a non-transient error."""
        version: str | None = None
        backoff = 0.2
        while not self.stop.is_set():
            try:
                if version is None:
                    items, version = self.api.list(self.api_version, self.kind, self.namespace)
                    self.out.put(("sync", self.kind, items))
                opened = time.monotonic()
                seen = 0
                self._watcher = self.api.new_watcher()
                if self.stop.is_set():
                    return
                for event in self.api.watch(self.api_version, self.kind, self.namespace, version,
                                            timeout_s=WATCH_TIMEOUT_S, watcher=self._watcher):
                    if self.stop.is_set():
                        return
                    obj = event["object"]
                    version = obj.get("metadata", {}).get("resourceVersion") or version
                    seen += 1
                    if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                        self.out.put(("event", self.kind, event["type"], obj))
                if not seen and time.monotonic() - opened < 1:
                    # A server that ends watches at once must not turn this loop into a busy one.
                    self._pause(backoff)
                    backoff = min(backoff * 2, 5.0)
                else:
                    backoff = 0.2
            except K3DeployError as exc:
                self.out.put(("error", exc))
                return
            except Exception as exc:  # noqa: BLE001 - connection errors arrive in many types
                status = http_status(exc)
                if status == 410:
                    self.out.put(("note", f"watch of {self.kind} expired (410 Gone): re-listing"))
                    version = None
                    continue
                broken = status is None and not is_transient(exc) and not isinstance(exc, (OSError, ValueError))
                if broken or (status is not None and not is_transient(exc)):
                    self.out.put(("error", translate(exc, f"watch {self.kind}")))
                    return
                # Transient statuses and dropped or timed-out connections: resume from the last version seen.
                self._pause(backoff)
                backoff = min(backoff * 2, 5.0)


@dataclass
class _Failure:
    subject: str
    reason: str
    message: str
    names: set[str]
    pod: str | None = None


@dataclass
class _State:
    objects: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    since: dict[str, tuple[str, float]] = field(default_factory=dict)
    unschedulable_since: dict[str, float] = field(default_factory=dict)
    crashes: dict[str, set[tuple[Any, ...]]] = field(default_factory=dict)
    logs: dict[str, CapturedLog] = field(default_factory=dict)
    last_log: CapturedLog | None = None


def _name(obj: dict[str, Any]) -> str:
    return str(obj.get("metadata", {}).get("name", ""))


def _pods_in(message: tuple[Any, ...]) -> list[dict[str, Any]]:
    """The pods a stream message carries (a re-list or one added/modified pod)."""
    if len(message) < 2 or message[1] != "Pod":
        return []
    if message[0] == "sync":
        return list(message[2])
    if message[0] == "event" and message[2] != "DELETED":
        return [message[3]]
    return []


def _owned_by_job(pod: dict[str, Any], job: dict[str, Any]) -> bool:
    meta = pod.get("metadata", {})
    uid = job.get("metadata", {}).get("uid")
    if uid and any(ref.get("uid") == uid for ref in meta.get("ownerReferences") or []):
        return True
    labels = meta.get("labels") or {}
    return _name(job) in (labels.get("batch.kubernetes.io/job-name"), labels.get("job-name"))


def _in_set(pod: dict[str, Any], target: dict[str, Any], state: _State) -> bool:
    """Whether `pod` belongs to the waited `target`: a LeaderWorkerSet's by its label, a Job's by owner."""
    if target["kind"] == "LeaderWorkerSet":
        return (pod.get("metadata", {}).get("labels") or {}).get(LWS_NAME_LABEL) == _name(target)
    return _owned_by_job(pod, state.objects.get("Job", {}).get(_name(target), target))


def _verdict(target: dict[str, Any], state: _State) -> Readiness | None:
    """Where the waited `target` stands in the watched state; None when it is not there (yet)."""
    live = state.objects.get(target["kind"], {}).get(_name(target))
    return readiness(live) if live is not None else None


class Waiter:
    """Waits for objects of one namespace to be ready, failing fast on what waiting will not fix."""

    def __init__(self, api: KubeApi, namespace: str, view: ProgressView, *, deadline: float,
                 unschedulable_grace_s: float, timeout_label: str = "",
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.api, self.namespace, self.view = api, namespace, view
        self.deadline = deadline
        self.grace = unschedulable_grace_s
        self.timeout_label = timeout_label
        self.clock = clock

    def wait(self, targets: list[dict[str, Any]]) -> None:
        """Return when every waited target is ready; raise RolloutFailed / RolloutTimeout with a diagnosis."""
        waited = [t for t in targets if t.get("kind") in WAITED_KINDS]
        if not waited:
            return
        kinds = {(t["apiVersion"], t["kind"]) for t in waited} | {("v1", "Pod")}
        inbox: queue.Queue[tuple[Any, ...]] = queue.Queue()
        stop = threading.Event()
        streams = [_Stream(self.api, api_version, kind, self.namespace, inbox, stop) for api_version, kind in sorted(kinds)]
        for stream in streams:
            stream.start()
        state = _State(objects={kind: {} for _, kind in kinds})
        synced: set[str] = set()
        try:
            while True:
                now = self.clock()
                if now >= self.deadline:
                    self._timeout(waited, state)
                try:
                    messages = [inbox.get(timeout=min(max(self.deadline - now, 0.01), 1.0))]
                except queue.Empty:
                    messages = []
                while True:
                    try:
                        messages.append(inbox.get_nowait())
                    except queue.Empty:
                        break
                for message in messages:
                    self._absorb(message, state, synced)
                    for pod in _pods_in(message):
                        self._observe_crash(pod, waited, state)
                if len(synced) < len(kinds):
                    continue
                if self._judge(waited, state):
                    return
        finally:
            for stream in streams:
                stream.halt()

    def wait_pods_gone(self, lws_name: str) -> None:
        """Return once no pod of the LeaderWorkerSet `lws_name` is left (watching, not polling)."""
        inbox: queue.Queue[tuple[Any, ...]] = queue.Queue()
        stop = threading.Event()
        stream = _Stream(self.api, "v1", "Pod", self.namespace, inbox, stop)
        stream.start()
        state = _State(objects={"Pod": {}})
        synced: set[str] = set()
        try:
            while True:
                now = self.clock()
                if now >= self.deadline:
                    raise RolloutTimeout(
                        f"pods of {lws_name} still present at the deadline{self.timeout_label}",
                        diagnose(self.api, self.namespace, f"LeaderWorkerSet/{lws_name}", "Terminating", "", {lws_name}, None),
                        hint="check for finalizers on the pods (`kubectl get pods -o yaml`)",
                    )
                try:
                    self._absorb(inbox.get(timeout=min(max(self.deadline - now, 0.01), 1.0)), state, synced)
                except queue.Empty:
                    pass
                if not synced:
                    continue
                left = [p for p in state.objects["Pod"].values() if (p["metadata"].get("labels") or {}).get(LWS_NAME_LABEL) == lws_name]
                self.view.show([self._pod_row(p, state, now) for p in sorted(left, key=_name)])
                if not left:
                    return
        finally:
            stream.halt()

    def _absorb(self, message: tuple[Any, ...], state: _State, synced: set[str]) -> None:
        kind = message[1] if len(message) > 1 else ""
        if message[0] == "sync":
            state.objects[kind] = {_name(obj): obj for obj in message[2]}
            synced.add(kind)
        elif message[0] == "event":
            _, _, event_type, obj = message
            if event_type == "DELETED":
                state.objects[kind].pop(_name(obj), None)
            else:
                state.objects[kind][_name(obj)] = obj
        elif message[0] == "note":
            self.view.note(f"  {message[1]}")
        elif message[0] == "error":
            raise message[1]

    def _observe_crash(self, pod: dict[str, Any], waited: list[dict[str, Any]], state: _State) -> None:
        """Read a crashed container's log as soon as its pod shows the crash, before the group is deleted."""
        for target in waited:
            if _in_set(pod, target, state):
                for problem in pod_problems(pod):
                    if problem.crashed:
                        self._capture(target, pod, problem, state)
                return

    def _pods_of(self, target: dict[str, Any], state: _State) -> list[dict[str, Any]]:
        pods = state.objects.get("Pod", {}).values()
        return sorted(
            (p for p in pods if not p.get("metadata", {}).get("deletionTimestamp") and _in_set(p, target, state)), key=_name
        )

    def _judge(self, waited: list[dict[str, Any]], state: _State) -> bool:
        """Update the view; True when all are ready; raise when one failed."""
        now = self.clock()
        rows: list[Row] = []
        all_ready = True
        failure: _Failure | None = None
        for target in waited:
            key = f"{target['kind']}/{_name(target)}"
            verdict = _verdict(target, state)
            state_label = "NotFound" if verdict is None else (verdict.reason or ("Ready" if verdict.ready else "Progressing"))
            rows.append(self._row(state, key, state_label, verdict.message if verdict else "", now))
            if verdict is None or not verdict.ready:
                all_ready = False
            if verdict is not None and verdict.failed and failure is None:
                failure = _Failure(key, verdict.reason, verdict.message, {_name(target)})
            for pod in self._pods_of(target, state):
                rows.append(self._pod_row(pod, state, now))
                found = self._pod_failure(target, pod, state, now)
                if found is not None and failure is None:
                    failure = found
        self.view.show(rows)
        if failure is not None:
            self._fail(failure, waited, state)
        return all_ready

    def _row(self, state: _State, key: str, label: str, detail: str, now: float) -> Row:
        previous = state.since.get(key)
        if previous is None or previous[0] != label:
            state.since[key] = (label, now)
        return Row(key, label, detail, state.since[key][1])

    def _pod_row(self, pod: dict[str, Any], state: _State, now: float) -> Row:
        meta = pod.get("metadata", {})
        labels = meta.get("labels") or {}
        where = (pod.get("spec") or {}).get("nodeName") or "-"
        role = ""
        if LWS_WORKER_LABEL in labels:
            role = f"group {labels.get(LWS_GROUP_LABEL, '?')} {'leader' if labels[LWS_WORKER_LABEL] == '0' else 'worker ' + labels[LWS_WORKER_LABEL]}, "
        count = restarts(pod)
        detail = f"{role}node {where}" + (f", {count} restarts" if count else "")
        return self._row(state, f"  Pod/{_name(pod)}", pod_phase_label(pod), detail, now)

    def _pod_failure(self, target: dict[str, Any], pod: dict[str, Any], state: _State, now: float) -> _Failure | None:
        """Capture crash logs at once; return a failure when this pod cannot become ready."""
        pod_name = _name(pod)
        names = {_name(target), pod_name}
        is_job = target["kind"] == "Job"
        problems = pod_problems(pod)
        unschedulable = next((p for p in problems if p.reason == "Unschedulable"), None)
        uid = pod.get("metadata", {}).get("uid", pod_name)
        if unschedulable is None:
            state.unschedulable_since.pop(uid, None)
        else:
            first = state.unschedulable_since.setdefault(uid, now)
            if now - first >= self.grace:
                return _Failure(f"Pod/{pod_name}", "Unschedulable", unschedulable.message, names, pod_name)
        for problem in problems:
            if is_fatal(problem) and not (is_job and problem.reason == "CrashLoopBackOff"):
                return _Failure(f"Pod/{pod_name}", problem.reason, problem.message, names, pod_name)
        if not is_job:
            crashes = state.crashes.get(_name(target), set())
            if len(crashes) >= CRASH_LIMIT:
                return _Failure(f"{target['kind']}/{_name(target)}", "CrashLoop",
                                f"{len(crashes)} container crashes across the group's pods", names, pod_name)
        return None

    def _capture(self, target: dict[str, Any], pod: dict[str, Any], problem: PodProblem, state: _State) -> None:
        meta = pod.get("metadata", {})
        mark = (meta.get("uid"), problem.container, restarts(pod), problem.reason)
        seen = state.crashes.setdefault(_name(target), set())
        if mark in seen:
            return
        seen.add(mark)
        log = read_log(self.api, pod, problem.container)
        if log.lines:
            state.logs[_name(pod)] = log
            state.last_log = log
        self.view.note(f"  {_name(pod)}: container {problem.container} {problem.reason}; log captured ({len(log.lines)} lines)")

    def _job_pod_log(self, job: str) -> CapturedLog | None:
        """The log of a failed Job's pod, read from the API: the Job's failure can arrive before its pod's crash."""
        pods, _ = self.api.list("v1", "Pod", self.namespace, label_selector=f"job-name={job}")
        failed = [p for p in pods if (p.get("status") or {}).get("phase") == "Failed"] or pods
        for pod in sorted(failed, key=lambda p: str((p.get("metadata") or {}).get("creationTimestamp") or ""), reverse=True):
            log = read_log(self.api, pod, None)
            if log.lines:
                return log
        return None

    def _fail(self, failure: _Failure, waited: list[dict[str, Any]], state: _State) -> None:
        log = state.logs.get(failure.pod or "") or state.last_log
        if log is None and failure.pod and failure.reason not in ("Unschedulable", "ImagePullBackOff", "ErrImagePull", "InvalidImageName"):
            pod = state.objects.get("Pod", {}).get(failure.pod)
            if pod is not None:
                log = read_log(self.api, pod, None)
        if log is None and failure.subject.startswith("Job/"):
            log = self._job_pod_log(failure.subject.removeprefix("Job/"))
        names = failure.names | {_name(t) for t in waited}
        diagnosis = diagnose(self.api, self.namespace, failure.subject, failure.reason, failure.message, names, log)
        self.view.block(diagnosis.lines())
        raise RolloutFailed(
            f"{failure.subject}: {failure.reason}" + (f": {failure.message}" if failure.message else ""),
            diagnosis,
            hint=_HINTS.get(failure.reason, "see the diagnosis above; `k3deploy status` shows the live state"),
        )

    def _timeout(self, waited: list[dict[str, Any]], state: _State) -> None:
        subject, reason, message = "the set", "Timeout", ""
        names = {_name(t) for t in waited}
        for target in waited:
            verdict = _verdict(target, state)
            if verdict is not None and verdict.ready:
                continue
            subject = f"{target['kind']}/{_name(target)}"
            reason = "NotFound" if verdict is None else verdict.reason or "Progressing"
            message = "" if verdict is None else verdict.message
            pods = self._pods_of(target, state)
            names.update(_name(pod) for pod in pods)
            stuck = next(((pod, problems[0]) for pod in pods if (problems := pod_problems(pod))), None)
            if stuck is not None:
                message = f"{message}; Pod/{_name(stuck[0])}: {stuck[1].reason} {stuck[1].message}".strip("; ")
            break
        diagnosis = diagnose(self.api, self.namespace, subject, reason, message, names, state.last_log)
        self.view.block(diagnosis.lines())
        raise RolloutTimeout(
            f"{subject} not ready before the deadline{self.timeout_label}: {reason}" + (f": {message}" if message else ""),
            diagnosis,
            hint="raise --timeout (or kubernetes.rollout_timeout_s) if the weights are still loading; the diagnosis above shows what was pending",
        )


_HINTS = {
    "Unschedulable": "the group needs nodes with free nvidia.com/gpu in one NVLink clique; `k3deploy preflight` checks capacity",
    "ImagePullBackOff": "check vllm.image (tag and architecture) and the registry credentials",
    "ErrImagePull": "check vllm.image (tag and architecture) and the registry credentials",
    "InvalidImageName": "check vllm.image",
    "CrashLoopBackOff": "the server crashed while starting: read the log lines above",
    "CrashLoop": "the server crashed while starting: read the log lines above",
    "OOMKilled": "the container ran out of memory: raise kubernetes.memory_request or lower max_model_len",
    "BackoffLimitExceeded": "the Job's pod kept failing: read its log lines above",
}
