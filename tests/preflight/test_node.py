"""GPU facts through NVML (a fake `pynvml` at its module boundary) and through `nvidia-smi -q -x` fixtures."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from k3deploy.errors import EnvironmentProblem
from k3deploy.preflight import node
from k3deploy.preflight.checks_node import gpu_checks
from k3deploy.preflight.facts import GpuNodeFacts, parse_compute_caps, parse_nvidia_smi_xml
from k3deploy.profile import load_profile
from k3deploy.report.model import Status
from tests.preflight import fake_nvml
from tests.preflight.fake_nvml import FakeNvml, gb300_node, h100_node

DATA = Path(__file__).parent / "data"
GB300 = "kimi-k3-gb300-tp16"


def smi_fixture(name: str) -> GpuNodeFacts:
    return parse_nvidia_smi_xml(
        (DATA / f"{name}-nvidia-smi-q-x.xml").read_text(),
        parse_compute_caps((DATA / f"{name}-compute-cap.csv").read_text()),
    )


def test_nvml_reads_a_gb300_tray(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_nvml.install(monkeypatch, gb300_node())
    facts = node.gpu_facts()
    assert facts.source == "nvml"
    assert (facts.driver_version, facts.cuda_driver_version) == ("580.95.05", "13.0")
    assert [g.name for g in facts.gpus] == ["NVIDIA GB300"] * 4
    first = facts.gpus[0]
    assert (first.memory_mib, first.compute_capability, first.mig_enabled, first.persistence_mode) == (
        284208,
        "10.3",
        False,
        True,
    )
    assert (first.fabric_state, first.fabric_status) == ("Completed", "Success")
    assert {g.clique for g in facts.gpus} == {"4a2c8e61-93d7-4b5e-a0f2-6c1d9e8b7a35.7"}
    assert first.pci_bus_id == "00000008:01:00.0" and first.retired_pages_pending is None


@pytest.mark.parametrize("name,fake", [("gb300", gb300_node), ("h100", h100_node)])
def test_nvidia_smi_xml_gives_the_same_facts_as_nvml(
    monkeypatch: pytest.MonkeyPatch, name: str, fake: Callable[[], FakeNvml]
) -> None:
    fake_nvml.install(monkeypatch, fake())
    from_nvml = node.gpu_facts()
    from_xml = smi_fixture(name)
    assert from_xml.source == "nvidia-smi"
    assert from_xml.model_dump(exclude={"source"}) == from_nvml.model_dump(exclude={"source"})


def test_healthy_gb300_passes_every_gpu_check(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_nvml.install(monkeypatch, gb300_node())
    results = gpu_checks(load_profile(GB300), node.gpu_facts())
    assert [(r.name, r.status) for r in results] == [
        ("gpu.count", Status.PASS),
        ("gpu.product", Status.PASS),
        ("gpu.compute_capability", Status.PASS),
        ("gpu.memory", Status.PASS),
        ("driver.version", Status.PASS),
        ("driver.cuda", Status.PASS),
        ("gpu.mig", Status.PASS),
        ("gpu.health", Status.PASS),
        ("gpu.persistence", Status.PASS),
        ("fabric.state", Status.PASS),
        ("fabric.health", Status.PASS),
        ("fabric.clique", Status.PASS),
    ]


def _two_cliques() -> FakeNvml:
    fake = gb300_node()
    fake.gpus[2].clique_id = fake.gpus[3].clique_id = 9
    return fake


def _three_gpus() -> FakeNvml:
    fake = gb300_node()
    del fake.gpus[3]
    return fake


def _driver_575() -> FakeNvml:
    fake = gb300_node()
    fake.driver, fake.cuda = "575.57.08", 12090
    return fake


def _mixed() -> FakeNvml:
    fake = gb300_node()
    fake.gpus[3].name = "NVIDIA B300 SXM6 AC"
    return fake


def _driver_580_65() -> FakeNvml:
    fake = gb300_node()
    fake.driver = "580.65.06"
    return fake


FAILURES = [
    (
        lambda: gb300_node(health_mask=fake_nvml.DEGRADED_BANDWIDTH_MASK),
        "fabric.health",
        "GPU 0: degraded bandwidth; GPU 1: degraded bandwidth; GPU 2: degraded bandwidth; GPU 3: degraded bandwidth",
        "NVLink switch",
    ),
    (
        lambda: gb300_node(health_mask=fake_nvml.UNHEALTHY_ROUTE_MASK),
        "fabric.health",
        None,
        "fabric manager reports it healthy",
    ),
    (_driver_580_65, "driver.version", "580.65.06", "580.95.05 or later"),
    # (fake node, the check that fails, what it found, words its hint must contain)
    (lambda: gb300_node(name="NVIDIA H200"), "gpu.product", "NVIDIA H200", "hardware.allowed_products"),
    (_three_gpus, "gpu.count", 3, "parallel.gpus_per_node"),
    (_driver_575, "driver.version", "575.57.08", "R580+"),
    (lambda: gb300_node(mig=(1, 1)), "gpu.mig", "enabled on GPU 0, 1, 2, 3", "-mig 0"),
    (
        lambda: gb300_node(fabric_state=fake_nvml.NVML_GPU_FABRIC_STATE_IN_PROGRESS),
        "fabric.state",
        "GPU 0: State In Progress, Status Success",
        "fabric manager",
    ),
    (
        _two_cliques,
        "fabric.clique",
        "4a2c8e61-93d7-4b5e-a0f2-6c1d9e8b7a35.7, 4a2c8e61-93d7-4b5e-a0f2-6c1d9e8b7a35.9",
        "one partition",
    ),
    (lambda: gb300_node(cc=(10, 0)), "gpu.compute_capability", "10.0", "sm_103"),
    (lambda: gb300_node(memory_mib=190000), "gpu.memory", "190000 MiB", "hardware.gpu_memory_mib"),
    (lambda: gb300_node(remapped=(0, 1, 1, 0)), "gpu.health", None, "reset the GPU"),
    (lambda: gb300_node(ecc_uncorrected=2), "gpu.health", None, "reset the GPU"),
    (lambda: gb300_node(recovery_action=4), "gpu.health", None, "reset the GPU"),
    (
        lambda: gb300_node(fabric_state=None, cluster_uuid=None),
        "fabric.state",
        "GPU 0: State N/A, Status N/A",
        "hardware.nvlink_domain=false",
    ),
]


@pytest.mark.parametrize("make,check,found,hint_words", FAILURES, ids=[f[1] + str(i) for i, f in enumerate(FAILURES)])
def test_each_nvml_failure_fails_its_check_with_a_hint(
    monkeypatch: pytest.MonkeyPatch, make: Callable[[], FakeNvml], check: str, found: object, hint_words: str
) -> None:
    fake_nvml.install(monkeypatch, make())
    results = {r.name: r for r in gpu_checks(load_profile(GB300), node.gpu_facts())}
    result = results[check]
    assert result.status is Status.FAIL
    if found is not None:
        assert result.measured == found
    assert hint_words in (result.hint or "")
    failed = {name for name, r in results.items() if r.status is Status.FAIL}
    # One fault, one failing check; a 575 driver is also too old for CUDA 13, and no fabric means no clique either.
    also = {
        "driver.version": {"driver.cuda"} if str(found).startswith("575") else set(),
        "fabric.state": {"fabric.clique"} if str(found).endswith("N/A") else set(),
    }
    assert failed == {check} | also.get(check, set())


def test_mixed_products_in_one_node_fail_even_when_each_is_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_nvml.install(monkeypatch, _mixed())
    profile = load_profile(GB300, ['hardware.allowed_products=["NVIDIA B300 SXM6 AC"]'])
    result = {r.name: r for r in gpu_checks(profile, node.gpu_facts())}["gpu.product"]
    assert result.status is Status.FAIL and result.target == "one product"
    assert result.measured == "NVIDIA B300 SXM6 AC, NVIDIA GB300" and "one product" in (result.hint or "")


def test_the_fabric_health_mask_decodes_every_field() -> None:
    from k3deploy.preflight.facts import fabric_health_problems

    assert fabric_health_problems(fake_nvml.HEALTHY_FABRIC_MASK) == []
    assert fabric_health_problems(0) == []  # a device that reports no health data
    assert fabric_health_problems(1 | (1 << 2) | (1 << 4) | (1 << 6) | (5 << 8)) == [
        "degraded bandwidth",
        "route recovery in progress",
        "route unhealthy",
        "access timeout recovery",
        "insufficient NVLinks",
    ]


def test_health_names_each_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = gb300_node()
    fake.gpus[1].remapped = (0, 1, 1, 0)
    fake.gpus[2].ecc_uncorrected = 2
    fake.gpus[3].recovery_action = 4
    fake_nvml.install(monkeypatch, fake)
    health = {r.name: r for r in gpu_checks(load_profile(GB300), node.gpu_facts())}["gpu.health"]
    assert health.measured == (
        "GPU 1 has a row remap pending a reset; GPU 2 has 2 uncorrectable ECC error(s) since boot; "
        "GPU 3 needs 'Drain and Reset'"
    )


def test_persistence_off_is_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_nvml.install(monkeypatch, gb300_node(persistence=fake_nvml.NVML_FEATURE_DISABLED))
    result = {r.name: r for r in gpu_checks(load_profile(GB300), node.gpu_facts())}["gpu.persistence"]
    assert (result.status, result.measured) == (Status.WARN, "off on GPU 0, 1, 2, 3")
    assert result.hint == "enable nvidia-persistenced (or `nvidia-smi -pm 1`)"


def test_b300_is_accepted_when_the_profile_allows_it(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_nvml.install(monkeypatch, gb300_node(name="NVIDIA B300 SXM6 AC"))
    strict = {r.name: r for r in gpu_checks(load_profile(GB300), node.gpu_facts())}
    allowed = {
        r.name: r
        for r in gpu_checks(
            load_profile(GB300, ['hardware.allowed_products=["NVIDIA B300 SXM6 AC"]']), node.gpu_facts()
        )
    }
    assert strict["gpu.product"].status is Status.FAIL
    assert allowed["gpu.product"].status is Status.PASS


def test_h100_fails_product_capability_memory_and_fabric() -> None:
    results = gpu_checks(load_profile(GB300), smi_fixture("h100"))
    assert sorted(r.name for r in results if r.status is Status.FAIL) == [
        "fabric.clique",
        "fabric.state",
        "gpu.compute_capability",
        "gpu.memory",
        "gpu.product",
    ]


def test_no_nvml_and_no_nvidia_smi_is_an_environment_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_nvml.install(monkeypatch, FakeNvml(available=False))
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(EnvironmentProblem) as info:
        node.gpu_facts()
    assert info.value.exit_code == 3
    assert str(info.value) == (
        "cannot look at the GPUs: NVML and nvidia-smi were not found "
        "(NVML: NVML Shared Library Not Found; nvidia-smi: not on PATH)"
    )


def test_fake_matches_real_pynvml() -> None:
    real = pytest.importorskip("pynvml")
    for name, value in fake_nvml.CONSTANTS.items():
        assert getattr(real, name) == value, name
    for name in fake_nvml.FUNCTIONS:
        assert callable(getattr(real, name)), name
    assert [f[0] for f in real.c_nvmlGpuFabricInfoV_t._fields_] == [
        f[0] for f in fake_nvml.c_nvmlGpuFabricInfoV_t._fields_
    ]
    assert issubclass(real.NVMLError, Exception)
