"""`preflight --node --gpus-optional`, as the node-preflight Job runs it: a pod that sees no GPU (a hardened runtime
ignores NVIDIA_VISIBLE_DEVICES for pods that request none) reports SKIP with a WARN and exits 0; one that sees GPUs
is judged in full."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from k3deploy.preflight.checks import evaluate
from k3deploy.preflight.facts import Facts
from k3deploy.profile import load_profile
from k3deploy.report.model import Status
from tests.conftest import run_cli
from tests.preflight.fake_nvml import FakeNvml, gb300_node
from tests.preflight.test_cli_node import FITS_HERE, GB300, use_fake_nvml


def _checks(stdout: str) -> dict[str, dict[str, str]]:
    return {c["name"]: c for c in json.loads(stdout)["checks"]}


def test_a_pod_that_sees_no_gpu_warns_skips_and_exits_0(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # No libnvidia-ml and no nvidia-smi on PATH: what a hardened runtime leaves an unprivileged pod.
    use_fake_nvml(monkeypatch, FakeNvml(available=False))
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin"}
    done = run_cli("preflight", "-p", GB300, "--node", "--gpus-optional", "-o", "json", *FITS_HERE, env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "warn"
    checks = _checks(done.stdout)
    assert checks["gpu.visible"]["status"] == "warn" and "sees no GPU" in checks["gpu.visible"]["detail"]
    assert checks["gpu"]["status"] == "skip"
    assert not [name for name in checks if name.startswith(("gpu.count", "fabric."))]
    assert "host.shm" in checks  # the host checks still run
    # Without the flag the same pod cannot look: exit 3, as before.
    plain = run_cli("preflight", "-p", GB300, "--node", "-o", "json", *FITS_HERE, env=env)
    assert plain.returncode == 3 and plain.stderr.startswith("error: cannot look at the GPUs")


def test_nvml_that_lists_no_gpu_is_the_same_skip(monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_nvml(monkeypatch, FakeNvml(gpus=[]))
    done = run_cli("preflight", "-p", GB300, "--node", "--gpus-optional", "-o", "json", *FITS_HERE)
    assert done.returncode == 0, done.stderr
    assert "nvml lists no GPU" in _checks(done.stdout)["gpu.visible"]["detail"]
    failed = run_cli("preflight", "-p", GB300, "--node", "-o", "json", *FITS_HERE)
    assert failed.returncode == 1 and _checks(failed.stdout)["gpu.count"]["status"] == "fail"


def test_a_pod_that_sees_its_gpus_is_judged_in_full(monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_nvml(monkeypatch, gb300_node(name="NVIDIA H100 80GB HBM3"))
    done = run_cli("preflight", "-p", GB300, "--node", "--gpus-optional", "-o", "json", *FITS_HERE)
    assert done.returncode == 1
    checks = _checks(done.stdout)
    assert checks["gpu.product"]["status"] == "fail" and "gpu.visible" not in checks


def test_evaluate_reports_the_unseen_gpus_once() -> None:
    results = evaluate(load_profile(GB300), Facts(gpu_unseen="no NVML"))
    assert [(r.name, r.status) for r in results if r.name.startswith("gpu")] == [
        ("gpu.visible", Status.WARN),
        ("gpu", Status.SKIP),
    ]
