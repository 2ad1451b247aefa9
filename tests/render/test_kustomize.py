"""`kubectl kustomize` builds every committed manifests/ folder into exactly the rendered objects, in order."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO_ROOT, venv_tool

pytestmark = pytest.mark.integration

FOLDERS = sorted(p for p in (REPO_ROOT / "manifests").iterdir() if p.is_dir())


def _kubectl() -> str:
    found = venv_tool("kubectl")
    if not found:
        pytest.skip("kubectl not installed (bash .ci/setup puts one in .venv/bin)")
    return found


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_kubectl_kustomize_builds_the_same_objects(folder: Path) -> None:
    result = subprocess.run([_kubectl(), "kustomize", str(folder)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    built = [doc for doc in yaml.safe_load_all(result.stdout) if doc is not None]
    resources = yaml.safe_load((folder / "kustomization.yaml").read_text())["resources"]
    assert built == [yaml.safe_load((folder / name).read_text()) for name in resources]


def test_kubectl_kustomize_fails_on_a_broken_folder(tmp_path: Path) -> None:
    folder = tmp_path / "broken"
    shutil.copytree(FOLDERS[0], folder)
    (folder / "kustomization.yaml").write_text("resources:\n- missing.yaml\n")
    result = subprocess.run([_kubectl(), "kustomize", str(folder)], capture_output=True, text=True, timeout=120)
    assert result.returncode != 0 and "missing.yaml" in result.stderr
