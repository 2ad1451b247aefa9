"""`up --smoke in-cluster`: the cluster judges. The rendered smoke Job (the same `k3deploy smoke` checks, run inside
against the API Service) is run afresh, waited to completion or failure, and its verdict and figures are read from
the JSON report its log ends with (smoke/job_report.py), so an operator who cannot port-forward still gets a gated
`up`.

A fresh run: a smoke Job left by an earlier `up` (k3deploy's own, by its ownership mark) is deleted first, so the
verdict is this revision's. The per-group gates of the rolling upgrade and blue-green run the same Job, renamed after
the new group's leader (`<leader>-smoke`) and pointed at the leader's cluster DNS name, and delete it afterwards.

This module runs the Job and reads its log (the target's I/O); the pipeline judges what the log says
(smoke/job_report.py `verdict`), as it judges a smoke run from here. A Job that cannot run (one k3deploy did not
create is in the way, it is deleted while it runs, or it is not done by its own deadline) is a SmokeUnreachable
(exit 3): the install is kept.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable

from k3deploy.errors import SmokeUnreachable
from k3deploy.kobject import KubeObject
from k3deploy.kube.api import object_key
from k3deploy.kube.port import KubePort
from k3deploy.render.manifests import SMOKE_COMPONENT
from k3deploy.rollout.groups import group_endpoint, leader_name
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


def fresh_job(api: KubePort, job: KubeObject, note: Callable[[str], None], *, force: bool = False) -> KubeObject:
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
        note(f"  {object_key(job)} of the previous run deleted")
    created = apply_object(api, job, force=force)
    note(f"  {created.key} {created.action}")
    return created.obj


def _wait(api: KubePort, job: KubeObject) -> KubeObject:
    meta = job["metadata"]
    limit = float((job.get("spec") or {}).get("activeDeadlineSeconds") or 0) + GRACE_S
    message = ""

    def finished() -> KubeObject | None:
        nonlocal message
        live = api.get("batch/v1", "Job", meta["name"], meta["namespace"])
        if live is None:
            raise SmokeUnreachable(f"the smoke Job {object_key(job)} was deleted while it ran", hint=_hint(job))
        state = job_readiness(live)
        message = state.message
        return live if state.ready or state.failed else None

    done = poll(finished, time_left(time.monotonic() + limit), POLL_S)
    if done is None:
        raise SmokeUnreachable(
            f"the smoke Job {object_key(job)} did not finish within {limit:g}s ({message})", hint=_hint(job)
        )
    return done


def _pod(api: KubePort, live: KubeObject) -> KubeObject | None:
    uid = live["metadata"].get("uid")
    pods, _ = api.list("v1", "Pod", live["metadata"]["namespace"], label_selector=f"{CONTROLLER_UID_LABEL}={uid}")
    pods.sort(key=lambda p: str(p["metadata"].get("creationTimestamp") or ""))
    return pods[-1] if pods else None


def run(api: KubePort, job: KubeObject, note: Callable[[str], None], *, force: bool = False) -> JobRun:
    """Run the smoke Job afresh, wait for its end and read its log; SmokeUnreachable when it cannot run to its end."""
    live = fresh_job(api, job, note, force=force)
    target = f"job/{live['metadata']['namespace']}/{live['metadata']['name']}"
    note(f"    smoke {Reach('', 'in-cluster', target).describe()}: waiting for it to finish")
    done = _wait(api, live)
    state = job_readiness(done)
    pod = _pod(api, done)
    text = ""
    if pod is not None:
        text = api.read_log(
            pod["metadata"]["name"], pod["metadata"]["namespace"], CONTAINER, limit_bytes=LOG_LIMIT_BYTES
        )
    outcome = "completed" if state.ready else f"failed ({state.reason}: {state.message})"
    return JobRun(object_key(job), target, text, outcome, bool(state.failed), _hint(job))


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
    note: Callable[[str], None],
    *,
    force: bool = False,
) -> JobRun:
    """Smoke one new group from inside the cluster with the set's smoke Job `job` renamed after its leader (deleted
    afterwards); the run, judged by the pipeline as any smoke is."""
    one = gate_job(job, lws_name, group, port)
    meta = one["metadata"]
    try:
        return run(api, one, note, force=force)
    finally:
        api.delete("batch/v1", "Job", meta["name"], meta["namespace"], propagation="Background")
