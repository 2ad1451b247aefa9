"""Checks of one GPU node's facts (NVML / nvidia-smi) and of the host it runs on. Pure: no I/O."""

from __future__ import annotations

from k3deploy.preflight.facts import GpuFacts, GpuNodeFacts, HostFacts, version_tuple
from k3deploy.profile.model import HardwareSpec, Profile
from k3deploy.profile.names import quantity_bytes
from k3deploy.profile.plan import GIB
from k3deploy.report.model import CheckResult, Status, judged


def _size(value: int) -> str:
    return f"{value / GIB:,.1f} GiB" if value >= GIB else f"{value / 2**20:,.1f} MiB"


def _gpu_list(gpus: list[GpuFacts]) -> str:
    return ", ".join(str(g.index) for g in gpus)


def _count(hw: HardwareSpec, need: int, facts: GpuNodeFacts) -> CheckResult:
    found = len(facts.gpus)
    if found >= need:
        return judged("gpu.count", True, found, f">= {need}", f"{found} GPU(s) via {facts.source}")
    return judged(
        "gpu.count",
        False,
        found,
        f">= {need}",
        f"this node shows {found} GPU(s); the profile runs {need} per node",
        "check `nvidia-smi -L` and the GPUs visible to this pod (NVIDIA_VISIBLE_DEVICES), or set parallel.gpus_per_node",
    )


def _product(hw: HardwareSpec, facts: GpuNodeFacts) -> CheckResult:
    allowed = [hw.gpu_product, *hw.allowed_products]
    wrong = [g for g in facts.gpus if g.name not in allowed]
    names = sorted({g.name for g in facts.gpus})
    if not wrong and len(names) > 1:
        return judged(
            "gpu.product",
            False,
            ", ".join(names),
            "one product",
            f"this node mixes {' and '.join(names)}: a TP group runs at its slowest GPU, and the plan assumes one kind",
            "run the group on trays of one product (label or taint the mixed node out of the node selector)",
        )
    if not wrong:
        return judged("gpu.product", True, ", ".join(names), " or ".join(allowed))
    return judged(
        "gpu.product",
        False,
        ", ".join(names),
        " or ".join(allowed),
        f"GPU {_gpu_list(wrong)} is {wrong[0].name!r}, not a {hw.gpu_product}",
        "run on the GPUs the profile is sized for; to accept another product (e.g. 'NVIDIA B300 SXM6 AC') add it to "
        "hardware.allowed_products and re-check hardware.gpu_memory_mib",
    )


def _compute_capability(hw: HardwareSpec, facts: GpuNodeFacts) -> CheckResult:
    unknown = [g for g in facts.gpus if g.compute_capability is None]
    wrong = [g for g in facts.gpus if g.compute_capability not in (None, hw.compute_capability)]
    found = ", ".join(sorted({g.compute_capability or "unknown" for g in facts.gpus}))
    if wrong:
        return judged(
            "gpu.compute_capability",
            False,
            found,
            hw.compute_capability,
            f"GPU {_gpu_list(wrong)} has compute capability {wrong[0].compute_capability}; the image's kernels are built "
            f"for {hw.compute_capability}",
            f"use {hw.gpu_product} GPUs (sm_{hw.compute_capability.replace('.', '')}), or a profile and image built for this GPU",
        )
    if unknown:
        return CheckResult(
            name="gpu.compute_capability",
            status=Status.WARN,
            measured=found,
            target=hw.compute_capability,
            detail=f"GPU {_gpu_list(unknown)} did not report a compute capability",
            hint="update the driver; `nvidia-smi --query-gpu=compute_cap --format=csv` needs r510+",
        )
    return judged("gpu.compute_capability", True, found, hw.compute_capability)


def _memory(hw: HardwareSpec, facts: GpuNodeFacts) -> CheckResult:
    smallest = min(g.memory_mib for g in facts.gpus)
    if smallest >= hw.gpu_memory_mib:
        return judged("gpu.memory", True, f"{smallest} MiB", f">= {hw.gpu_memory_mib} MiB")
    return judged(
        "gpu.memory",
        False,
        f"{smallest} MiB",
        f">= {hw.gpu_memory_mib} MiB",
        f"the smallest GPU has {smallest} MiB; the capacity plan assumes {hw.gpu_memory_mib} MiB",
        "run on the GPUs the profile is sized for, or set hardware.gpu_memory_mib and re-run `k3deploy plan`",
    )


def _branch(version: str) -> str:
    """The driver branch of a version (580.95.05 -> 580): what "R580" names."""
    return version.split(".", 1)[0]


def _driver(hw: HardwareSpec, facts: GpuNodeFacts) -> list[CheckResult]:
    results = []
    if version_tuple(facts.driver_version) >= version_tuple(hw.min_driver_version):
        results.append(judged("driver.version", True, facts.driver_version, f">= {hw.min_driver_version}"))
    else:
        results.append(
            judged(
                "driver.version",
                False,
                facts.driver_version,
                f">= {hw.min_driver_version}",
                f"driver {facts.driver_version} is older than {hw.min_driver_version}",
                f"install an R{_branch(hw.min_driver_version)}+ data-center driver, {hw.min_driver_version} or later "
                f"(the CUDA {hw.min_cuda_version} image needs it)",
            )
        )
    if version_tuple(facts.cuda_driver_version) >= version_tuple(hw.min_cuda_version):
        results.append(judged("driver.cuda", True, facts.cuda_driver_version, f">= {hw.min_cuda_version}"))
    else:
        results.append(
            judged(
                "driver.cuda",
                False,
                facts.cuda_driver_version,
                f">= {hw.min_cuda_version}",
                f"the driver supports CUDA {facts.cuda_driver_version}; the image is built for CUDA {hw.min_cuda_version}",
                f"upgrade the driver to one that supports CUDA {hw.min_cuda_version} (R{_branch(hw.min_driver_version)}+)",
            )
        )
    return results


def _mig(facts: GpuNodeFacts) -> CheckResult:
    on = [g for g in facts.gpus if g.mig_enabled]
    if not on:
        return judged("gpu.mig", True, "disabled", "disabled")
    return judged(
        "gpu.mig",
        False,
        f"enabled on GPU {_gpu_list(on)}",
        "disabled",
        "MIG splits each GPU; tensor parallelism needs whole GPUs",
        f"disable MIG: `nvidia-smi -i {on[0].index} -mig 0` (then reset the GPU), or relabel the node for "
        "the GPU Operator's MIG manager (nvidia.com/mig.config=all-disabled)",
    )


def _health_problems(gpu: GpuFacts) -> list[str]:
    problems = []
    if gpu.recovery_action not in (None, "None"):
        problems.append(f"GPU {gpu.index} needs '{gpu.recovery_action}'")
    if gpu.retired_pages_pending:
        problems.append(f"GPU {gpu.index} has pages pending retirement")
    if gpu.remapped_rows_pending:
        problems.append(f"GPU {gpu.index} has a row remap pending a reset")
    if gpu.remapped_rows_failure:
        problems.append(f"GPU {gpu.index} failed a row remap")
    if gpu.uncorrectable_ecc_volatile:
        problems.append(f"GPU {gpu.index} has {gpu.uncorrectable_ecc_volatile} uncorrectable ECC error(s) since boot")
    return problems


def _health(facts: GpuNodeFacts) -> CheckResult:
    problems = [p for g in facts.gpus for p in _health_problems(g)]
    if not problems:
        return judged("gpu.health", True, "no pending reset, retirement or uncorrectable ECC", "healthy")
    return judged(
        "gpu.health",
        False,
        "; ".join(problems),
        "healthy",
        "a GPU with pending recovery can crash or corrupt a TP16 group",
        "drain the node and reset the GPU (`nvidia-smi -r -i N`) or reboot; a failed row remap needs a GPU replacement",
    )


def _persistence(facts: GpuNodeFacts) -> CheckResult:
    off = [g for g in facts.gpus if g.persistence_mode is False]
    if not off:
        return judged("gpu.persistence", True, "on", "on")
    return CheckResult(
        name="gpu.persistence",
        status=Status.WARN,
        measured=f"off on GPU {_gpu_list(off)}",
        target="on",
        detail="without persistence mode every CUDA start re-initialises the GPU",
        hint="enable nvidia-persistenced (or `nvidia-smi -pm 1`)",
    )


def _fabric(facts: GpuNodeFacts) -> list[CheckResult]:
    bad = [g for g in facts.gpus if g.fabric_state != "Completed" or g.fabric_status != "Success"]
    if bad:
        first = bad[0]
        found = f"GPU {first.index}: State {first.fabric_state or 'N/A'}, Status {first.fabric_status or 'N/A'}"
        if first.fabric_state is None:
            detail, hint = (
                "the GPU reports no NVLink fabric: it is not in a multi-node NVLink domain",
                "run on GB300 NVL72 trays, or set hardware.nvlink_domain=false for a single-node profile",
            )
        else:
            detail, hint = (
                f"NVLink fabric registration not finished on GPU {_gpu_list(bad)}",
                "wait for the fabric manager / NVLink switch tray to finish (`nvidia-smi -q | grep -A6 Fabric`); "
                "if it stays there, check the NMX partition and restart nvidia-fabricmanager",
            )
        state = judged("fabric.state", False, found, "State Completed, Status Success", detail, hint)
    else:
        state = judged("fabric.state", True, "Completed / Success", "Completed / Success")
    unhealthy = [g for g in facts.gpus if g.fabric_health]
    if unhealthy:
        found = "; ".join(f"GPU {g.index}: {', '.join(g.fabric_health)}" for g in unhealthy)
        health = judged(
            "fabric.health",
            False,
            found,
            "healthy",
            "a registered but degraded NVLink fabric (lost links, unhealthy routes) slows or hangs a TP16 group's "
            "all-reduce across trays",
            "drain the node and check the NVLink switch trays (`nvidia-smi -q | grep -A12 Fabric`, NMX); reset the GPU "
            "once the fabric manager reports it healthy",
        )
    else:
        health = judged("fabric.health", True, "healthy", "healthy")
    cliques = sorted({g.clique for g in facts.gpus if g.clique is not None})
    if len(cliques) == 1:
        clique = judged("fabric.clique", True, cliques[0], "one ClusterUUID.CliqueId")
    elif not cliques:
        clique = judged(
            "fabric.clique",
            False,
            "none",
            "one ClusterUUID.CliqueId",
            "no GPU reports a ClusterUUID",
            "the NVLink fabric has not assigned this tray to a partition; check the fabric manager",
        )
    else:
        clique = judged(
            "fabric.clique",
            False,
            ", ".join(cliques),
            "one ClusterUUID.CliqueId",
            f"this node's GPUs sit in {len(cliques)} NVLink partitions; NCCL cannot use MNNVL across them",
            "ask the NVLink domain admin to put the whole tray in one partition (NMX), then reset the fabric state",
        )
    return [state, health, clique]


def gpu_checks(profile: Profile, facts: GpuNodeFacts) -> list[CheckResult]:
    """GPU count, product, compute capability, memory, driver, MIG, health, persistence and NVLink fabric."""
    hw = profile.hardware
    if hw is None:
        return [
            CheckResult(
                name="gpu",
                status=Status.SKIP,
                measured=f"{len(facts.gpus)} GPU(s) via {facts.source}",
                detail="the profile has no hardware section: nothing to compare the GPUs with",
            )
        ]
    if not facts.gpus:
        return [
            judged(
                "gpu.count",
                False,
                0,
                f">= {profile.parallel.gpus_per_node}",
                f"{facts.source} reports no GPUs",
                "check the driver (`nvidia-smi`) and that this pod was given GPUs",
            )
        ]
    results = [
        _count(hw, profile.parallel.gpus_per_node, facts),
        _product(hw, facts),
        _compute_capability(hw, facts),
        _memory(hw, facts),
        *_driver(hw, facts),
        _mig(facts),
        _health(facts),
        _persistence(facts),
    ]
    if hw.nvlink_domain:
        results += _fabric(facts)
    return results


def unseen_gpu_checks(reason: str) -> list[CheckResult]:
    """A pod that was shown no GPU (`--gpus-optional`, the node-preflight Job): a WARN saying so and the GPU checks
    skipped, not a failure. Hardened runtimes ignore NVIDIA_VISIBLE_DEVICES for pods that request no GPU, so such a
    Job would fail every sync on healthy trays; the serving pods' own gpu-check still sees the GPUs they are given."""
    return [
        CheckResult(
            name="gpu.visible",
            status=Status.WARN,
            measured="no GPU",
            target="the node's GPUs",
            detail=f"this pod sees no GPU ({reason}): the runtime shows GPUs only to pods that request them",
            hint="nothing to fix for the serving pods (their gpu-check init container checks the GPUs they get); to run "
            "these checks here, allow NVIDIA_VISIBLE_DEVICES for unprivileged pods in the NVIDIA container runtime",
        ),
        CheckResult(name="gpu", status=Status.SKIP, detail="no GPU visible to this pod: GPU and fabric checks skipped"),
    ]


def host_checks(profile: Profile, host: HostFacts) -> list[CheckResult]:
    """CPU architecture vs the image, /dev/shm, free disk for the weights (local target), host nvidia-imex vs ComputeDomain."""
    results = []
    image_arch = profile.vllm.image_arch
    if host.arch == image_arch:
        results.append(judged("host.arch", True, host.arch, image_arch))
    else:
        results.append(
            judged(
                "host.arch",
                False,
                host.arch,
                image_arch,
                f"the image {profile.vllm.image} is built for {image_arch}",
                f"use an image built for {host.arch} (vLLM's arm64 tags carry a suffix such as -aarch64-cu130) "
                f"and set vllm.image_arch={host.arch}",
            )
        )
    want_shm = quantity_bytes(profile.kubernetes.shm_size)
    if not profile.on_kubernetes:
        pass  # the local target runs one vLLM process; the pods' /dev/shm size is a Kubernetes setting
    elif host.shm_bytes is None:
        results.append(
            CheckResult(
                name="host.shm",
                status=Status.WARN,
                measured="no /dev/shm",
                target=f">= {profile.kubernetes.shm_size}",
                detail="NCCL and vLLM's workers exchange data through /dev/shm",
                hint="mount a tmpfs at /dev/shm",
            )
        )
    elif host.shm_bytes >= want_shm:
        results.append(judged("host.shm", True, _size(host.shm_bytes), f">= {profile.kubernetes.shm_size}"))
    else:
        results.append(
            CheckResult(
                name="host.shm",
                status=Status.WARN,
                measured=_size(host.shm_bytes),
                target=f">= {profile.kubernetes.shm_size}",
                detail="a small /dev/shm makes NCCL fail with 'No space left on device' under load",
                hint="mount an emptyDir with medium: Memory at /dev/shm (the rendered pods do), or enlarge the host tmpfs",
            )
        )
    need = profile.model.checkpoint_bytes + (profile.speculative.draft_bytes if profile.speculative else 0)
    target = f">= {_size(need)} free (weights + draft)"
    if profile.on_kubernetes:
        # The pods read the weights from the RWX model-cache PVC, never from this node's disk.
        results.append(
            CheckResult(
                name="host.cache_disk",
                status=Status.SKIP,
                target=target,
                detail="the weights live on the model-cache PVC, not on this node; "
                "`preflight --cluster` checks its size and access mode",
            )
        )
    elif host.cache_free_bytes is None:
        results.append(
            CheckResult(
                name="host.cache_disk",
                status=Status.WARN,
                measured="unknown",
                target=target,
                detail=f"no existing directory on the way to {host.cache_path}",
            )
        )
    elif host.cache_free_bytes >= need:
        results.append(
            judged("host.cache_disk", True, f"{_size(host.cache_free_bytes)} at {host.cache_probe_path}", target)
        )
    else:
        results.append(
            judged(
                "host.cache_disk",
                False,
                f"{_size(host.cache_free_bytes)} at {host.cache_probe_path}",
                target,
                f"the weights for {profile.model.id} do not fit under {host.cache_path}",
                "free space there, or point kubernetes.model_cache_path at a larger local NVMe volume",
            )
        )
    if profile.on_kubernetes and profile.kubernetes.compute_domain:
        if host.imex_service == "active":
            results.append(
                CheckResult(
                    name="host.imex",
                    status=Status.WARN,
                    measured="nvidia-imex.service active",
                    target="inactive (ComputeDomain runs IMEX)",
                    detail="a host IMEX daemon holds the IMEX channels the ComputeDomain's daemons need (NV_ERR_IN_USE)",
                    hint="systemctl disable --now nvidia-imex.service on every GB300 node, "
                    "or set kubernetes.compute_domain=false to use the host IMEX",
                )
            )
        elif host.imex_service is None:
            results.append(
                CheckResult(
                    name="host.imex",
                    status=Status.SKIP,
                    target="inactive (ComputeDomain runs IMEX)",
                    detail="cannot tell without systemd: run `systemctl is-active nvidia-imex` on the host",
                )
            )
        else:
            results.append(judged("host.imex", True, host.imex_service, "inactive (ComputeDomain runs IMEX)"))
    return results
