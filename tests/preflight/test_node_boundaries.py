"""The GPU and host checks pinned at their boundaries, both sides (the survivors of tests/mutation/run on
k3deploy/preflight/checks_node.py): every GPU is looked at (not GPU 0 only), limits pass at the limit."""

from __future__ import annotations

import pytest

from k3deploy.preflight.checks_node import gpu_checks, host_checks
from k3deploy.preflight.facts import GpuFacts, GpuNodeFacts, HostFacts
from k3deploy.profile import load_profile
from k3deploy.report.model import CheckResult, Status

GB300 = load_profile("kimi-k3-gb300-tp16")
LOCAL = load_profile("local-cpu")
GIB = 2**30
CLIQUE = {"fabric_cluster_uuid": "c-1", "fabric_clique_id": 7}


def _gpu(index: int, **changes: object) -> GpuFacts:
    base: dict[str, object] = dict(
        index=index,
        name="NVIDIA GB300",
        memory_mib=284208,
        compute_capability="10.3",
        mig_enabled=False,
        persistence_mode=True,
        recovery_action="None",
        fabric_state="Completed",
        fabric_status="Success",
        **CLIQUE,
    )
    base.update(changes)
    return GpuFacts(**base)


def _checks(*gpus: GpuFacts, driver: str = "580.95.05", cuda: str = "13.0") -> dict[str, CheckResult]:
    facts = GpuNodeFacts(source="nvml", driver_version=driver, cuda_driver_version=cuda, gpus=list(gpus))
    return {r.name: r for r in gpu_checks(GB300, facts)}


def _tray(last: int = 3, **changes: object) -> list[GpuFacts]:
    """A tray of four GPUs; GPU `last` (by default the last one, never only GPU 0) carries the changes."""
    return [_gpu(i, **(changes if i == last else {})) for i in range(4)]


def test_a_healthy_tray_passes_every_check() -> None:
    assert {name: r.status for name, r in _checks(*_tray()).items()} == dict.fromkeys(
        [
            "gpu.count",
            "gpu.product",
            "gpu.compute_capability",
            "gpu.memory",
            "driver.version",
            "driver.cuda",
            "gpu.mig",
            "gpu.health",
            "gpu.persistence",
            "fabric.state",
            "fabric.health",
            "fabric.clique",
        ],
        Status.PASS,
    )


@pytest.mark.parametrize(("count", "status"), [(3, Status.FAIL), (4, Status.PASS), (5, Status.PASS)])
def test_the_node_needs_at_least_gpus_per_node(count: int, status: Status) -> None:
    assert _checks(*[_gpu(i) for i in range(count)])["gpu.count"].status is status


def test_the_product_of_every_gpu_is_checked_not_gpu_0s_only() -> None:
    check = _checks(*_tray(name="NVIDIA B300 SXM6 AC"))["gpu.product"]
    assert check.status is Status.FAIL
    assert check.detail == "GPU 3 is 'NVIDIA B300 SXM6 AC', not a NVIDIA GB300"
    assert check.measured == "NVIDIA B300 SXM6 AC, NVIDIA GB300"


def test_an_allowed_product_passes_on_a_tray_of_one_product_but_mixed_with_another_fails() -> None:
    profile = load_profile("kimi-k3-gb300-tp16", ["hardware.allowed_products=[NVIDIA B300 SXM6 AC]"])

    def product(gpus: list[GpuFacts]) -> CheckResult:
        facts = GpuNodeFacts(source="nvml", driver_version="580.95.05", cuda_driver_version="13.0", gpus=gpus)
        return {r.name: r for r in gpu_checks(profile, facts)}["gpu.product"]

    assert product([_gpu(i, name="NVIDIA B300 SXM6 AC") for i in range(4)]).status is Status.PASS
    # Each allowed, but a TP group runs at its slowest GPU: one kind per node.
    mixed = product(_tray(name="NVIDIA B300 SXM6 AC"))
    assert (mixed.status, mixed.measured, mixed.target) == (
        Status.FAIL,
        "NVIDIA B300 SXM6 AC, NVIDIA GB300",
        "one product",
    )
    assert mixed.detail.startswith("this node mixes NVIDIA B300 SXM6 AC and NVIDIA GB300")


def test_compute_capability_of_every_gpu_fails_when_wrong_and_warns_when_unknown() -> None:
    wrong = _checks(*_tray(compute_capability="9.0"))["gpu.compute_capability"]
    assert wrong.status is Status.FAIL and wrong.detail.startswith("GPU 3 has compute capability 9.0")
    unknown = _checks(*_tray(compute_capability=None))["gpu.compute_capability"]
    assert (unknown.status, unknown.measured) == (Status.WARN, "10.3, unknown")
    assert unknown.detail == "GPU 3 did not report a compute capability"


@pytest.mark.parametrize(("mib", "status"), [(284207, Status.FAIL), (284208, Status.PASS)])
def test_the_smallest_gpu_must_have_the_planned_memory(mib: int, status: Status) -> None:
    check = _checks(*_tray(memory_mib=mib))["gpu.memory"]
    assert (check.status, check.measured) == (status, f"{mib} MiB")


@pytest.mark.parametrize(
    ("driver", "cuda", "driver_status", "cuda_status"),
    [
        ("580.95.05", "13.0", Status.PASS, Status.PASS),
        ("580.95.04", "12.9", Status.FAIL, Status.FAIL),
        ("580", "13.0", Status.FAIL, Status.PASS),  # the R580 branch alone is older than 580.95.05
        ("580.95.06", "13.1", Status.PASS, Status.PASS),
    ],
)
def test_driver_and_cuda_pass_at_their_minimum(
    driver: str, cuda: str, driver_status: Status, cuda_status: Status
) -> None:
    checks = _checks(*_tray(), driver=driver, cuda=cuda)
    assert (checks["driver.version"].status, checks["driver.cuda"].status) == (driver_status, cuda_status)


def test_a_driver_below_the_minimum_names_the_release_and_its_branch() -> None:
    check = _checks(*_tray(), driver="580.65.06")["driver.version"]
    assert (check.status, check.target) == (Status.FAIL, ">= 580.95.05")
    assert check.detail == "driver 580.65.06 is older than 580.95.05"
    assert (check.hint or "").startswith("install an R580+ data-center driver, 580.95.05 or later")


@pytest.mark.parametrize(("health", "status"), [([], Status.PASS), (["route unhealthy"], Status.FAIL)])
def test_a_degraded_fabric_on_any_gpu_fails_and_names_it(health: list[str], status: Status) -> None:
    check = _checks(*_tray(fabric_health=health))["fabric.health"]
    measured = "healthy" if not health else "GPU 3: route unhealthy"
    assert (check.status, check.measured) == (status, measured)


def test_mig_on_any_gpu_fails_and_names_it() -> None:
    check = _checks(*_tray(mig_enabled=True))["gpu.mig"]
    assert (check.status, check.measured) == (Status.FAIL, "enabled on GPU 3")
    assert "`nvidia-smi -i 3 -mig 0`" in (check.hint or "")


@pytest.mark.parametrize(
    ("fault", "problem"),
    [
        ({"recovery_action": "GPU Reset"}, "GPU 3 needs 'GPU Reset'"),
        ({"retired_pages_pending": True}, "GPU 3 has pages pending retirement"),
        ({"remapped_rows_pending": True}, "GPU 3 has a row remap pending a reset"),
        ({"remapped_rows_failure": True}, "GPU 3 failed a row remap"),
        ({"uncorrectable_ecc_volatile": 1}, "GPU 3 has 1 uncorrectable ECC error(s) since boot"),
    ],
)
def test_each_health_fault_of_any_gpu_fails(fault: dict, problem: str) -> None:
    check = _checks(*_tray(**fault))["gpu.health"]
    assert (check.status, check.measured) == (Status.FAIL, problem)


def test_no_recovery_action_reported_is_healthy() -> None:
    assert _checks(*_tray(recovery_action=None, uncorrectable_ecc_volatile=0))["gpu.health"].status is Status.PASS


def test_persistence_off_warns_and_unknown_does_not() -> None:
    off = _checks(*_tray(persistence_mode=False))["gpu.persistence"]
    assert (off.status, off.measured) == (Status.WARN, "off on GPU 3")
    assert _checks(*_tray(persistence_mode=None))["gpu.persistence"].status is Status.PASS


@pytest.mark.parametrize(
    ("fault", "detail"),
    [
        ({"fabric_state": "In Progress"}, "NVLink fabric registration not finished on GPU 3"),
        ({"fabric_status": "Failure"}, "NVLink fabric registration not finished on GPU 3"),
        ({"fabric_state": None, "fabric_status": None}, "the GPU reports no NVLink fabric"),
    ],
)
def test_fabric_state_of_any_gpu(fault: dict, detail: str) -> None:
    check = _checks(*_tray(**fault))["fabric.state"]
    assert check.status is Status.FAIL and check.detail.startswith(detail)


def test_the_tray_must_sit_in_exactly_one_nvlink_partition() -> None:
    split = _checks(*_tray(fabric_clique_id=8))["fabric.clique"]
    assert (split.status, split.measured) == (Status.FAIL, "c-1.7, c-1.8")
    assert split.detail.startswith("this node's GPUs sit in 2 NVLink partitions")
    none = _checks(*[_gpu(i, fabric_cluster_uuid=None, fabric_clique_id=None) for i in range(4)])["fabric.clique"]
    assert (none.status, none.measured) == (Status.FAIL, "none")


def test_a_profile_without_an_nvlink_domain_skips_the_fabric() -> None:
    profile = load_profile("kimi-k3-gb300-tp16", ["hardware.nvlink_domain=false"])
    facts = GpuNodeFacts(source="nvml", driver_version="580", cuda_driver_version="13.0", gpus=_tray(fabric_state=None))
    assert not {"fabric.state", "fabric.clique"} & {r.name for r in gpu_checks(profile, facts)}


def test_no_gpus_fail_the_count_and_no_hardware_skips() -> None:
    [only] = gpu_checks(GB300, GpuNodeFacts(source="nvml", driver_version="580", cuda_driver_version="13.0", gpus=[]))
    assert (only.name, only.status, only.target) == ("gpu.count", Status.FAIL, ">= 4")
    [skip] = gpu_checks(LOCAL, GpuNodeFacts(source="nvml", driver_version="1", cuda_driver_version="1", gpus=[]))
    assert (skip.name, skip.status) == ("gpu", Status.SKIP)


def _host(**changes: object) -> HostFacts:
    base: dict[str, object] = dict(
        arch="arm64",
        shm_bytes=64 * GIB,
        cache_path="/models",
        cache_probe_path="/models",
        cache_free_bytes=3500 * GIB,
        imex_service="inactive",
    )
    base.update(changes)
    return HostFacts(**base)


@pytest.mark.parametrize(("shm", "status"), [(64 * GIB - 1, Status.WARN), (64 * GIB, Status.PASS)])
def test_dev_shm_passes_at_the_profiles_size(shm: int, status: Status) -> None:
    assert {r.name: r for r in host_checks(GB300, _host(shm_bytes=shm))}["host.shm"].status is status


@pytest.mark.parametrize("draft", [0, 5 * 2**20])
def test_the_local_targets_disk_must_hold_weights_and_draft_exactly(draft: int) -> None:
    local = load_profile("local-cpu", [f"speculative.draft_bytes={draft}"])
    assert local.speculative is not None
    need = local.model.checkpoint_bytes + draft
    arch = local.vllm.image_arch
    at = {r.name: r for r in host_checks(local, _host(arch=arch, cache_free_bytes=need))}["host.cache_disk"]
    below = {r.name: r for r in host_checks(local, _host(arch=arch, cache_free_bytes=need - 1))}["host.cache_disk"]
    assert (at.status, below.status) == (Status.PASS, Status.FAIL)
    unknown = {r.name: r for r in host_checks(LOCAL, _host(arch=arch, cache_free_bytes=None))}["host.cache_disk"]
    assert unknown.status is Status.WARN
    assert "host.shm" not in {r.name for r in host_checks(LOCAL, _host(arch=arch))}
    assert "host.imex" not in {r.name for r in host_checks(LOCAL, _host(arch=arch))}


def test_no_dev_shm_warns_and_imex_is_checked_only_with_a_compute_domain() -> None:
    assert {r.name: r for r in host_checks(GB300, _host(shm_bytes=None))}["host.shm"].status is Status.WARN
    no_domain = load_profile("kimi-k3-gb300-tp16", ["kubernetes.compute_domain=false"])
    assert "host.imex" not in {r.name for r in host_checks(no_domain, _host(imex_service="active"))}


def test_the_first_wrong_gpu_is_quoted() -> None:
    gpus = [_gpu(0), _gpu(1, name="A", compute_capability="9.0", mig_enabled=True)]
    gpus += [_gpu(2, name="B", compute_capability="8.0", mig_enabled=True), _gpu(3)]
    checks = _checks(*gpus)
    assert checks["gpu.product"].detail == "GPU 1, 2 is 'A', not a NVIDIA GB300"
    assert checks["gpu.compute_capability"].detail.startswith("GPU 1, 2 has compute capability 9.0;")
    assert "`nvidia-smi -i 1 -mig 0`" in (checks["gpu.mig"].hint or "")


def test_no_gpus_measure_zero() -> None:
    [only] = gpu_checks(GB300, GpuNodeFacts(source="nvml", driver_version="580", cuda_driver_version="13.0", gpus=[]))
    assert only.measured == 0


@pytest.mark.parametrize(("size", "shown"), [(GIB, "1.0 GiB"), (2 * GIB, "2.0 GiB"), (GIB - 2**20, "1,023.0 MiB")])
def test_sizes_are_shown_in_gib_from_one_gib_up(size: int, shown: str) -> None:
    shm = {r.name: r for r in host_checks(GB300, _host(shm_bytes=size))}["host.shm"]
    assert shm.measured == shown


def test_without_a_draft_the_disk_must_hold_the_weights_exactly() -> None:
    local = load_profile("local-cpu", ["speculative=null"])
    need, arch = local.model.checkpoint_bytes, local.vllm.image_arch
    at = {r.name: r for r in host_checks(local, _host(arch=arch, cache_free_bytes=need))}["host.cache_disk"]
    below = {r.name: r for r in host_checks(local, _host(arch=arch, cache_free_bytes=need - 1))}["host.cache_disk"]
    assert (at.status, below.status) == (Status.PASS, Status.FAIL)
