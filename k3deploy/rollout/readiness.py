"""Readiness as pure predicates per kind over the raw objects the API server returns.

No I/O: the waiter feeds objects in; these functions say ready / failed / why. Pods get a finer look
(scheduling, image pulls, crash loops, OOM kills) because that is where a model server fails.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeGuard

from k3deploy.kobject import KubeObject

#: Container waiting reasons that will not fix themselves: the rollout fails at once.
FATAL_WAITING_REASONS = frozenset(
    {
        "ImagePullBackOff",
        "ErrImageNeverPull",
        "InvalidImageName",
        "CrashLoopBackOff",
        "CreateContainerConfigError",
        "CreateContainerError",
    }
)


@dataclass(frozen=True)
class Readiness:
    """Where one object stands: ready, failed for good, or still progressing (with why)."""

    ready: bool
    failed: bool = False
    reason: str = ""
    message: str = ""


@dataclass(frozen=True)
class PodProblem:
    """Something wrong with a pod: reason (Unschedulable, ImagePullBackOff, OOMKilled, ...) and the detail."""

    reason: str
    message: str
    container: str | None = None
    #: The container has exited with an error, so `logs --previous` (or current, if not restarted) has its output.
    crashed: bool = False


def condition(obj: KubeObject, type_: str) -> KubeObject | None:
    """The status condition of a type, or None."""
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == type_:
            found: KubeObject = cond
            return found
    return None


def _true(cond: KubeObject | None) -> TypeGuard[KubeObject]:
    return cond is not None and str(cond.get("status")) == "True"


def lws_readiness(obj: KubeObject) -> Readiness:
    """A LeaderWorkerSet is ready when its controller saw this generation, says Available and every group is ready and updated."""
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    replicas = int(spec.get("replicas", 1))
    generation = int(obj.get("metadata", {}).get("generation") or 0)
    observed = status.get("observedGeneration")
    ready = int(status.get("readyReplicas") or 0)
    updated = int(status.get("updatedReplicas") or 0)
    counts = f"{ready}/{replicas} groups ready, {updated} updated"
    if observed is not None and int(observed) < generation:
        return Readiness(
            False, reason="Progressing", message=f"controller has not seen generation {generation} yet ({counts})"
        )
    available = condition(obj, "Available")
    if (
        _true(available)
        and available.get("observedGeneration") not in (None, "")
        and int(available["observedGeneration"]) < generation
    ):
        return Readiness(
            False,
            reason="Progressing",
            message=f"Available is from generation {available['observedGeneration']} ({counts})",
        )
    if _true(condition(obj, "UpdateInProgress")):
        return Readiness(False, reason="UpdateInProgress", message=counts)
    if _true(available) and ready >= replicas and updated >= replicas:
        return Readiness(True, reason="Available", message=counts)
    reason = (available or {}).get("reason") or "Progressing"
    return Readiness(False, reason=reason, message=counts)


def job_readiness(obj: KubeObject) -> Readiness:
    """A Job is ready when Complete, failed for good when its Failed condition is True."""
    status = obj.get("status") or {}
    counts = f"{status.get('succeeded') or 0} succeeded, {status.get('active') or 0} active, {status.get('failed') or 0} failed"
    failed = condition(obj, "Failed")
    if _true(failed):
        return Readiness(
            False, failed=True, reason=failed.get("reason") or "Failed", message=failed.get("message") or counts
        )
    if _true(condition(obj, "Complete")):
        return Readiness(True, reason="Complete", message=counts)
    completions = (obj.get("spec") or {}).get("completions")
    if completions is not None and int(status.get("succeeded") or 0) >= int(completions) and not status.get("active"):
        return Readiness(True, reason="Complete", message=counts)
    return Readiness(False, reason="Running" if status.get("active") else "Pending", message=counts)


def readiness(obj: KubeObject) -> Readiness:
    """Readiness of any object of the set: LWS and Jobs are judged; other kinds are ready once they exist."""
    kind = obj.get("kind")
    if kind == "LeaderWorkerSet":
        return lws_readiness(obj)
    if kind == "Job":
        return job_readiness(obj)
    if kind == "ComputeDomain":
        # Informational: a ComputeDomain turns Ready only once pods that claim it are scheduled.
        state = (obj.get("status") or {}).get("status") or "NotReady"
        return Readiness(True, reason=state)
    return Readiness(True, reason="Exists")


def _container_statuses(pod: KubeObject) -> list[KubeObject]:
    status = pod.get("status") or {}
    return list(status.get("initContainerStatuses") or []) + list(status.get("containerStatuses") or [])


def pod_problems(pod: KubeObject) -> list[PodProblem]:
    """Everything wrong with a pod, most telling first: scheduling, then per-container failures."""
    problems: list[PodProblem] = []
    scheduled = condition(pod, "PodScheduled")
    if scheduled and str(scheduled.get("status")) == "False":
        problems.append(PodProblem(scheduled.get("reason") or "Unschedulable", scheduled.get("message") or ""))
    for cs in _container_statuses(pod):
        name = cs.get("name")
        state = cs.get("state") or {}
        last = (cs.get("lastState") or {}).get("terminated") or {}
        terminated = state.get("terminated") or {}
        waiting = state.get("waiting") or {}
        if terminated.get("reason") == "OOMKilled" or last.get("reason") == "OOMKilled":
            detail = terminated if terminated.get("reason") == "OOMKilled" else last
            problems.append(
                PodProblem(
                    "OOMKilled",
                    f"container {name} was killed for exceeding its memory (exit {detail.get('exitCode', 137)})",
                    name,
                    True,
                )
            )
        elif waiting.get("reason") in FATAL_WAITING_REASONS or waiting.get("reason") == "ErrImagePull":
            crashed = waiting.get("reason") == "CrashLoopBackOff"
            problems.append(PodProblem(waiting["reason"], waiting.get("message") or "", name, crashed))
        elif terminated and int(terminated.get("exitCode") or 0) != 0:
            problems.append(
                PodProblem(
                    terminated.get("reason") or "Error",
                    f"container {name} exited with code {terminated.get('exitCode')}",
                    name,
                    True,
                )
            )
    return problems


def is_fatal(problem: PodProblem) -> bool:
    """True when the problem will not clear by waiting (scheduling is judged separately, with a grace period)."""
    return problem.reason in FATAL_WAITING_REASONS or problem.reason == "OOMKilled"


def pod_ready(pod: KubeObject) -> bool:
    """The pod runs and its Ready condition is True: what the StatefulSet controller counts as ready
    (kubernetes pkg/controller/statefulset/stateful_set_utils.go `isRunningAndReady`) and what LWS counts for a group
    (sigs.k8s.io/lws pkg/utils/pod/pod_utils.go `PodRunningAndReady`), so k3deploy never calls a group ready that
    the controllers do not."""
    return (pod.get("status") or {}).get("phase") == "Running" and _true(condition(pod, "Ready"))


def restarts(pod: KubeObject) -> int:
    """Container restarts of a pod, summed."""
    return sum(int(cs.get("restartCount") or 0) for cs in _container_statuses(pod))


def pod_phase_label(pod: KubeObject) -> str:
    """A short state for a pod the way `kubectl get pods` would show it."""
    if pod.get("metadata", {}).get("deletionTimestamp"):
        return "Terminating"
    problems = pod_problems(pod)
    if problems:
        return problems[0].reason
    if pod_ready(pod):
        return "Ready"
    phase = (pod.get("status") or {}).get("phase") or "Pending"
    if phase == "Pending" and (pod.get("spec") or {}).get("nodeName"):
        return "ContainerCreating"
    return phase
