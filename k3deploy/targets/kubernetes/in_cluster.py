"""`up --smoke in-cluster`: the cluster judges. The rendered smoke Job (the same `k3deploy smoke` checks, run inside
against the API Service) is run afresh, waited to completion or failure, and its verdict and figures are read from
the JSON report its log ends with (smoke/job_report.py), so an operator who cannot port-forward still gets a gated
`up`.

A fresh run: a smoke Job left by an earlier `up` (k3deploy's own, by its ownership mark) is deleted first, so the
verdict is this revision's. The per-group gates of the rolling upgrade and blue-green run the same Job, renamed after
the new group's leader (`<leader>-smoke`) and pointed at the leader's cluster DNS name, and delete it afterwards.

This module runs the Job and reads its log (the target's I/O); the pipeline judges what the log says
(smoke/job_report.py `verdict`), as it judges a smoke run from here. A Job that cannot run (one k3deploy did not
create is in the way, it is deleted while it runs, its pod cannot start, or it is not done in time) is a
SmokeUnreachable (exit 3): the install is kept. In time: by the Job's own activeDeadlineSeconds (and a grace), and
by what is left of `--timeout` when the command has one. A pod whose container waits for a reason waiting does not
clear (the image cannot be pulled, its configuration cannot be made) stops the wait at once, with that reason; every
change of the pod's state is a progress line.
"""

from __future__ import annotations

import copy
import time

from k3deploy.errors import K3DeployError, SmokeUnreachable
from k3deploy.kobject import KubeObject
from k3deploy.kube.api import object_key
from k3deploy.kube.port import KubePort
from k3deploy.lws import leader_name
from k3deploy.render.manifests import SMOKE_COMPONENT
from k3deploy.reporter import Reporter
from k3deploy.rollout.groups import group_endpoint
from k3deploy.rollout.order import job_role
from k3deploy.rollout.ownership import owned
from k3deploy.rollout.readiness import job_readiness
from k3deploy.smoke.job_report import JobRun
from k3deploy.smoke.reach import Reach
from k3deploy.targets.kubernetes.apply import apply_object
from k3deploy.targets.kubernetes.poll import poll, time_left

#: Seconds between two looks at the Job.
POLL_S = 1.0
#: Seconds past the Job's own activeDeadlineSeconds that k3deploy waits for the Job controller to say so.
GRACE_S = 120.0
#: Most bytes of the Job's log read (a report holds every chunk's stamps: a few MB for the largest smoke).
LOG_LIMIT_BYTES = 64 * 1024 * 1024
#: Container waiting reasons that waiting does not clear: the kubelet's image pull failures (pkg/kubelet/images
#: ErrImagePull, ImagePullBackOff, InvalidImageName, ErrImageNeverPull) and a container it cannot make
#: (kuberuntime CreateContainerConfigError: a missing Secret or ConfigMap key).
STUCK_REASONS = (
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
    "CreateContainerConfigError",
)
#: The label the Job controller puts on its pods (batch/v1, Kubernetes >= 1.27).
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
CONTAINER = "smoke"


def _hint(job: KubeObject) -> str:
    meta = job["metadata"]
    return (
        f"`kubectl -n {meta['namespace']} logs job/{meta['name']}` shows what it did; the install is kept, so "
        "re-run `up` (it changes nothing and smokes again), or smoke from here with --endpoint URL"
    )


def _gone(api: KubePort, job: KubeObject, deadline: float) -> None:
    meta = job["metadata"]

    def gone() -> bool | None:
        return True if api.get("batch/v1", "Job", meta["name"], meta["namespace"]) is None else None

    if poll(gone, time_left(deadline), POLL_S) is None:
        raise SmokeUnreachable(
            f"the previous smoke Job {object_key(job)} was not deleted in time", hint="check its finalizers"
        )


def fresh_job(api: KubePort, job: KubeObject, reporter: Reporter, *, force: bool = False) -> KubeObject:
    """Delete the earlier run of the smoke Job (only when k3deploy created it), then create it; the live Job."""
    meta = job["metadata"]
    live = api.get("batch/v1", "Job", meta["name"], meta["namespace"])
    if live is not None:
        if not owned(live, job):
            raise SmokeUnreachable(
                f"a Job {object_key(job)} exists and k3deploy did not create it (no ownership mark)",
                hint="k3deploy deletes only what it created; delete that Job yourself or smoke with --endpoint URL",
            )
        api.delete("batch/v1", "Job", meta["name"], meta["namespace"], propagation="Background")
        _gone(api, job, time.monotonic() + GRACE_S)
        reporter.note(f"  {object_key(job)} of the previous run deleted")
    created = apply_object(api, job, force=force)
    reporter.note(f"  {created.key} {created.action}")
    return created.obj


def job_bound_s(job: KubeObject) -> float:
    """How long the Job may take by its own deadline: activeDeadlineSeconds and a grace for the controller."""
    return float((job.get("spec") or {}).get("activeDeadlineSeconds") or 0) + GRACE_S


def stuck(pod: KubeObject) -> str | None:
    """Why a pod's container cannot start, when it waits for a reason that waiting does not clear; else None."""
    status = pod.get("status") or {}
    for container in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]:
        waiting = (container.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in STUCK_REASONS:
            said = f": {waiting['message']}" if waiting.get("message") else ""
            return f"container {container.get('name')} {waiting['reason']}{said}"
    return None


def pod_state(pod: KubeObject) -> str:
    """A pod's phase and, while a container waits, why (`Pending (ContainerCreating)`)."""
    status = pod.get("status") or {}
    waiting = [
        str(((c.get("state") or {}).get("waiting") or {}).get("reason"))
        for c in status.get("containerStatuses") or []
        if ((c.get("state") or {}).get("waiting") or {}).get("reason")
    ]
    phase = str(status.get("phase") or "Pending")
    return f"{phase} ({', '.join(waiting)})" if waiting else phase


def _wait(api: KubePort, job: KubeObject, limit: float, reporter: Reporter) -> KubeObject:
    meta = job["metadata"]
    message, seen = "", ""

    def finished() -> KubeObject | None:
        nonlocal message, seen
        live = api.get("batch/v1", "Job", meta["name"], meta["namespace"])
        if live is None:
            raise SmokeUnreachable(f"the smoke Job {object_key(job)} was deleted while it ran", hint=_hint(job))
        state = job_readiness(live)
        message = state.message
        if state.ready or state.failed:
            return live
        pod = _pod(api, live)
        if pod is not None:
            name = pod["metadata"]["name"]
            why = stuck(pod)
            if why is not None:
                raise SmokeUnreachable(
                    f"the smoke Job {object_key(job)} cannot start: pod {name} {why}",
                    hint=f"check kubernetes.smoke_image and kubernetes.image_pull_secrets (`kubectl -n "
                    f"{meta['namespace']} describe pod {name}`); the install is kept, so re-run `up` once it is "
                    "fixed, or smoke from here with --endpoint URL",
                )
            now = f"pod {name} {pod_state(pod)}"
            if now != seen:
                reporter.note(f"    smoke Job {now}")
                seen = now
        return None

    done = poll(finished, time_left(time.monotonic() + limit), POLL_S)
    if done is None:
        raise SmokeUnreachable(
            f"the smoke Job {object_key(job)} did not finish within {limit:g}s ({message or seen or 'no pod yet'})",
            hint=_hint(job),
        )
    return done


def _pod(api: KubePort, live: KubeObject) -> KubeObject | None:
    uid = live["metadata"].get("uid")
    pods, _ = api.list("v1", "Pod", live["metadata"]["namespace"], label_selector=f"{CONTROLLER_UID_LABEL}={uid}")
    pods.sort(key=lambda p: str(p["metadata"].get("creationTimestamp") or ""))
    return pods[-1] if pods else None


def run(
    api: KubePort, job: KubeObject, reporter: Reporter, *, force: bool = False, limit: float | None = None
) -> JobRun:
    """Run the smoke Job afresh, wait for its end (at most `limit` seconds, by default the Job's own bound) and read
    its log; SmokeUnreachable when it cannot run to its end."""
    live = fresh_job(api, job, reporter, force=force)
    target = f"job/{live['metadata']['namespace']}/{live['metadata']['name']}"
    reporter.note(f"    smoke {Reach('', 'in-cluster', target).describe()}: waiting for it to finish")
    done = _wait(api, live, job_bound_s(live) if limit is None else limit, reporter)
    state = job_readiness(done)
    pod = _pod(api, done)
    text, why = "", " (no pod of it is left)" if pod is None else ""
    if pod is not None:
        try:
            text = api.read_log(
                pod["metadata"]["name"], pod["metadata"]["namespace"], CONTAINER, limit_bytes=LOG_LIMIT_BYTES
            )
        except K3DeployError as exc:
            # No log is no verdict (exit 3, the install kept), whatever the API server answered for it.
            why = f" (its log cannot be read: {exc.message})"
    outcome = "completed" if state.ready else f"failed ({state.reason}: {state.message})"
    return JobRun(object_key(job), target, text, outcome + ("" if text else why), bool(state.failed), _hint(job))


def smoke_job(objects: list[KubeObject]) -> KubeObject | None:
    """The rendered smoke Job of a set, None when the set has none."""
    return next((o for o in objects if job_role(o) == SMOKE_COMPONENT), None)


def gate_job(job: KubeObject, lws_name: str, group: int, port: int) -> KubeObject:
    """The smoke Job for one group's gate: named after its leader, its `--endpoint` the leader's cluster DNS name."""
    out = copy.deepcopy(job)
    namespace = out["metadata"]["namespace"]
    out["metadata"]["name"] = f"{leader_name(lws_name, group)}-smoke"
    container = out["spec"]["template"]["spec"]["containers"][0]
    # The group's gate is marked by `up` itself once it passed (gating.py): this Job judges only its leader.
    args = [a for a in container["args"] if a != "--gate-leaders"]
    args[args.index("--endpoint") + 1] = group_endpoint(None, lws_name, namespace, group, port)
    container["args"] = args
    return out


def gate(
    api: KubePort,
    job: KubeObject,
    lws_name: str,
    group: int,
    port: int,
    reporter: Reporter,
    *,
    force: bool = False,
    limit: float | None = None,
) -> JobRun:
    """Smoke one new group from inside the cluster with the set's smoke Job `job` renamed after its leader (deleted
    afterwards); the run, judged by the pipeline as any smoke is."""
    one = gate_job(job, lws_name, group, port)
    meta = one["metadata"]
    try:
        return run(api, one, reporter, force=force, limit=limit)
    finally:
        # Only the run's own Job goes: one of that name k3deploy did not create stopped the run and stays.
        live = api.get("batch/v1", "Job", meta["name"], meta["namespace"])
        if live is not None and owned(live, one):
            api.delete("batch/v1", "Job", meta["name"], meta["namespace"], propagation="Background")
