"""The smoke Job's gate (targets/kubernetes/job_gates.py): every unlabelled ready leader is smoked at its own address,
never the API Service's, and labelled only when it passed; a failed one stays out with a FAIL check; a restart of a
gated revision is labelled without a smoke when smoke.gate_restarts is off. The smokes are real runs against
scripted servers; the API is the in-memory one of test_marks.py (the Job's gate on a real plane:
tests/realk8s/test_traffic_gate.py)."""

from __future__ import annotations

from k3deploy.profile import load_profile
from k3deploy.report.model import Status
from k3deploy.reporter import Reporter
from k3deploy.smoke.runner import run_smoke
from k3deploy.targets.kubernetes.job_gates import gate_from_inside
from k3deploy.traffic_gate import GATED_LABEL, GATED_REVISION_ANNOTATION
from tests.smoke.scripted_server import Script, scripted_server
from tests.targets.kubernetes.test_marks import Api, _pod

GOOD = Script(models=["moonshotai/Kimi-K3"], tokens_per_chunk=[4, 3], num_speculative_tokens=4)
SETS = [
    "smoke.correctness=false",
    "smoke.requests=2",
    "smoke.output_tokens=29",
    "targets.decode_tok_s=1",
    "parallel.replicas=3",
]


def _api(pods: list[dict], annotations: dict[str, str] | None = None) -> Api:
    """Pods of the LeaderWorkerSet `kimi-k3-gb300-tp16` (the profile's release), three groups."""
    api = Api(pods, annotations)
    api.lws["metadata"]["name"] = "kimi-k3-gb300-tp16"
    api.lws["spec"] = {"replicas": 3}
    for pod in api.pods.values():
        pod["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/name"] = "kimi-k3-gb300-tp16"
        pod["metadata"]["name"] = pod["metadata"]["name"].replace("kimi", "kimi-k3-gb300-tp16")
    api.pods = {p["metadata"]["name"]: p for p in api.pods.values()}
    real_get = api.get
    api.get = lambda v, kind, name, ns=None: (  # type: ignore[method-assign]
        real_get(v, kind, name, ns) if kind != "LeaderWorkerSet" or name == "kimi-k3-gb300-tp16" else None
    )
    return api


def test_each_unlabelled_leader_is_smoked_at_its_own_address_and_labelled_only_when_it_passed() -> None:
    profile = load_profile("kimi-k3-gb300-tp16", SETS)
    api = _api([_pod(0, marked=True), _pod(1), _pod(2)])
    with scripted_server(GOOD) as good, scripted_server(Script(completion_status=500)) as bad:
        urls = {"1": good.url, "2": bad.url}
        smoked: list[str] = []

        def smoke(p: object, url: str) -> object:
            smoked.append(url)
            report = run_smoke(profile, urls[url.rsplit("/", 1)[1]])
            return None if report.status is not Status.FAIL else "failed"

        checks = gate_from_inside(api, profile, smoke, Reporter(quiet=True), "http://gate/{group}")  # type: ignore[arg-type]
    assert smoked == ["http://gate/1", "http://gate/2"]  # group 0 was in traffic already
    assert [(c.name, c.status) for c in checks] == [
        ("gate kimi-k3-gb300-tp16-1", Status.PASS),
        ("gate kimi-k3-gb300-tp16-2", Status.FAIL),
    ]
    assert "it stays out of traffic" in checks[1].detail
    labelled = [o["metadata"]["name"] for o, _ in api.applied]
    assert labelled == ["kimi-k3-gb300-tp16-1"] and api.applied[0][0]["metadata"]["labels"] == {GATED_LABEL: "true"}


def test_a_restart_of_a_gated_revision_is_labelled_without_a_smoke_only_with_gate_restarts_off() -> None:
    off = load_profile("kimi-k3-gb300-tp16", [*SETS, "smoke.gate_restarts=false"])
    api = _api([_pod(0, revision="r1"), _pod(1, marked=True), _pod(2, marked=True)], {GATED_REVISION_ANNOTATION: "r1"})
    never: list[str] = []  # a smoke of it would land here
    checks = gate_from_inside(api, off, lambda p, url: never.append(url), Reporter(quiet=True))  # type: ignore[arg-type,func-returns-value]
    assert never == []
    assert [(c.name, c.status) for c in checks] == [("gate kimi-k3-gb300-tp16-0", Status.PASS)]
    assert "without a smoke" in checks[0].detail
    smoked: list[str] = []
    on = load_profile("kimi-k3-gb300-tp16", SETS)
    again = _api(
        [_pod(0, revision="r1"), _pod(1, marked=True), _pod(2, marked=True)], {GATED_REVISION_ANNOTATION: "r1"}
    )
    gate_from_inside(again, on, lambda p, url: smoked.append(url), Reporter(quiet=True))  # type: ignore[arg-type,func-returns-value]
    # Its cluster DNS name under the LWS headless Service: the pod's own address, never the API Service.
    assert smoked == ["http://kimi-k3-gb300-tp16-0.kimi-k3-gb300-tp16.kimi-k3.svc:8000"]
