"""Each Flux layer, built by the real kustomize (`kubectl kustomize`) as kustomize-controller builds it (the folder
plus the layer's `spec.patches`), holds its part of the set; together they hold every object exactly once."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from k3deploy.profile import load_profile
from k3deploy.render.manifests import build
from k3deploy.render.output_dir import write_set
from k3deploy.render.write import files_of
from tests.conftest import REPO_ROOT, venv_tool
from tests.gitops.test_flux_timing import K3, layers
from tests.render.sets import builtin_prefetch

pytestmark = pytest.mark.integration


def _kubectl() -> str:
    found = venv_tool("kubectl")
    if not found:
        pytest.skip("kubectl not installed (bash .ci/setup puts one in .venv/bin)")
    return found


def _objects(folder: Path) -> list[tuple[str, str]]:
    result = subprocess.run([_kubectl(), "kustomize", str(folder)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return [(d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all(result.stdout) if d]


def _layer(tmp: Path, folder: Path, name: str) -> list[tuple[str, str]]:
    """kustomize-controller adds spec.patches to the folder's kustomization; an overlay on it builds the same."""
    overlay = tmp / f"layer-{name}"
    overlay.mkdir()
    spec = layers()[name]["spec"]
    # kustomize takes a relative path to another kustomization root only.
    kustomization = {"resources": [os.path.relpath(folder, overlay)], "patches": spec.get("patches", [])}
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    return _objects(overlay)


@pytest.mark.parametrize("sets", [[], ["kubernetes.routing=inference-pool", "kubernetes.gateway_namespace=envoy-gateway-system"]], ids=["service", "inference-pool"])
def test_the_layers_partition_the_set(tmp_path: Path, sets: list[str]) -> None:
    folder = REPO_ROOT / "manifests" / K3
    if sets:
        folder = tmp_path / "set"
        write_set(folder, files_of(build(load_profile(K3, sets))))
    everything = _objects(folder)
    parts = {name: _layer(tmp_path, folder, name) for name in ("cache", "serving", "smoke")}
    assert sorted(sum(parts.values(), [])) == sorted(everything)  # each object in exactly one layer
    assert {"PersistentVolumeClaim", "Job", "Namespace"} <= {kind for kind, _ in parts["cache"]}
    assert ("Job", builtin_prefetch(K3, sets)) in parts["cache"] and ("Job", f"{K3}-node-preflight") in parts["cache"]
    assert ("LeaderWorkerSet", K3) in parts["serving"] and ("ComputeDomain", f"{K3}-compute-domain") in parts["serving"]
    # The smoke Job with its gate's identity (smoke.gate_traffic): it labels the leaders it gated.
    assert parts["smoke"] == [
        ("ServiceAccount", f"{K3}-smoke-gate"),
        ("Role", f"{K3}-smoke-gate"),
        ("RoleBinding", f"{K3}-smoke-gate"),
        ("Job", f"{K3}-smoke"),
    ]
    if sets:
        assert ("InferencePool", K3) in parts["serving"] and ("Deployment", f"{K3}-epp") in parts["serving"]
