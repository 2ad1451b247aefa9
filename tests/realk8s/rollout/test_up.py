"""`k3deploy up / status / down` end to end on the real plane, smoke against a scripted endpoint: the happy path
and its rerun, the in-place question, a failed smoke rolled back, down and purge, Ctrl-C mid-wait."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest
import yaml

from tests.conftest import REPO_ROOT, cli_env
from tests.pin.distribution import Distribution
from tests.preflight.test_checks_pinning import PINNED
from tests.realk8s.client import wait_until
from tests.realk8s.cluster_fixtures import LWS, NO_DRA, PROFILE, QUICK, UP, Deployment
from tests.realk8s.objects import clique_ids
from tests.realk8s.stages import SLOW_READY_IMAGE, serving_image
from tests.smoke.scripted_server import Script, scripted_server

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(600)]
PVC = f"{LWS}-model-cache"


def _group_pods(deploy: Deployment) -> list[dict]:
    return [
        p
        for p in deploy.list("pods")
        if (p["metadata"].get("labels") or {}).get("leaderworkerset.sigs.k8s.io/name") == LWS
    ]


def test_up_happy_path_reports_and_a_rerun_changes_nothing(
    deploy: Deployment, registry: Distribution, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A production profile deploys pinned versions only; the registry shows the image runs on the arm64 nodes.
    monkeypatch.setenv("K3DEPLOY_REGISTRY_URL", registry.url)
    digest = registry.push_index("vllm/vllm-openai", "kimi-k3-aarch64-cu130", ["amd64", "arm64"])
    lws_version = deploy.plane.binaries.versions["LWS_VERSION"].lstrip("v")
    sets = [
        *PINNED,
        f"vllm.image=vllm/vllm-openai:kimi-k3-aarch64-cu130@{digest}",
        f"kubernetes.lws_version={lws_version}",
    ]
    pinned = [arg for s in sets for arg in ("--set", s)]
    # Four tokens per verify step: acceptance length 4 clears the profile's minimum of 3.
    happy = Script(models=["moonshotai/Kimi-K3"], tokens_per_chunk=[4, 4, 4, 4], chunk_delay_s=0.01)
    with scripted_server(happy) as endpoint:
        first = deploy.k3("up", *UP, *pinned, "--endpoint", endpoint.url, "-o", "json")
        assert first.returncode == 0, first.stderr
        report = json.loads(first.stdout)
        assert [(s["name"], s["status"]) for s in report["stages"]] == [
            ("preflight", "pass"),
            ("render", "pass"),
            ("apply", "pass"),
            ("wait", "pass"),
            ("smoke", "pass"),
        ]
        assert report["endpoint"] == endpoint.url and report["rollback"] is None and report["exit_code"] == 0
        assert endpoint.counters.requests >= 2
        # 2 requests of a first token then chunks of 4 (3 at the end): 32 drafts of 4 tokens, 94 accepted.
        figures = report["smoke"]["figures"]
        assert figures["decode_tok_s"]["median"] > 20
        assert {**figures, "decode_tok_s": {**figures["decode_tok_s"], "median": None}} == {
            "model": "moonshotai/Kimi-K3",
            "rehearsal": False,
            "label": None,
            "decode_tok_s": {
                "median": None,
                "target": 20.0,
                "tolerance": 0.15,
                "published_peak": 464.0,
                "published_baseline": 118.0,
                "status": "pass",
            },
            "acceptance_length": {"mean": 3.9375, "minimum": 3.0, "status": "pass"},
            "acceptance_rate": 0.734375,
            "drafts": 32.0,
            "failed_checks": [],
        }
        median = f"{figures['decode_tok_s']['median']:.1f}"
        assert first.stderr.splitlines()[-5:] == [
            "  smoke figures (moonshotai/Kimi-K3):",
            f"    decode tok/s       {median} median at bs=1 vs target 20 less 15%, 464 tok/s published peak, "
            "118 tok/s published without speculation [pass]",
            "    acceptance length  3.94 mean vs minimum 3 [pass]",
            "    acceptance rate    0.734 over 32 drafts",
            "    result             targets met",
        ]

        # Preflight runs again on the live deployment: its own pods must not count as taking the GPUs.
        again = deploy.k3("up", *UP, *pinned, "--endpoint", endpoint.url)
    assert again.returncode == 0, again.stderr
    assert "ok   apply: no changes: all" in again.stderr

    status = deploy.k3("status", "-o", "json")
    assert status.returncode == 0, status.stderr
    state = json.loads(status.stdout)
    assert state["ready"] is True and state["revision"] == {
        "current": 1,
        "current_applied_at": state["revision"]["current_applied_at"],
        "previous": None,
    }
    assert state["smoke"]["status"] == "pass"
    assert sorted(p["name"] for p in state["pods"]) == [LWS + "-0", LWS + "-0-1", LWS + "-0-2", LWS + "-0-3"]
    cliques = {p["clique"] for p in state["pods"]}
    assert len(cliques) == 1 and cliques <= set(clique_ids(3))
    assert all(p["node"].startswith("gb300-") and p["ready"] for p in state["pods"])
    table = deploy.k3("status")
    assert table.returncode == 0 and "ready" in table.stdout and "revision: current 1" in table.stdout


def test_an_up_that_replaces_the_only_group_in_place_needs_yes_without_a_terminal(deploy: Deployment) -> None:
    assert deploy.k3("up", *QUICK).returncode == 0
    before = deploy.get("leaderworkersets", LWS)
    assert before is not None
    refused = deploy.k3("up", *QUICK, "--set", "vllm.image=vllm/vllm-openai:next", input="")
    assert refused.returncode == 2, refused.stderr
    (error, hint) = refused.stderr.splitlines()
    assert error.startswith(f"error: the change replaces the only group of LeaderWorkerSet {LWS} in place")
    assert error.endswith(": refused without --yes (stdin is not a terminal, so nobody can confirm)")
    assert hint == "hint: re-run with --yes to accept the outage, or --strategy blue-green with a second free clique"
    after = deploy.get("leaderworkersets", LWS)
    assert after is not None and after["spec"] == before["spec"]
    # An unchanged template replaces nothing: no question.
    assert deploy.k3("up", *QUICK, input="").returncode == 0


@pytest.mark.parametrize(
    ("gate", "stage", "heading"),
    [
        # The traffic gate (the default) smokes the new leader in the wait stage, before it takes traffic.
        ((), "wait", "smoke of the new group via the given endpoint "),
        # Without it the final smoke is the only one.
        (("--set", "smoke.gate_traffic=false"), "smoke", "smoke via the given endpoint "),
    ],
    ids=["gate", "final-smoke"],
)
def test_failed_smoke_rolls_back_too(deploy: Deployment, gate: tuple[str, ...], stage: str, heading: str) -> None:
    with scripted_server(Script(models=["moonshotai/Kimi-K3"], completion_status=500)) as endpoint:
        result = deploy.k3("up", "--skip-preflight", *UP, *gate, "--endpoint", endpoint.url)
    # The endpoint answers /health and /v1/models; only the completions fail: a failed check, not a blind spot.
    assert result.returncode == 1, result.stderr
    assert f"FAIL {stage}: {heading}{endpoint.url} failed: throughput: " in result.stderr
    assert f"==> rollback (first install) because {stage} failed" in result.stderr
    # A first install has no older group that still serves: the hint does not say there is one.
    assert "not yet rolled" not in result.stderr
    if stage == "wait":
        assert f"hint: {LWS}-0 takes no traffic: the API Service selects only leaders a gate passed" in result.stderr
    assert deploy.get("leaderworkersets", LWS) is None


def test_down_keeps_the_weights_and_purge_removes_them(deploy: Deployment) -> None:
    ns = deploy.namespace
    assert deploy.k3("up", *QUICK).returncode == 0
    ready = deploy.k3("status", "--exit-code", "-o", "yaml")
    assert ready.returncode == 0, ready.stderr
    # -o yaml holds what -o json holds (the objects' ages move between the two calls).
    as_yaml, as_json = yaml.safe_load(ready.stdout), json.loads(deploy.k3("status", "-o", "json").stdout)
    assert as_yaml.keys() == as_json.keys() and as_yaml["ready"] is True
    assert [(o["kind"], o["name"]) for o in as_yaml["objects"]] == [(o["kind"], o["name"]) for o in as_json["objects"]]
    # Without a terminal and without --yes, down refuses and deletes nothing.
    refused = deploy.k3("down", input="")
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [
        f"error: Delete the deployment (weights kept) of {PROFILE!r} in namespace {ns!r}: refused without "
        "--yes (stdin is not a terminal, so nobody can confirm)",
        "hint: re-run with --yes to go ahead (k3deploy deletes only what it created)",
    ]
    assert deploy.get("leaderworkersets", LWS) is not None
    down = deploy.k3("down", "--yes", "--timeout", "120s")
    assert down.returncode == 0, down.stderr
    assert "pods gone; weight cache PVC kept (--purge deletes it)" in down.stderr
    assert deploy.get("leaderworkersets", LWS) is None
    # What down waits for: the serving pods are gone when it returns.
    assert _group_pods(deploy) == []
    # The Jobs' pods follow by the real garbage collector (the Jobs are deleted with propagationPolicy Background).
    wait_until("the Jobs' pods to be collected", lambda: deploy.list("pods") == [], 120)
    assert deploy.get("persistentvolumeclaims", PVC) is not None
    status = json.loads(deploy.k3("status", "-o", "json").stdout)
    assert status["deployed"] is False and status["revision"]["current"] is None
    gone = deploy.k3("status", "--exit-code")
    assert gone.returncode == 1 and f"error: {PROFILE!r} is not deployed on kubernetes" in gone.stderr

    refused = deploy.k3("down", "--purge")
    assert refused.returncode == 2 and refused.stderr.startswith(
        f"error: Delete everything, including the downloaded weights of {PROFILE!r} in namespace {ns!r}: "
        "refused without --yes"
    )
    assert deploy.get("persistentvolumeclaims", PVC) is not None
    purge = deploy.k3("down", "--yes", "--purge", "--timeout", "120s")
    assert purge.returncode == 0, purge.stderr
    assert deploy.get("persistentvolumeclaims", PVC) is None
    again = deploy.k3("down", "--yes")
    assert again.returncode == 0 and "nothing to delete" in again.stderr


def test_ctrl_c_mid_wait_stops_cleanly_and_a_rerun_completes(deploy: Deployment) -> None:
    # The serving image takes a while to start (KWOK Stage realk8s-slow-ready): Ctrl-C lands mid-wait.
    slow = (*QUICK, *serving_image(SLOW_READY_IMAGE))
    config = deploy.plane.admin_kubeconfig
    assert config is not None
    args = [sys.executable, "-m", "k3deploy", "up", "-p", PROFILE, "--kubeconfig", str(config)]
    args += ["-n", deploy.namespace, *NO_DRA, *slow]
    proc = subprocess.Popen(
        args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=cli_env(), cwd=REPO_ROOT
    )
    seen = []
    assert proc.stderr is not None
    try:
        for line in proc.stderr:
            seen.append(line)
            if f"Pod/{LWS}-0-3: ContainerCreating" in line:
                break
        proc.send_signal(signal.SIGINT)
        rest = proc.stderr.read()
        assert proc.wait(timeout=60) == 130, "".join(seen) + rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    assert "error: interrupted" in rest and "rollback" not in rest
    assert deploy.get("leaderworkersets", LWS) is not None

    rerun = deploy.k3("up", *slow)
    assert rerun.returncode == 0, rerun.stderr
    assert "ok   apply: no changes: all" in rerun.stderr
    live = deploy.get("leaderworkersets", LWS)
    assert live is not None and live["status"]["readyReplicas"] == 1
