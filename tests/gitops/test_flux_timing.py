"""The committed Flux Kustomizations sync in layers (cache -> serving -> smoke), each waiting as long as its part of
a first sync can take: the weight download, then the load, then the smoke Job."""

from __future__ import annotations

from typing import Any

import yaml

from k3deploy.duration import parse_duration
from k3deploy.profile import load_profile
from k3deploy.render.manifests import build
from tests.conftest import REPO_ROOT

K3 = "kimi-k3-gb300-tp16"
FLUX = REPO_ROOT / "gitops" / "flux" / "kustomization.yaml"


def layers() -> dict[str, dict[str, Any]]:
    """The Flux Kustomizations by layer (the name's last part)."""
    docs = [d for d in yaml.safe_load_all(FLUX.read_text()) if d]
    return {d["metadata"]["name"].removeprefix(f"{K3}-"): d for d in docs}


def test_the_layers_depend_on_each_other_in_order_and_wait() -> None:
    found = layers()
    assert list(found) == ["cache", "serving", "smoke"]
    assert "dependsOn" not in found["cache"]["spec"]
    assert found["serving"]["spec"]["dependsOn"] == [{"name": f"{K3}-cache"}]
    assert found["smoke"]["spec"]["dependsOn"] == [{"name": f"{K3}-serving"}]
    for doc in found.values():
        assert doc["spec"]["wait"] is True and doc["spec"]["path"] == f"./manifests/{K3}"


def _deadline(kind: str, component: str) -> int:
    [job] = [
        m.obj
        for m in build(load_profile(K3))
        if m.kind == kind and m.obj["metadata"]["labels"]["app.kubernetes.io/component"] == component
    ]
    return int(job["spec"]["activeDeadlineSeconds"])


def test_each_layer_waits_for_its_part_of_a_first_sync() -> None:
    profile = load_profile(K3)
    kube = profile.kubernetes
    timeout = {name: parse_duration(doc["spec"]["timeout"]) for name, doc in layers().items()}
    # The download (6 h) and the node check before it: a layer that gave up first would fail a sync still downloading.
    assert timeout["cache"] >= kube.prefetch_timeout_s + _deadline("Job", "node-preflight")
    assert timeout["serving"] >= max(profile.startup_budget.total_s, kube.rollout_timeout_s)
    # The smoke Job starts once serving is Ready; Flux must not give up before the Job's own deadline says why.
    assert timeout["smoke"] >= _deadline("Job", "smoke")
