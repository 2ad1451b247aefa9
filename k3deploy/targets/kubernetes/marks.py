"""Marking leaders for traffic on a cluster: which leaders of a LeaderWorkerSet still lack the gate's label, and
setting it on one that passed (k3deploy/traffic_gate.py says why a label and what a restart does).

A mark is a server-side apply of the label alone under a field manager of its own, with the pod's uid as a
precondition: the pod judged is the pod marked, and a leader LWS re-created meanwhile (same name, new uid) is refused.
With `smoke.gate_restarts: false` the template revision the gate passed on is recorded on the LeaderWorkerSet, so a
later restart of that revision is marked without a smoke (`unmarked`).
"""

from __future__ import annotations

from k3deploy.errors import KubeError, SmokeUnreachable
from k3deploy.kobject import KubeObject
from k3deploy.kube.port import KubePort
from k3deploy.lws import API_VERSION, NAME_LABEL, WORKER_INDEX_LABEL, leader_name
from k3deploy.reporter import Reporter
from k3deploy.rollout.colours import api_service_of, lws_of
from k3deploy.rollout.readiness import pod_ready
from k3deploy.traffic_gate import (
    GATED_REVISION_ANNOTATION,
    MARK_MANAGER,
    Unmarked,
    copies_mark,
    group_of,
    is_marked,
    mark_object,
    revision_object,
    revision_of,
    selects_gated,
)


def ready_leaders(api: KubePort, namespace: str, lws_name: str) -> list[KubeObject]:
    """The Ready, not terminating leader pods of a LeaderWorkerSet, lowest group first."""
    pods, _ = api.list("v1", "Pod", namespace, label_selector=f"{NAME_LABEL}={lws_name},{WORKER_INDEX_LABEL}=0")
    leaders = [p for p in pods if not p["metadata"].get("deletionTimestamp") and pod_ready(p)]
    return sorted(leaders, key=group_of)


def gated_revision(api: KubePort, namespace: str, lws_name: str) -> str | None:
    """The template revision a gate last passed on, as recorded on the LeaderWorkerSet (None when none is)."""
    live = api.get(API_VERSION, "LeaderWorkerSet", lws_name, namespace)
    found = ((live or {}).get("metadata") or {}).get("annotations", {}).get(GATED_REVISION_ANNOTATION)
    return str(found) if found else None


def unmarked(api: KubePort, namespace: str, lws_name: str, gate_restarts: bool) -> list[Unmarked]:
    """The ready leaders of `lws_name` without the mark, each with whether it is marked without a smoke."""
    leaders = [p for p in ready_leaders(api, namespace, lws_name) if not is_marked(p)]
    revision = gated_revision(api, namespace, lws_name) if leaders and not gate_restarts else None
    return [
        Unmarked(group_of(p), str(p["metadata"]["uid"]), p["metadata"]["name"], copies_mark(p, revision, gate_restarts))
        for p in leaders
    ]


def service_ungated(api: KubePort, objects: list[KubeObject]) -> bool:
    """Whether the live API Service of the rendered set selects its leaders without the gate's label (installed
    before the gate, or with smoke.gate_traffic off); False when there is none yet."""
    lws = lws_of(objects)
    service = api_service_of(objects, lws["metadata"]["name"]) if lws is not None else None
    if service is None:
        return False
    live = api.get("v1", "Service", service["metadata"]["name"], service["metadata"].get("namespace"))
    return live is not None and not selects_gated((live.get("spec") or {}).get("selector"))


def leader_uid(api: KubePort, namespace: str, lws_name: str, group: int) -> str | None:
    """The uid of a group's leader pod as it is now (before its gate), None when there is none."""
    pod = api.get("v1", "Pod", leader_name(lws_name, group), namespace)
    return str(pod["metadata"]["uid"]) if pod is not None else None


def mark(
    api: KubePort,
    namespace: str,
    lws_name: str,
    group: int,
    uid: str | None,
    reporter: Reporter,
    *,
    record_revision: bool,
    why: str = "its gate passed",
) -> None:
    """Label the leader of `group` for traffic, when it is still the pod `uid` judged (any pod when `uid` is None);
    SmokeUnreachable when it was re-created since (it stays out of traffic; nothing is rolled back)."""
    name = leader_name(lws_name, group)
    if uid is not None and not record_revision:
        # The apply names the uid, so the API server refuses it for a pod re-created since it was judged: a read of
        # the pod first would close no window and cost a round trip per group (64 on a fleet's first install).
        pod: KubeObject | None = {"metadata": {"name": name, "namespace": namespace, "uid": uid}}
    else:  # the pod is read: for its uid (none was judged) or the template revision to record
        pod = api.get("v1", "Pod", name, namespace)
    if pod is None or (uid is not None and pod["metadata"].get("uid") != uid):
        raise SmokeUnreachable(
            f"leader {name} was re-created while its gate ran: the new pod stays out of traffic",
            hint="re-run `up`: it gates every leader not yet marked",
        )
    try:
        api.apply(mark_object(pod), manager=MARK_MANAGER)
    except KubeError as exc:
        if exc.status in (404, 409, 422):  # gone, or its uid no longer the one judged
            raise SmokeUnreachable(
                f"leader {name} changed while it was marked ({exc.status}): it stays out of traffic",
                hint="re-run `up`: it gates every leader not yet marked",
            ) from None
        raise
    reporter.note(f"    leader {name} takes traffic: {why}")
    if record_revision and revision_of(pod):
        live = api.get(API_VERSION, "LeaderWorkerSet", lws_name, namespace)
        if live is not None:
            api.apply(revision_object(live, revision_of(pod)), manager=MARK_MANAGER)
