"""The waiter's judgement (pure): from the watched objects and the clock to rows, ready, or the failure.

`WaitState` is what the watch streams have shown so far plus what the waiter remembers across batches (since when
a row has had its state, since when a pod has been unschedulable, the crashes seen); `judge(state, waited, now)`
reads it and returns the rows to show, whether every waited object is ready on its current spec, and the first
failure waiting will not fix. The clock is a parameter, so tests drive it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from k3deploy.kobject import KubeObject
from k3deploy.kueue import WORKLOAD_KIND
from k3deploy.lws import (
    GROUP_INDEX_LABEL,
    NAME_LABEL,
    REVISIONS,
    TEMPLATE_REVISION_LABEL,
    WORKER_INDEX_LABEL,
)
from k3deploy.pod_volumes import claim_names
from k3deploy.rollout.claims import (
    CLAIMS,
    CLASSES,
    EVENTS,
    ClaimVerdict,
    claim_verdict,
    held_by_claims,
)
from k3deploy.rollout.currency import prove_current, template_revision
from k3deploy.rollout.readiness import Readiness, is_fatal, pod_phase_label, pod_problems, readiness, restarts


@dataclass(frozen=True)
class Row:
    """One object or pod in the view: its name, state, detail and when it entered that state."""

    name: str
    state: str
    detail: str = ""
    since: float = 0.0


#: Crashes seen across a serving group's pods (recreated groups included) that make the rollout fail.
CRASH_LIMIT = 3
#: Read beside a LeaderWorkerSet: a pod claiming a template that does not exist never gets scheduled.
CLAIM_TEMPLATES = "ResourceClaimTemplate"
#: The kinds read only to judge better: the waiter goes on without them when they cannot be read.
OPTIONAL_KINDS = frozenset({REVISIONS, CLAIM_TEMPLATES, CLAIMS, CLASSES, EVENTS, WORKLOAD_KIND})


@dataclass
class Failure:
    """Why the rollout failed: the failing object, reason, message, the names involved and the pod (if one)."""

    subject: str
    reason: str
    message: str
    names: set[str]
    pod: str | None = None


@dataclass
class WaitState:
    """The watched objects by kind and name, and what the waiter remembers between batches."""

    objects: dict[str, dict[str, KubeObject]] = field(default_factory=dict)
    since: dict[str, tuple[str, float]] = field(default_factory=dict)
    unschedulable_since: dict[str, float] = field(default_factory=dict)
    crashes: dict[str, set[tuple[Any, ...]]] = field(default_factory=dict)
    #: Kinds that could not be read (ControllerRevisions without the right to list them).
    unavailable: set[str] = field(default_factory=set)
    #: The proof last accepted per waited object, so it is announced once.
    proofs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Judgement:
    """Rows to show, whether all waited objects are ready, the failure (if any) and newly accepted proofs."""

    rows: list[Row]
    ready: bool
    failure: Failure | None
    accepted: list[tuple[str, str]]


def name_of(obj: KubeObject) -> str:
    """metadata.name."""
    return str(obj.get("metadata", {}).get("name", ""))


def owned_by_job(pod: KubeObject, job: KubeObject) -> bool:
    """A Job's pod: owned by this Job's uid, or (no uid known) labelled with its name."""
    meta = pod.get("metadata", {})
    uid = job.get("metadata", {}).get("uid")
    refs = meta.get("ownerReferences") or []
    if uid and refs:
        return any(ref.get("uid") == uid for ref in refs)
    labels = meta.get("labels") or {}
    if uid and labels.get("batch.kubernetes.io/controller-uid", labels.get("controller-uid")) not in (None, uid):
        return False
    return name_of(job) in (labels.get("batch.kubernetes.io/job-name"), labels.get("job-name"))


def in_set(pod: KubeObject, target: KubeObject, state: WaitState) -> bool:
    """Whether `pod` belongs to the waited `target`: a LeaderWorkerSet's by its label, a Job's by owner."""
    if target["kind"] == "LeaderWorkerSet":
        return (pod.get("metadata", {}).get("labels") or {}).get(NAME_LABEL) == name_of(target)
    return owned_by_job(pod, state.objects.get("Job", {}).get(name_of(target), target))


def pods_of(target: KubeObject, state: WaitState) -> list[KubeObject]:
    """The target's live (not terminating) pods, by name."""
    pods = state.objects.get("Pod", {}).values()
    return sorted(
        (p for p in pods if not p.get("metadata", {}).get("deletionTimestamp") and in_set(p, target, state)),
        key=name_of,
    )


def current_key(target: KubeObject, state: WaitState) -> str | None:
    """The template-revision-hash of a LeaderWorkerSet's current template: "" while the controller has not recorded
    it, None when that cannot be known (not a LWS, no ControllerRevisions to read)."""
    live = state.objects.get(target["kind"], {}).get(name_of(target))
    revisions = list(state.objects.get(REVISIONS, {}).values())
    if target["kind"] != "LeaderWorkerSet" or live is None or REVISIONS in state.unavailable or not revisions:
        return None
    revision = template_revision(live, revisions)
    return (
        ""
        if revision is None
        else str(((revision.get("metadata") or {}).get("labels") or {}).get(TEMPLATE_REVISION_LABEL, ""))
    )


def outgoing(pod: KubeObject, key: str | None) -> bool:
    """A pod of an older template (the controller replaces it): shown, but its failures are not the rollout's."""
    return key is not None and ((pod.get("metadata") or {}).get("labels") or {}).get(TEMPLATE_REVISION_LABEL) != key


def verdict(target: KubeObject, state: WaitState) -> Readiness | None:
    """Where the waited `target` stands; None when it is not there (yet). A LeaderWorkerSet is ready only when its
    readiness is proven to be the current spec's."""
    live = state.objects.get(target["kind"], {}).get(name_of(target))
    if live is None:
        return None
    found = readiness(live)
    if target["kind"] != "LeaderWorkerSet" or found.failed:
        return found
    current = prove_current(live)
    if not current.current:
        return Readiness(False, reason="Progressing", message=f"{found.message}; {current.how}".strip("; "))
    return found


def row(state: WaitState, key: str, label: str, detail: str, now: float) -> Row:
    """A row, remembering since when it has had this state."""
    previous = state.since.get(key)
    if previous is None or previous[0] != label:
        state.since[key] = (label, now)
    return Row(key, label, detail, state.since[key][1])


def pod_row(pod: KubeObject, state: WaitState, now: float, claims: list[ClaimVerdict] | None = None) -> Row:
    """A pod's row: its state, group and role, node and restarts; a pod held only by `claims` still being
    provisioned is Pending on them, not Unschedulable."""
    meta = pod.get("metadata", {})
    labels = meta.get("labels") or {}
    where = (pod.get("spec") or {}).get("nodeName") or "-"
    role = ""
    if WORKER_INDEX_LABEL in labels:
        worker = labels[WORKER_INDEX_LABEL]
        role = f"group {labels.get(GROUP_INDEX_LABEL, '?')} {'leader' if worker == '0' else 'worker ' + worker}, "
    count = restarts(pod)
    detail = f"{role}node {where}" + (f", {count} restarts" if count else "")
    label = pod_phase_label(pod)
    if claims and held_by_claims(_unschedulable_message(pod), claims):
        label = "Pending"
        detail += ", waiting for " + ", ".join(f"PersistentVolumeClaim/{c.name}" for c in claims)
    return row(state, f"  Pod/{name_of(pod)}", label, detail, now)


def _unschedulable_message(pod: KubeObject) -> str:
    return next((p.message for p in pod_problems(pod) if p.reason == "Unschedulable"), "")


def pod_claims(pod: KubeObject, state: WaitState) -> list[ClaimVerdict]:
    """The verdicts on the Pending claims an unscheduled pod mounts (none when the claims cannot be read)."""
    claims = state.objects.get(CLAIMS)
    if claims is None or CLAIMS in state.unavailable or (pod.get("spec") or {}).get("nodeName"):
        return []
    classes = None if CLASSES in state.unavailable else state.objects.get(CLASSES)
    events = (
        None if EVENTS in state.unavailable or EVENTS not in state.objects else list(state.objects[EVENTS].values())
    )
    verdicts = (
        claim_verdict(claims[name], classes, events) for name in claim_names(pod.get("spec") or {}) if name in claims
    )
    return [v for v in verdicts if v is not None]


def missing_claim_template(pod: KubeObject, state: WaitState) -> str | None:
    """Why a pod can never be scheduled because of its DRA claims: it claims a ResourceClaimTemplate that does not
    exist, so kube-controller-manager cannot make its ResourceClaim (pkg/controller/resourceclaim/controller.go,
    event FailedResourceClaimCreation) and the scheduler's DynamicResources PreEnqueue holds it without a condition
    ("ResourceClaim not created yet"). None when that is not the case or the templates cannot be read."""
    if CLAIM_TEMPLATES in state.unavailable or CLAIM_TEMPLATES not in state.objects:
        return None
    created = {s.get("name") for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []}
    templates = state.objects[CLAIM_TEMPLATES]
    for claim in (pod.get("spec") or {}).get("resourceClaims") or []:
        template = claim.get("resourceClaimTemplateName")
        if template and claim.get("name") not in created and template not in templates:
            known = ", ".join(sorted(templates)) or "none"
            return (
                f'spec.resourceClaims[{claim.get("name")}] names ResourceClaimTemplate "{template}", which does not '
                f"exist in the namespace (templates there: {known}); no ResourceClaim can be made, so the scheduler "
                "holds the pod (ResourceClaim not created yet)"
            )
    return None


def pod_failure(
    target: KubeObject,
    pod: KubeObject,
    state: WaitState,
    now: float,
    grace_s: float,
    claims: list[ClaimVerdict] | None = None,
) -> Failure | None:
    """A failure when this pod cannot become ready (a PersistentVolumeClaim that will not be provisioned, at once;
    unschedulable past the grace, unless only waiting for claims being provisioned; a claim on a missing
    ResourceClaimTemplate past the grace; fatal; too many crashes)."""
    pod_name = name_of(pod)
    names = {name_of(target), pod_name}
    claims = pod_claims(pod, state) if claims is None else claims
    failed = next((c for c in claims if c.failure), None)
    if failed is not None:
        return Failure(f"{CLAIMS}/{failed.name}", failed.failure, failed.detail, names | {failed.name}, pod_name)
    is_job = target["kind"] == "Job"
    miswired = missing_claim_template(pod, state)
    if miswired is not None:
        first = state.unschedulable_since.setdefault(f"claim/{pod.get('metadata', {}).get('uid', pod_name)}", now)
        if now - first >= grace_s:
            return Failure(f"Pod/{pod_name}", "ResourceClaimTemplateNotFound", miswired, names, pod_name)
    problems = pod_problems(pod)
    unschedulable = next((p for p in problems if p.reason == "Unschedulable"), None)
    uid = pod.get("metadata", {}).get("uid", pod_name)
    if unschedulable is None or held_by_claims(unschedulable.message, claims):
        # The grace counts from when the pod lacks a node, not from when it started waiting for its volume.
        state.unschedulable_since.pop(uid, None)
    else:
        first = state.unschedulable_since.setdefault(uid, now)
        if now - first >= grace_s:
            return Failure(f"Pod/{pod_name}", "Unschedulable", unschedulable.message, names, pod_name)
    for problem in problems:
        if is_fatal(problem) and not (is_job and problem.reason == "CrashLoopBackOff"):
            return Failure(f"Pod/{pod_name}", problem.reason, problem.message, names, pod_name)
    if not is_job:
        crashes = state.crashes.get(name_of(target), set())
        if len(crashes) >= CRASH_LIMIT:
            return Failure(
                f"{target['kind']}/{name_of(target)}",
                "CrashLoop",
                f"{len(crashes)} container crashes across the group's pods",
                names,
                pod_name,
            )
    return None


def _available(lws: KubeObject) -> bool:
    """Whether the LeaderWorkerSet's controller set its Available condition True."""
    conditions = (lws.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Available" and str(c.get("status")) == "True" for c in conditions)


def judge(state: WaitState, waited: list[KubeObject], now: float, grace_s: float) -> Judgement:
    """Rows, whether all waited objects are ready, the first failure, and proofs accepted since the last call."""
    rows: list[Row] = []
    all_ready = True
    failure: Failure | None = None
    accepted: list[tuple[str, str]] = []
    shown_claims: set[str] = set()
    for target in waited:
        key = f"{target['kind']}/{name_of(target)}"
        found = verdict(target, state)
        label = "NotFound" if found is None else (found.reason or ("Ready" if found.ready else "Progressing"))
        rows.append(row(state, key, label, found.message if found else "", now))
        if found is None or not found.ready:
            all_ready = False
        if found is not None and not found.ready and target["kind"] == "LeaderWorkerSet" and failure is None:
            live = state.objects[target["kind"]][name_of(target)]
            unproven = prove_current(live)
            # A v0.9 controller's first status writes can come before its observedGeneration (seen on the real
            # plane under load): only a controller that calls the set Available without one is one that never will.
            if not unproven.provable and _available(live):
                failure = Failure(key, "Unprovable", unproven.how, {name_of(target)})
        if found is not None and found.ready and target["kind"] == "LeaderWorkerSet":
            how = prove_current(state.objects[target["kind"]][name_of(target)]).how
            if state.proofs.get(key) != how:
                state.proofs[key] = how
                accepted.append((key, how))
        if found is not None and found.failed and failure is None:
            failure = Failure(key, found.reason, found.message, {name_of(target)})
        template_key = current_key(target, state)
        for pod in pods_of(target, state):
            claims = pod_claims(pod, state)
            rows.append(pod_row(pod, state, now, claims))
            for claim in claims:
                if claim.name not in shown_claims:
                    shown_claims.add(claim.name)
                    label = claim.failure or "Pending"
                    rows.append(row(state, f"  {CLAIMS}/{claim.name}", label, claim.detail, now))
            if outgoing(pod, template_key):
                continue
            problem = pod_failure(target, pod, state, now, grace_s, claims)
            if problem is not None and failure is None:
                failure = problem
    return Judgement(rows, all_ready and failure is None, failure, accepted)


def pending(waited: list[KubeObject], state: WaitState) -> tuple[str, str, str, set[str]]:
    """At the deadline: the first waited object not ready, its reason and message (with a stuck pod's), names."""
    names = {name_of(t) for t in waited}
    for target in waited:
        found = verdict(target, state)
        if found is not None and found.ready:
            continue
        subject = f"{target['kind']}/{name_of(target)}"
        reason = "NotFound" if found is None else found.reason or "Progressing"
        message = "" if found is None else found.message
        pods = pods_of(target, state)
        names.update(name_of(pod) for pod in pods)
        stuck = next(((pod, problems[0]) for pod in pods if (problems := pod_problems(pod))), None)
        if stuck is not None:
            claims = pod_claims(stuck[0], state)
            if held_by_claims(_unschedulable_message(stuck[0]), claims):
                waits = ", ".join(f"{CLAIMS}/{c.name}: Pending {c.detail}" for c in claims)
                message = f"{message}; Pod/{name_of(stuck[0])} waits for {waits}".strip("; ")
            else:
                message = f"{message}; Pod/{name_of(stuck[0])}: {stuck[1].reason} {stuck[1].message}".strip("; ")
        return subject, reason, message, names
    return "the set", "Timeout", "", names
