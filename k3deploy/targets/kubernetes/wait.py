"""Watch-based waiting for a phase of the set: never sleep-polling the API.

The streams (targets/kubernetes/streams.py) list and watch the waited objects' kinds, the namespace's pods and, beside a
LeaderWorkerSet, its ControllerRevisions, into one inbox. One drain loop absorbs each batch of events into the state,
captures a crashed container's log at once (before LWS deletes the group), asks the pure judge (rollout/judge.py)
and stops when it says ready, raises with a diagnosis when it finds a failure, or times out at the deadline.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from k3deploy.errors import CapturedLog, RolloutFailed, RolloutTimeout
from k3deploy.kobject import KubeObject
from k3deploy.kube.port import KubePort
from k3deploy.kueue import API_VERSION as WORKLOAD_API
from k3deploy.kueue import QUEUE_LABEL, WORKLOAD_KIND
from k3deploy.lws import NAME_LABEL, REVISIONS, WAITED_KINDS
from k3deploy.pod_volumes import mounts_claims
from k3deploy.preflight.facts import GPU_RESOURCE
from k3deploy.reporter import Reporter
from k3deploy.rollout.claims import CLAIM_EVENTS_SELECTOR, CLAIM_FAILURES, CLAIMS, CLASSES, EVENTS
from k3deploy.rollout.judge import (
    CLAIM_TEMPLATES,
    OPTIONAL_KINDS,
    Failure,
    WaitState,
    current_key,
    in_set,
    judge,
    name_of,
    outgoing,
    pending,
    pod_row,
)
from k3deploy.rollout.queue import GroupAdmission, group_admissions
from k3deploy.rollout.readiness import PodProblem, pod_problems, restarts
from k3deploy.targets.kubernetes.diagnosis import diagnose, read_log
from k3deploy.targets.kubernetes.streams import Broken, Changed, Event, Inbox, Note, Synced, Unavailable

__all__ = ["WAITED_KINDS", "Waiter"]


class Waiter:
    """Waits for objects of one namespace to be ready, failing fast on what waiting will not fix."""

    def __init__(
        self,
        api: KubePort,
        namespace: str,
        reporter: Reporter,
        *,
        deadline: float,
        unschedulable_grace_s: float,
        timeout_label: str = "",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.api, self.namespace, self.reporter = api, namespace, reporter
        self.deadline = deadline
        self.grace = unschedulable_grace_s
        self.timeout_label = timeout_label
        self.clock = clock
        #: Crashed containers' logs, read the moment they crashed (by pod), and the latest of them.
        self._logs: dict[str, CapturedLog] = {}
        self._last_log: CapturedLog | None = None
        #: Kueue's last word said per group Workload, so a queued group is explained once per change.
        self._queue_said: dict[str, str] = {}

    def wait(self, targets: list[KubeObject]) -> None:
        """Return when every waited target is ready on its current spec; raise RolloutFailed / RolloutTimeout."""
        waited = [t for t in targets if t.get("kind") in WAITED_KINDS]
        if not waited:
            return
        kinds = {(t["apiVersion"], t["kind"]) for t in waited} | {("v1", "Pod")}
        if any(t["kind"] == "LeaderWorkerSet" for t in waited):
            kinds |= {("apps/v1", REVISIONS), ("resource.k8s.io/v1", CLAIM_TEMPLATES)}
        if any(QUEUE_LABEL in ((t.get("metadata") or {}).get("labels") or {}) for t in waited):
            # Kueue holds each group's pods behind scheduling gates until its Workload is admitted whole.
            kinds |= {(WORKLOAD_API, WORKLOAD_KIND)}
        if mounts_claims(waited):
            # A pod the scheduler holds for an unbound claim waits for its provisioner, or fails on what it reported.
            kinds |= {("v1", CLAIMS), ("storage.k8s.io/v1", CLASSES), ("v1", EVENTS)}

        def step(state: WaitState, events: list[Event], now: float) -> bool:
            for event in events:
                if isinstance(event, Synced) and event.kind == "Pod":
                    for pod in event.items:
                        self._observe_crash(pod, waited, state)
                elif isinstance(event, Changed) and event.kind == "Pod" and event.type != "DELETED":
                    self._observe_crash(event.obj, waited, state)
            verdict = judge(state, waited, now, self.grace)
            self.reporter.show(verdict.rows)
            for queued in self._queued(waited, state):
                line = queued.line()
                if self._queue_said.get(queued.workload) != line:
                    self._queue_said[queued.workload] = line
                    self.reporter.note(f"  {line}")
            for key, how in verdict.accepted:
                self.reporter.note(f"  {key} is on its current spec: {how}")
            if verdict.failure is not None:
                self._fail(verdict.failure, waited, state)
            return verdict.ready

        def at_deadline(state: WaitState) -> None:
            self._timeout(waited, state)

        self._drain(sorted(kinds), step, at_deadline)

    def wait_pods_gone(self, lws_name: str) -> None:
        """Return once no pod of the LeaderWorkerSet `lws_name` is left (watching, not polling)."""

        def step(state: WaitState, _events: list[Event], now: float) -> bool:
            left = [
                p
                for p in state.objects["Pod"].values()
                if (p["metadata"].get("labels") or {}).get(NAME_LABEL) == lws_name
            ]
            self.reporter.show([pod_row(p, state, now) for p in sorted(left, key=name_of)])
            return not left

        def at_deadline(_state: WaitState) -> None:
            raise RolloutTimeout(
                f"pods of {lws_name} still present at the deadline{self.timeout_label}",
                diagnose(self.api, self.namespace, f"LeaderWorkerSet/{lws_name}", "Terminating", "", {lws_name}, None),
                hint="check for finalizers on the pods (`kubectl get pods -o yaml`)",
            )

        self._drain([("v1", "Pod")], step, at_deadline)

    def _drain(
        self,
        kinds: list[tuple[str, str]],
        step: Callable[[WaitState, list[Event], float], bool],
        at_deadline: Callable[[WaitState], None],
    ) -> None:
        """The one loop: absorb each batch, then (once every kind is listed) `step` until it says done."""
        state = WaitState(objects={kind: {} for _, kind in kinds})
        synced: set[str] = set()
        # Events that arrive before every kind is listed are judged with the first full state, not dropped.
        unjudged: list[Event] = []
        selectors = {EVENTS: CLAIM_EVENTS_SELECTOR}
        with Inbox(self.api, self.namespace, kinds, optional=OPTIONAL_KINDS, selectors=selectors) as inbox:
            while True:
                now = self.clock()
                if now >= self.deadline:
                    at_deadline(state)
                    return
                events = inbox.drain(min(self.deadline - now, 1.0))
                for event in events:
                    self._absorb(event, state, synced)
                unjudged += events
                if len(synced) < len(kinds):
                    continue
                batch, unjudged = unjudged, []
                if step(state, batch, self.clock()):
                    return

    def _absorb(self, event: Event, state: WaitState, synced: set[str]) -> None:
        if isinstance(event, Synced):
            state.objects[event.kind] = {name_of(obj): obj for obj in event.items}
            synced.add(event.kind)
        elif isinstance(event, Changed):
            if event.type == "DELETED":
                state.objects[event.kind].pop(name_of(event.obj), None)
            else:
                state.objects[event.kind][name_of(event.obj)] = event.obj
        elif isinstance(event, Note):
            self.reporter.note(f"  {event.text}")
        elif isinstance(event, Unavailable):
            state.unavailable.add(event.kind)
            synced.add(event.kind)
            plural = event.kind + ("es" if event.kind.endswith("s") else "s")
            self.reporter.note(f"  cannot read {plural} ({event.reason}); judging without them")
        elif isinstance(event, Broken):
            raise event.error

    def _observe_crash(self, pod: KubeObject, waited: list[KubeObject], state: WaitState) -> None:
        """Read a crashed container's log as soon as its pod shows the crash, before the group is deleted."""
        for target in waited:
            if in_set(pod, target, state):
                if outgoing(pod, current_key(target, state)):
                    return
                for problem in pod_problems(pod):
                    if problem.crashed:
                        self._capture(target, pod, problem, state)
                return

    def _capture(self, target: KubeObject, pod: KubeObject, problem: PodProblem, state: WaitState) -> None:
        meta = pod.get("metadata", {})
        mark = (meta.get("uid"), problem.container, restarts(pod), problem.reason)
        seen = state.crashes.setdefault(name_of(target), set())
        if mark in seen:
            return
        seen.add(mark)
        log = read_log(self.api, pod, problem.container)
        if log.lines:
            self._logs[name_of(pod)] = log
            self._last_log = log
        self.reporter.note(
            f"  {name_of(pod)}: container {problem.container} {problem.reason}; log captured ({len(log.lines)} lines)"
        )

    def _job_pod_log(self, job: KubeObject | None, name: str) -> CapturedLog | None:
        """The log of a failed Job's pod, read from the API: the Job's failure can arrive before its pod's crash."""
        uid = (job or {}).get("metadata", {}).get("uid")
        selector = f"batch.kubernetes.io/controller-uid={uid}" if uid else f"job-name={name}"
        pods, _ = self.api.list("v1", "Pod", self.namespace, label_selector=selector)
        failed = [p for p in pods if (p.get("status") or {}).get("phase") == "Failed"] or pods
        for pod in sorted(
            failed, key=lambda p: str((p.get("metadata") or {}).get("creationTimestamp") or ""), reverse=True
        ):
            log = read_log(self.api, pod, None)
            if log.lines:
                return log
        return None

    def _fail(self, failure: Failure, waited: list[KubeObject], state: WaitState) -> None:
        log = self._logs.get(failure.pod or "") or self._last_log
        if (
            log is None
            and failure.pod
            and failure.reason not in CLAIM_FAILURES
            and failure.reason
            not in (
                "Unschedulable",
                "ResourceClaimTemplateNotFound",
                "ImagePullBackOff",
                "ErrImagePull",
                "InvalidImageName",
            )
        ):
            pod = state.objects.get("Pod", {}).get(failure.pod)
            if pod is not None:
                # The crashed container's log, not the default container's (an init container comes first).
                container = next((p.container for p in pod_problems(pod) if p.crashed), None)
                log = read_log(self.api, pod, container)
        if log is None and failure.subject.startswith("Job/"):
            name = failure.subject.removeprefix("Job/")
            log = self._job_pod_log(state.objects.get("Job", {}).get(name), name)
        names = failure.names | {name_of(t) for t in waited}
        diagnosis = diagnose(self.api, self.namespace, failure.subject, failure.reason, failure.message, names, log)
        self.reporter.block(diagnosis.lines())
        raise RolloutFailed(
            f"{failure.subject}: {failure.reason}" + (f": {failure.message}" if failure.message else ""),
            diagnosis,
            hint=failure_hint(
                failure.reason, state.objects.get("Pod", {}).get(failure.pod or ""), failure.subject, self.namespace
            ),
        )

    @staticmethod
    def _queued(waited: list[KubeObject], state: WaitState) -> list[GroupAdmission]:
        """The waited LeaderWorkerSets' groups that Kueue has not admitted yet."""
        workloads = list(state.objects.get(WORKLOAD_KIND, {}).values())
        if not workloads:
            return []
        return [
            queued
            for target in waited
            if target.get("kind") == "LeaderWorkerSet"
            for queued in group_admissions(workloads, name_of(target))
            if not queued.admitted
        ]

    def _timeout(self, waited: list[KubeObject], state: WaitState) -> None:
        subject, reason, message, names = pending(waited, state)
        queued = self._queued(waited, state)
        if queued:
            reason = "QueuedByKueue"
            message = "; ".join([*(q.line() for q in queued), message]).strip("; ")
        diagnosis = diagnose(self.api, self.namespace, subject, reason, message, names, self._last_log)
        self.reporter.block(diagnosis.lines())
        raise RolloutTimeout(
            f"{subject} not ready before the deadline{self.timeout_label}: {reason}"
            + (f": {message}" if message else ""),
            diagnosis,
            hint=(
                "Kueue admits a group whole once its ClusterQueue has quota and one clique has room for all its pods "
                f"(`kubectl get workloads -n {self.namespace}`, `kubectl describe clusterqueue`)"
                if queued
                else "raise --timeout (or kubernetes.rollout_timeout_s) if the weights are still loading; "
                "the diagnosis above shows what was pending"
            ),
        )


def failure_hint(reason: str, pod: KubeObject | None = None, subject: str = "", namespace: str = "") -> str:
    """The hint line of a failed rollout; an unschedulable pod that requests no GPU (the prefetch or smoke Job's)
    gets its own: GPU capacity is not what it lacks, a node it tolerates is. A claim that will not be provisioned
    is pointed at its StorageClass and provisioner."""
    if reason in CLAIM_FAILURES:
        claim = subject.removeprefix(f"{CLAIMS}/") or "<claim>"
        return (
            "check the claim's StorageClass (kubernetes.storage_class, `kubectl get storageclass`) and that its "
            f"provisioner runs and can make the volume (`kubectl describe pvc {claim}"
            + (f" -n {namespace}" if namespace else "")
            + "`)"
        )
    if reason == "Unschedulable" and pod is not None and not _requests_gpu(pod):
        return (
            "this pod needs no GPU: the cluster needs a node it tolerates (GPU nodes carry the nvidia.com/gpu taint) "
            "with room for its requests; the scheduler's message above says what no node met"
        )
    return _HINTS.get(reason, "see the diagnosis above; `k3deploy status` shows the live state")


def _requests_gpu(pod: KubeObject) -> bool:
    containers = (pod.get("spec") or {}).get("containers") or []
    return any(
        GPU_RESOURCE in ((c.get("resources") or {}).get(kind) or {})
        for c in containers
        for kind in ("limits", "requests")
    )


_HINTS = {
    "Unschedulable": "the group needs nodes with free nvidia.com/gpu in one NVLink clique; `k3deploy preflight` checks capacity",
    "ImagePullBackOff": "check vllm.image (tag and architecture) and the registry credentials",
    "ErrImagePull": "check vllm.image (tag and architecture) and the registry credentials",
    "InvalidImageName": "check vllm.image",
    "CrashLoopBackOff": "the server crashed while starting: read the log lines above",
    "CrashLoop": "the server crashed while starting: read the log lines above",
    "ResourceClaimTemplateNotFound": "the pods' resourceClaimTemplateName must be the ComputeDomain's "
    "spec.channel.resourceClaimTemplate.name (`kubectl get resourceclaimtemplates,computedomains`)",
    "OOMKilled": "the container ran out of memory: raise kubernetes.memory_request or lower max_model_len",
    "BackoffLimitExceeded": "the Job's pod kept failing: read its log lines above",
}
