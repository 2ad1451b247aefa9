"""Host facts (architecture, /dev/shm, free disk, the nvidia-imex service) and the checks on them."""

from __future__ import annotations

import platform
from pathlib import Path

import pytest

from k3deploy.preflight import node
from k3deploy.preflight.checks_node import host_checks
from k3deploy.preflight.facts import HostFacts, normalize_arch
from k3deploy.profile import load_profile
from k3deploy.report.model import CheckResult, Status

GIB = 2**30
GB300 = load_profile("kimi-k3-gb300-tp16")


def grace(**changes: object) -> HostFacts:
    """A GB300 tray's host: arm64, a big /dev/shm, a 3.5 TiB NVMe at /models, no host IMEX."""
    base = dict(
        arch="arm64",
        shm_bytes=400 * GIB,
        cache_path="/models",
        cache_probe_path="/models",
        cache_free_bytes=3500 * GIB,
        imex_service="inactive",
    )
    base.update(changes)
    return HostFacts(**base)


def by_name(host: HostFacts) -> dict[str, CheckResult]:
    return {r.name: r for r in host_checks(GB300, host)}


def test_healthy_grace_host_passes() -> None:
    assert [(r.name, r.status) for r in host_checks(GB300, grace())] == [
        ("host.arch", Status.PASS),
        ("host.shm", Status.PASS),
        ("host.cache_disk", Status.SKIP),
        ("host.imex", Status.PASS),
    ]


def test_a_gb300_node_with_a_small_root_disk_passes_because_the_weights_live_on_the_pvc() -> None:
    disk = by_name(grace(cache_free_bytes=100 * GIB))["host.cache_disk"]
    assert disk.status is Status.SKIP and "PVC" in disk.detail


def test_the_local_target_still_needs_the_disk_for_its_weights() -> None:
    local = load_profile("local-cpu")
    small = {r.name: r for r in host_checks(local, grace(arch=local.vllm.image_arch, cache_free_bytes=2**20))}
    assert small["host.cache_disk"].status is Status.FAIL
    assert small["host.cache_disk"].target == ">= 7.6 MiB free (weights + draft)"
    roomy = {r.name: r for r in host_checks(local, grace(arch=local.vllm.image_arch))}
    assert roomy["host.cache_disk"].status is Status.PASS


def test_each_host_fault() -> None:
    arch = by_name(grace(arch="amd64"))["host.arch"]
    assert (arch.status, arch.measured, arch.target) == (Status.FAIL, "amd64", "arm64")
    assert "vllm.image_arch=amd64" in (arch.hint or "")
    shm = by_name(grace(shm_bytes=64 * 2**20))["host.shm"]
    assert (shm.status, shm.measured, shm.target) == (Status.WARN, "64.0 MiB", ">= 64Gi")
    imex = by_name(grace(imex_service="active"))["host.imex"]
    assert (imex.status, imex.hint) == (
        Status.WARN,
        "systemctl disable --now nvidia-imex.service on every GB300 node, "
        "or set kubernetes.compute_domain=false to use the host IMEX",
    )
    assert by_name(grace(imex_service=None))["host.imex"].status is Status.SKIP


def test_probe_reads_this_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    systemctl = bin_dir / "systemctl"
    systemctl.write_text('#!/bin/sh\n[ "$1" = is-active ] && echo active\n')
    systemctl.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    facts = node.host_facts(str(tmp_path / "models" / "kimi"))
    assert facts.arch == normalize_arch(platform.machine())
    assert facts.cache_probe_path == str(tmp_path) and facts.cache_free_bytes and facts.cache_free_bytes > 0
    assert facts.imex_service == "active"
    assert facts.shm_bytes is None or facts.shm_bytes > 0


def test_stopped_imex_unit_is_inactive_and_missing_unit_is_absent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    systemctl = tmp_path / "systemctl"
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    systemctl.write_text(
        '#!/bin/sh\n[ "$1" = is-active ] && echo inactive\n'
        '[ "$1" = list-unit-files ] && echo "nvidia-imex.service disabled enabled"\nexit 0\n'
    )
    systemctl.chmod(0o755)
    assert node.host_facts(str(tmp_path)).imex_service == "inactive"
    systemctl.write_text('#!/bin/sh\n[ "$1" = is-active ] && echo inactive\nexit 0\n')
    assert node.host_facts(str(tmp_path)).imex_service == "absent"
