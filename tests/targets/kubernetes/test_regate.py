"""The guard's re-gate (targets/kubernetes/regate.py), each branch: a Ready leader out of traffic is smoked at its own
address (never the API Service's) and labelled only when it passed, its uid a precondition; a failed one stays out
and is not smoked again before `retry_s`; a restart of a gated revision is labelled without a smoke only with
smoke.gate_restarts off; a dry run smokes and labels nothing; it stands aside while a command holds the release or
the smoke Job runs; a guard that lost its lease labels nothing; a labelled leader is never touched. The smokes are
real runs against scripted servers (the re-gate on a real plane with a real vLLM: tests/realk8s/test_traffic_gate.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from k3deploy.errors import K3DeployError, KubeError
from k3deploy.lws import API_VERSION
from k3deploy.profile import load_profile
from k3deploy.smoke.runner import run_smoke
from k3deploy.targets.kubernetes.regate import Regate
from k3deploy.traffic_gate import (
    COPIED,
    DEFERRED,
    FAILED,
    GATED_LABEL,
    GATED_REVISION_ANNOTATION,
    LABELLED,
    MARK_MANAGER,
    WOULD,
)
from tests.smoke.scripted_server import Script, scripted_server

K3 = "kimi-k3-gb300-tp16"
NS = "kimi-k3"
GOOD = Script(models=["moonshotai/Kimi-K3"], tokens_per_chunk=[4, 3], num_speculative_tokens=4)
SETS = ["smoke.correctness=false", "smoke.requests=2", "smoke.output_tokens=29", "targets.decode_tok_s=1"]


def _pod(lws: str, group: int, *, marked: bool = False, revision: str = "r1", uid: str = "") -> dict[str, Any]:
    labels = {
        "leaderworkerset.sigs.k8s.io/name": lws,
        "leaderworkerset.sigs.k8s.io/group-index": str(group),
        "leaderworkerset.sigs.k8s.io/worker-index": "0",
        "leaderworkerset.sigs.k8s.io/template-revision-hash": revision,
    }
    if marked:
        labels[GATED_LABEL] = "true"
    name = f"{lws}-{group}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "uid": uid or f"uid-{name}", "labels": labels},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }


class Cluster:
    """One namespace's objects behind the calls the re-gate makes (k3deploy/kube/port.py KubePort: get, list,
    apply). Stricter than test_marks.py's: a list honours its label selector's `key=value` terms, and an apply
    that names a uid the live pod no longer has is refused with 409, as the API server refuses a failed uid
    precondition (kubernetes/kubernetes staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go)."""

    def __init__(self, pods: list[dict[str, Any]], annotations: dict[str, str] | None = None) -> None:
        self.objects: dict[tuple[str, str], dict[str, Any]] = {("Pod", p["metadata"]["name"]): p for p in pods}
        lws = {"apiVersion": API_VERSION, "kind": "LeaderWorkerSet"}
        self.objects[("LeaderWorkerSet", K3)] = {**lws, "metadata": {"name": K3, "namespace": NS, "annotations": {}}}
        self.objects[("LeaderWorkerSet", K3)]["metadata"]["annotations"] = annotations or {}
        self.applied: list[tuple[dict[str, Any], str]] = []
        self.reads: list[tuple[str, str]] = []

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        self.reads.append((kind, name))
        return self.objects.get((kind, name))

    def list(self, api_version: str, kind: str, namespace: str | None = None, **kw: Any) -> tuple[list[Any], str]:
        terms = dict(t.split("=", 1) for t in (kw.get("label_selector") or "").split(",") if t)
        found = [
            o
            for (k, _), o in self.objects.items()
            if k == kind and all(o["metadata"].get("labels", {}).get(key) == v for key, v in terms.items())
        ]
        return found, "1"

    def apply(self, obj: dict[str, Any], *, force: bool = False, manager: str = "k3deploy", **_: Any) -> dict[str, Any]:
        live = self.objects.get((obj["kind"], obj["metadata"]["name"]))
        if live is None:
            raise KubeError("not found", status=404)
        if obj["metadata"].get("uid") not in (None, live["metadata"].get("uid")):
            raise KubeError("Precondition failed: UID in precondition does not match", status=409)
        self.applied.append((obj, manager))
        live["metadata"].setdefault("labels", {}).update(obj["metadata"].get("labels", {}))
        live["metadata"].setdefault("annotations", {}).update(obj["metadata"].get("annotations", {}))
        return live

    def labelled(self) -> list[str]:
        return [o["metadata"]["name"] for o, _ in self.applied if o["kind"] == "Pod"]


class Smokes:
    """A real smoke of a scripted server per leader address (`urls`: the address's last path part -> server)."""

    def __init__(self, profile: Any, urls: dict[str, str]) -> None:
        self.profile, self.urls, self.smoked = profile, urls, []  # type: ignore[var-annotated]

    def __call__(self, profile: Any, url: str) -> str | None:
        self.smoked.append(url)
        return run_smoke(self.profile, self.urls[url.rsplit("/", 1)[1]]).failure()


def _regate(cluster: Cluster, smoke: Any, sets: list[str] = SETS, **kw: Any) -> tuple[Regate, list[str]]:
    said: list[str] = []
    profile = load_profile(K3, sets)
    return Regate(cluster, profile, smoke, said.append, "http://gate/{pod}", **kw), said  # type: ignore[arg-type]


def test_a_leader_out_of_traffic_is_smoked_at_its_own_address_and_labelled_only_when_it_passed() -> None:
    profile = load_profile(K3, SETS)
    cluster = Cluster([_pod(K3, 0, marked=True), _pod(K3, 1), _pod(f"{K3}-green", 0)])
    with (
        scripted_server(GOOD) as good,
        scripted_server(Script(models=["moonshotai/Kimi-K3"], completion_status=500)) as bad,
    ):
        smokes = Smokes(profile, {f"{K3}-1": good.url, f"{K3}-green-0": bad.url})
        regate, said = _regate(cluster, smokes)
        done = regate(False, lambda: True)
    # The labelled leader of group 0 is neither smoked nor touched: the re-gate only ever adds the label.
    assert smokes.smoked == [f"http://gate/{K3}-1", f"http://gate/{K3}-green-0"]
    assert [(d.pod, d.outcome) for d in done] == [(f"{K3}-1", LABELLED), (f"{K3}-green-0", FAILED)]
    assert "it stays out of traffic" in done[1].detail and "completions" in done[1].detail
    [(mark, manager)] = cluster.applied
    assert manager == MARK_MANAGER and mark["metadata"] == {
        "name": f"{K3}-1",
        "namespace": NS,
        "uid": f"uid-{K3}-1",
        "labels": {GATED_LABEL: "true"},
    }
    assert said == [f"re-gate: {d.describe()}" for d in done]


def test_by_default_its_address_is_the_leaders_cluster_name_never_the_api_service() -> None:
    cluster = Cluster([_pod(K3, 0)])
    smoked: list[str] = []
    regate = Regate(cluster, load_profile(K3, SETS), lambda p, url: smoked.append(url), print)  # type: ignore[arg-type,func-returns-value]
    regate(False, lambda: True)
    assert smoked == [f"http://{K3}-0.{K3}.{NS}.svc:8000"]


def test_a_failed_leader_is_not_smoked_again_before_retry_s_then_is() -> None:
    now = [1000.0]
    cluster = Cluster([_pod(K3, 0)])
    answers = ["500 from /v1/completions", None]
    smoked: list[str] = []

    def smoke(p: object, url: str) -> str | None:
        smoked.append(url)
        return answers[len(smoked) - 1]

    regate, _ = _regate(cluster, smoke, retry_s=300.0, clock=lambda: now[0])
    assert [d.outcome for d in regate(False, lambda: True)] == [FAILED]
    now[0] += 299.0
    [deferred] = regate(False, lambda: True)
    assert deferred.outcome == DEFERRED and "smoked again in 1s" in deferred.detail and len(smoked) == 1
    assert cluster.applied == []
    now[0] += 1.0
    assert [d.outcome for d in regate(False, lambda: True)] == [LABELLED] and len(smoked) == 2
    # Labelled: nothing is out of traffic any more, and the failure is forgotten.
    assert regate(False, lambda: True) == [] and regate.failed_at == {}


def test_a_smoke_that_raises_is_a_failure_that_keeps_the_leader_out() -> None:
    cluster = Cluster([_pod(K3, 0)])

    def smoke(p: object, url: str) -> str | None:
        raise K3DeployError("endpoint cannot be reached: connection refused")

    regate, _ = _regate(cluster, smoke)
    [done] = regate(False, lambda: True)
    assert done.outcome == FAILED and "connection refused" in done.detail and cluster.applied == []


def test_a_restart_of_a_gated_revision_is_labelled_without_a_smoke_only_with_gate_restarts_off() -> None:
    never: list[str] = []
    off = [*SETS, "smoke.gate_restarts=false"]
    cluster = Cluster([_pod(K3, 0, revision="r1"), _pod(K3, 1, revision="r2")], {GATED_REVISION_ANNOTATION: "r1"})
    regate, _ = _regate(cluster, lambda p, url: never.append(url), off)
    done = {d.pod: d.outcome for d in regate(False, lambda: True)}
    # r1 passed a gate before: copied, no smoke and no record; r2 did not: smoked, labelled, and r2 recorded.
    assert done == {f"{K3}-0": COPIED, f"{K3}-1": LABELLED}
    assert never == [f"http://gate/{K3}-1"]
    records = [o for o, _ in cluster.applied if o["kind"] == "LeaderWorkerSet"]
    assert [o["metadata"]["annotations"] for o in records] == [{GATED_REVISION_ANNOTATION: "r2"}]
    # With restarts gated (the default) the same restart is smoked, and nothing is recorded.
    smoked: list[str] = []
    on = Cluster([_pod(K3, 0, revision="r1")], {GATED_REVISION_ANNOTATION: "r1"})
    regate, _ = _regate(on, lambda p, url: smoked.append(url))
    assert [d.outcome for d in regate(False, lambda: True)] == [LABELLED] and smoked == [f"http://gate/{K3}-0"]
    assert [o["kind"] for o, _ in on.applied] == ["Pod"]


def test_a_dry_run_says_what_it_would_do_and_smokes_and_labels_nothing() -> None:
    smoked: list[str] = []
    cluster = Cluster([_pod(K3, 0, revision="r1"), _pod(K3, 1, revision="r2")], {GATED_REVISION_ANNOTATION: "r1"})
    regate, _ = _regate(cluster, lambda p, url: smoked.append(url), [*SETS, "smoke.gate_restarts=false"])
    done = regate(True, lambda: False)
    assert [(d.outcome, d.detail.split(":")[0]) for d in done] == [
        (WOULD, "would label it without a smoke"),
        (WOULD, "would smoke it at http"),
    ]
    assert smoked == [] and cluster.applied == []


def _lease(holder: str, renewed: datetime) -> dict[str, Any]:
    stamp = renewed.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    spec = {"holderIdentity": holder, "leaseDurationSeconds": 60, "acquireTime": stamp, "renewTime": stamp}
    return {"kind": "Lease", "metadata": {"name": f"{K3}-k3deploy-lock"}, "spec": spec}


def test_it_stands_aside_while_a_command_holds_the_release_and_says_so_once() -> None:
    smoked: list[str] = []
    cluster = Cluster([_pod(K3, 0)])
    cluster.objects[("Lease", f"{K3}-k3deploy-lock")] = _lease("me@ws pid 7 (up)", datetime.now(UTC))
    regate, said = _regate(cluster, lambda p, url: smoked.append(url))
    assert regate(False, lambda: True) == [] and regate(False, lambda: True) == []
    assert said == ["re-gate: standing aside: me@ws pid 7 (up) holds the release and gates the groups it rolls"]
    assert smoked == [] and cluster.applied == []
    # A lease that lapsed (its holder died) holds nothing back.
    cluster.objects[("Lease", f"{K3}-k3deploy-lock")] = _lease("me", datetime.now(UTC) - timedelta(seconds=61))
    assert [d.outcome for d in regate(False, lambda: True)] == [LABELLED]


def test_it_stands_aside_while_the_smoke_job_runs_and_not_after() -> None:
    smoked: list[str] = []
    cluster = Cluster([_pod(K3, 0)])
    job = {"kind": "Job", "metadata": {"name": f"{K3}-smoke"}, "status": {"active": 1}}
    cluster.objects[("Job", f"{K3}-smoke")] = job
    regate, said = _regate(cluster, lambda p, url: smoked.append(url))
    assert regate(False, lambda: True) == [] and smoked == []
    assert said == [f"re-gate: standing aside: the smoke Job {K3}-smoke is gating the leaders"]
    job["status"] = {"succeeded": 1}
    assert [d.outcome for d in regate(False, lambda: True)] == [LABELLED]


def test_with_every_leader_labelled_it_reads_neither_the_lease_nor_the_job() -> None:
    cluster = Cluster([_pod(K3, 0, marked=True)])
    regate, _ = _regate(cluster, lambda p, url: None)
    assert regate(False, lambda: True) == [] and cluster.reads == []


def test_without_the_traffic_gate_it_does_nothing() -> None:
    cluster = Cluster([_pod(K3, 0)])
    regate, _ = _regate(cluster, lambda p, url: None, [*SETS, "smoke.gate_traffic=false"])
    assert regate(False, lambda: True) == [] and cluster.reads == [] and cluster.applied == []


def test_a_guard_that_lost_its_lease_labels_nothing() -> None:
    cluster = Cluster([_pod(K3, 0), _pod(K3, 1)])
    regate, said = _regate(cluster, lambda p, url: None)
    assert regate(False, lambda: False) == [] and cluster.applied == []
    assert said == ["re-gate: no label: another guard took the lease over meanwhile"]
    # Lost during the smoke: the leader it passed is not labelled by this guard.
    leading = iter([True, False])
    [done] = regate(False, lambda: next(leading, False))
    assert done.outcome == DEFERRED and cluster.applied == []


def test_a_leader_re_created_while_it_was_smoked_is_not_labelled() -> None:
    cluster = Cluster([_pod(K3, 0)])

    def smoke(p: object, url: str) -> str | None:
        cluster.objects[("Pod", f"{K3}-0")]["metadata"]["uid"] = "uid-new"  # LWS re-created it meanwhile
        return None

    regate, _ = _regate(cluster, smoke)
    [done] = regate(False, lambda: True)
    # The mark names the judged uid, so the server refuses it (409) for the pod re-created meanwhile.
    assert done.outcome == FAILED and "changed while it was marked (409)" in done.detail and cluster.applied == []


def test_its_smoke_waits_for_no_health_and_is_bounded_so_fault_passes_do_not_wait_long() -> None:
    seen: list[Any] = []
    cluster = Cluster([_pod(K3, 0)])
    regate, _ = _regate(cluster, lambda p, url: seen.append(p), [*SETS, "smoke.ready_timeout_s=900"])
    regate(False, lambda: True)
    [profile] = seen
    assert profile.smoke.ready_timeout_s is None and profile.smoke.overall_timeout_s == 600
    assert profile.smoke.requests == 2  # the profile's own smoke otherwise
    short = []
    regate, _ = _regate(Cluster([_pod(K3, 0)]), lambda p, url: short.append(p), [*SETS, "smoke.overall_timeout_s=60"])
    regate(False, lambda: True)
    assert short[0].smoke.overall_timeout_s == 60


def test_a_label_that_landed_is_reported_labelled_even_when_recording_its_revision_failed() -> None:
    cluster = Cluster([_pod(K3, 0, revision="r2")])
    applied = cluster.apply

    def refuse_lws(obj: dict[str, Any], **kw: Any) -> dict[str, Any]:
        if obj["kind"] == "LeaderWorkerSet":
            raise KubeError("leaderworkersets is forbidden", status=403)
        return applied(obj, **kw)

    cluster.apply = refuse_lws  # type: ignore[method-assign]
    regate, _ = _regate(cluster, lambda p, url: None, [*SETS, "smoke.gate_restarts=false"])
    [done] = regate(False, lambda: True)
    assert done.outcome == LABELLED and "its revision not recorded: leaderworkersets is forbidden" in done.detail
    assert cluster.labelled() == [f"{K3}-0"]
