"""`k3deploy up / status / down` end to end against the test API server, smoke against a scripted endpoint."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from typing import Any

import pytest
import yaml

from tests.conftest import REPO_ROOT, cli_env
from tests.pin.distribution import Distribution
from tests.preflight.test_checks_pinning import PINNED
from tests.rollout.conftest import FAST, K3, NAMESPACE, PROFILE, live
from tests.smoke.scripted_server import Script, scripted_server

pytestmark = pytest.mark.timeout(240)
LWS = "kimi-k3-gb300-tp16"
PVC = "kimi-k3-gb300-tp16-model-cache"
#: Public weights (no token Secret) and a short smoke: 2 requests of 64 tokens, answers not judged, a decode
#: target a loaded 2-core CI machine reaches (the scripted server's speed is not what is under test).
UP = (
    "--timeout",
    "60s",
    "--set",
    "kubernetes.hf_token_secret=null",
    "--set",
    "smoke.requests=2",
    "--set",
    "smoke.output_tokens=64",
    "--set",
    "smoke.correctness=false",
    "--set",
    "targets.decode_tok_s=20",
)
QUICK = ("--skip-preflight", "--skip-smoke", *UP)


def test_up_happy_path_reports_and_a_rerun_changes_nothing(
    k3: K3,
    cluster: Any,
    registry: Distribution,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A production profile deploys pinned versions only; the registry shows the image runs on the arm64 nodes.
    monkeypatch.setenv("K3DEPLOY_REGISTRY_URL", registry.url)
    digest = registry.push_index("vllm/vllm-openai", "kimi-k3-aarch64-cu130", ["amd64", "arm64"])
    pinned = [
        arg for s in [*PINNED, f"vllm.image=vllm/vllm-openai:kimi-k3-aarch64-cu130@{digest}"] for arg in ("--set", s)
    ]
    # Four tokens per verify step: acceptance length 4 clears the profile's minimum of 3.
    # 10 ms between chunks: on a loaded 2-core host the 2 ms default let the client read whole streams in bursts,
    # which smoke rightly calls a WARN (a starved API server); this test is about the happy path.
    happy = Script(models=["moonshotai/Kimi-K3"], tokens_per_chunk=[4, 4, 4, 4], chunk_delay_s=0.01)
    with scripted_server(happy) as endpoint:
        first = k3("up", *UP, *pinned, "--endpoint", endpoint.url, "-o", "json")
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
            f"    decode tok/s       {median} median at bs=1 vs target 20, 464 tok/s published peak, "
            "118 tok/s published without speculation [pass]",
            "    acceptance length  3.94 mean vs minimum 3 [pass]",
            "    acceptance rate    0.734 over 32 drafts",
            "    result             targets met",
        ]

        # Preflight runs again on the live deployment: its own pods must not count as taking the GPUs.
        again = k3("up", *UP, *pinned, "--endpoint", endpoint.url)
    assert again.returncode == 0, again.stderr
    assert "ok   apply: no changes: all" in again.stderr

    status = k3("status", "-o", "json")
    assert status.returncode == 0, status.stderr
    state = json.loads(status.stdout)
    assert state["ready"] is True and state["revision"] == {
        "current": 1,
        "current_applied_at": state["revision"]["current_applied_at"],
        "previous": None,
    }
    assert state["smoke"]["status"] == "pass"
    assert sorted(p["name"] for p in state["pods"]) == [LWS + "-0", LWS + "-0-1", LWS + "-0-2", LWS + "-0-3"]
    assert {p["clique"] for p in state["pods"]} == {"5b1c3a9e-2f4d-4e7a-9c1b-0d2e3f4a5b6c.1"}
    assert all(p["node"].startswith("gb300-") and p["ready"] for p in state["pods"])
    table = k3("status")
    assert table.returncode == 0 and "ready" in table.stdout and "revision: current 1" in table.stdout


def test_an_up_that_replaces_the_only_group_in_place_needs_yes_without_a_terminal(k3: K3, cluster: Any) -> None:
    assert k3("up", *QUICK).returncode == 0
    before = live(cluster, "leaderworkersets", LWS)["spec"]
    refused = k3("up", *QUICK, "--set", "vllm.image=vllm/vllm-openai:next", input="")
    assert refused.returncode == 2, refused.stderr
    (error, hint) = refused.stderr.splitlines()
    assert error.startswith(f"error: the change replaces the only group of LeaderWorkerSet {LWS} in place")
    assert error.endswith(": refused without --yes (stdin is not a terminal, so nobody can confirm)")
    assert hint == "hint: re-run with --yes to accept the outage, or --strategy blue-green with a second free clique"
    assert live(cluster, "leaderworkersets", LWS)["spec"] == before
    # An unchanged template replaces nothing: no question.
    assert k3("up", *QUICK, input="").returncode == 0


def test_failed_smoke_rolls_back_too(k3: K3, cluster: Any) -> None:
    with scripted_server(Script(models=["moonshotai/Kimi-K3"], completion_status=500)) as endpoint:
        result = k3("up", "--skip-preflight", *UP, "--endpoint", endpoint.url)
    # The endpoint answers /health and /v1/models; only the completions fail: a failed check, not a blind spot.
    assert result.returncode == 1, result.stderr
    assert "FAIL smoke: smoke via the given endpoint " in result.stderr
    assert "==> rollback (first install) because smoke failed" in result.stderr
    assert live(cluster, "leaderworkersets", LWS) is None


def test_down_keeps_the_weights_and_purge_removes_them(k3: K3, cluster: Any) -> None:
    assert k3("up", *QUICK).returncode == 0
    ready = k3("status", "--exit-code", "-o", "yaml")
    assert ready.returncode == 0, ready.stderr
    # -o yaml holds what -o json holds (the objects' ages move between the two calls).
    as_yaml, as_json = yaml.safe_load(ready.stdout), json.loads(k3("status", "-o", "json").stdout)
    assert as_yaml.keys() == as_json.keys() and as_yaml["ready"] is True
    assert [(o["kind"], o["name"]) for o in as_yaml["objects"]] == [(o["kind"], o["name"]) for o in as_json["objects"]]
    # Without a terminal and without --yes, down refuses and deletes nothing.
    refused = k3("down", input="")
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [
        f"error: Delete the deployment (weights kept) of {PROFILE!r} in namespace {NAMESPACE!r}: refused without "
        "--yes (stdin is not a terminal, so nobody can confirm)",
        "hint: re-run with --yes to go ahead (k3deploy deletes only what it created)",
    ]
    assert live(cluster, "leaderworkersets", LWS) is not None
    down = k3("down", "--yes")
    assert down.returncode == 0, down.stderr
    assert "pods gone; weight cache PVC kept (--purge deletes it)" in down.stderr
    assert live(cluster, "leaderworkersets", LWS) is None
    # What down waits for: the serving pods are gone when it returns.
    assert [
        p
        for p in cluster.store.list("pods", NAMESPACE)
        if p["metadata"].get("labels", {}).get("leaderworkerset.sigs.k8s.io/name") == LWS
    ] == []
    # The Jobs' pods follow by background garbage collection (the Jobs are deleted with propagationPolicy Background).
    cluster.wait_for(lambda: cluster.store.list("pods", NAMESPACE) == [])
    assert live(cluster, "persistentvolumeclaims", PVC) is not None
    status = json.loads(k3("status", "-o", "json").stdout)
    assert status["deployed"] is False and status["revision"]["current"] is None
    gone = k3("status", "--exit-code")
    assert gone.returncode == 1 and f"error: {PROFILE!r} is not deployed on kubernetes" in gone.stderr

    refused = k3("down", "--purge")
    assert refused.returncode == 2 and refused.stderr.startswith(
        f"error: Delete everything, including the downloaded weights of {PROFILE!r} in namespace {NAMESPACE!r}: "
        "refused without --yes"
    )
    assert live(cluster, "persistentvolumeclaims", PVC) is not None
    purge = k3("down", "--yes", "--purge")
    assert purge.returncode == 0, purge.stderr
    assert live(cluster, "persistentvolumeclaims", PVC) is None
    again = k3("down", "--yes")
    assert again.returncode == 0 and "nothing to delete" in again.stderr


def test_ctrl_c_mid_wait_stops_cleanly_and_a_rerun_completes(k3: K3, cluster: Any) -> None:
    cluster.controllers.kubelet.ready_delay = 30.0
    args = [
        sys.executable,
        "-m",
        "k3deploy",
        "up",
        "-p",
        PROFILE,
        "--kubeconfig",
        str(cluster.kubeconfig),
        *FAST,
        *QUICK,
    ]
    proc = subprocess.Popen(
        args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=cli_env(), cwd=REPO_ROOT
    )
    seen = []
    assert proc.stderr is not None
    for line in proc.stderr:
        seen.append(line)
        if "Pod/kimi-k3-gb300-tp16-0-3: Running" in line:
            break
    proc.send_signal(signal.SIGINT)
    rest = proc.stderr.read()
    assert proc.wait(timeout=30) == 130, "".join(seen) + rest
    assert "error: interrupted" in rest and "rollback" not in rest
    assert live(cluster, "leaderworkersets", LWS) is not None

    cluster.controllers.kubelet.ready_delay = 0.2
    rerun = k3("up", *QUICK)
    assert rerun.returncode == 0, rerun.stderr
    assert "ok   apply: no changes: all" in rerun.stderr
    assert live(cluster, "leaderworkersets", LWS)["status"]["readyReplicas"] == 1
