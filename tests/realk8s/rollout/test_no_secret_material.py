"""No secret material leaves the cluster's Secret: a recognizable Hub token through a full `up` on the real plane.

The token is where a real user has it: in the cluster Secret the prefetch mounts (which preflight inspects), in
the environment of the shell that runs k3deploy (HF_TOKEN) and in the Hub client's token file. After `up`
(preflight, render, apply, wait, smoke) and `status`, the value must appear nowhere in the rendered set, the JSON
reports, the objects k3deploy wrote to the cluster (the revision-history ConfigMap among them) or anything it printed.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from k3deploy.targets.kubernetes.history import HISTORY_KEY, history_name
from tests.conftest import run_cli
from tests.pin.distribution import Distribution
from tests.preflight.test_checks_pinning import PINNED
from tests.realk8s.client import resource_path
from tests.realk8s.cluster_fixtures import NO_DRA, PROFILE, SMOKE, TIMEOUT, Deployment
from tests.smoke.scripted_server import Script, scripted_server

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(600)]
TOKEN = "hf_K3deployCanaryToken0123456789abcdefXYZ"
#: The forms a leak could take: the value, its base64 (Secret data) and its first half (a truncated print).
LEAKS = (TOKEN, base64.b64encode(TOKEN.encode()).decode(), TOKEN[: len(TOKEN) // 2])


def leaks(text: str) -> list[str]:
    return [form for form in LEAKS if form in text]


def test_a_token_goes_through_up_and_comes_out_nowhere(
    deploy: Deployment,
    registry: Distribution,
    tmp_path: Path,
) -> None:
    namespace = deploy.namespace
    deploy.create_namespace()
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "hf-token", "namespace": namespace},
        "type": "Opaque",
        "data": {"token": base64.b64encode(TOKEN.encode()).decode()},
    }
    deploy.plane.api.create(resource_path("v1", "secrets", namespace), secret)
    hf_home = tmp_path / "hf"
    hf_home.mkdir()
    (hf_home / "token").write_text(TOKEN)
    env = {"HF_TOKEN": TOKEN, "HF_HOME": str(hf_home), "K3DEPLOY_REGISTRY_URL": registry.url}
    digest = registry.push_index("vllm/vllm-openai", "kimi-k3-aarch64-cu130", ["amd64", "arm64"])
    lws_version = deploy.plane.binaries.versions["LWS_VERSION"].lstrip("v")
    sets = [
        arg
        for s in [
            *PINNED,
            f"vllm.image=vllm/vllm-openai:kimi-k3-aarch64-cu130@{digest}",
            f"kubernetes.lws_version={lws_version}",
            "kubernetes.hf_token_secret.name=hf-token",
        ]
        for arg in ("--set", s)
    ]

    outputs: dict[str, str] = {}
    with scripted_server(Script(models=["moonshotai/Kimi-K3"], tokens_per_chunk=[4, 4, 4, 4])) as endpoint:
        up = deploy.k3("up", *sets, *SMOKE, *TIMEOUT, "--endpoint", endpoint.url, "-o", "json", env=env)
        assert up.returncode == 0, up.stderr
        report = json.loads(up.stdout)
        assert [s["status"] for s in report["stages"]] == ["pass"] * 5
        outputs["up stdout (JSON report)"], outputs["up stderr"] = up.stdout, up.stderr
        table = deploy.k3("up", *sets, *SMOKE, *TIMEOUT, "--endpoint", endpoint.url, env=env)
        outputs["up (table) stdout"], outputs["up (table) stderr"] = table.stdout, table.stderr
    for output in ("json", "table"):
        status = deploy.k3("status", *sets, "-o", output, env=env)
        outputs[f"status {output}"] = status.stdout + status.stderr
    rendered = tmp_path / "rendered"
    render = run_cli(
        "render",
        "-p",
        PROFILE,
        *NO_DRA,
        "--set",
        f"kubernetes.namespace={namespace}",
        *sets,
        "-o",
        str(rendered),
        env=env,
    )
    assert render.returncode == 0, render.stderr
    outputs.update({f"rendered {p.name}": p.read_text() for p in rendered.iterdir()})
    outputs["render stdout+stderr"] = render.stdout + render.stderr

    # What k3deploy (and the real controllers, from its templates) wrote to the cluster: every object of the
    # namespace but the Secret it was given.
    written = {
        f"{plural}/{o['metadata']['name']}": json.dumps(o)
        for plural in (
            "configmaps",
            "jobs",
            "leaderworkersets",
            "statefulsets",
            "controllerrevisions",
            "services",
            "serviceaccounts",
            "networkpolicies",
            "persistentvolumeclaims",
            "poddisruptionbudgets",
            "pods",
        )
        for o in deploy.list(plural)
    }
    assert json.loads(json.loads(written[f"configmaps/{history_name(PROFILE)}"])["data"][HISTORY_KEY])
    outputs.update({f"cluster {key}": text for key, text in written.items()})

    # The canary was really on the way: the Secret holds it and the prefetch names that Secret.
    assert leaks(json.dumps(deploy.get("secrets", "hf-token")))
    (prefetch,) = [text for key, text in written.items() if key.startswith(f"jobs/{PROFILE}-prefetch-")]
    assert '"secretName": "hf-token"' in prefetch
    assert {name: leaks(text) for name, text in outputs.items() if leaks(text)} == {}
