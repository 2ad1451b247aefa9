"""Probe this node: GPUs through NVML (nvidia-ml-py), falling back to `nvidia-smi -q -x`; host facts from the OS.

Both GPU paths produce the same `GpuNodeFacts`. `pynvml` is imported lazily, inside `nvml_facts`, so a
machine without the NVIDIA library still runs every other command.
"""

from __future__ import annotations

import ctypes
import os
import platform
import shutil
import subprocess
from pathlib import Path
from typing import Any

from k3deploy.errors import EnvironmentProblem, NvmlUnavailable
from k3deploy.preflight.facts import (
    FABRIC_STATES,
    MIB,
    NVML_RETURNS,
    RECOVERY_ACTIONS,
    GpuFacts,
    GpuNodeFacts,
    HostFacts,
    cuda_version_from_int,
    fabric_health_problems,
    format_fabric_uuid,
    normalize_arch,
    parse_compute_caps,
    parse_nvidia_smi_xml,
)

_SMI_TIMEOUT_S = 60


def _optional(call: Any, *args: Any) -> Any:
    """The value of an NVML query, or None when this device does not support it."""
    import pynvml  # NVML exists only on a GPU host (nvidia-ml-py); nvidia-smi is the fallback

    try:
        return call(*args)
    except pynvml.NVMLError as exc:
        if getattr(exc, "value", None) in (pynvml.NVML_ERROR_NOT_SUPPORTED, pynvml.NVML_ERROR_FUNCTION_NOT_FOUND):
            return None
        raise


def _fabric(handle: Any) -> tuple[str | None, str | None, str | None, int | None, list[str]]:
    """(state, status, ClusterUUID, CliqueId, health problems) from nvmlDeviceGetGpuFabricInfoV; None where unsupported."""
    import pynvml  # NVML exists only on a GPU host (nvidia-ml-py); nvidia-smi is the fallback

    info = pynvml.c_nvmlGpuFabricInfoV_t()
    if _optional(pynvml.nvmlDeviceGetGpuFabricInfoV, handle, ctypes.byref(info)) is None:
        return None, None, None, None, []
    state = FABRIC_STATES.get(int(info.state), f"state {int(info.state)}")
    if state == "Not Supported":
        return None, None, None, None, []
    status = NVML_RETURNS.get(int(info.status), f"NVML return {int(info.status)}")
    cluster = format_fabric_uuid(bytes(info.clusterUuid))
    health = fabric_health_problems(int(info.healthMask))
    return state, status, cluster, int(info.cliqueId) if cluster else None, health


def _str(value: Any) -> Any:
    """NVML char arrays arrive as bytes from some bindings' fields; facts hold text."""
    return value.decode() if isinstance(value, bytes) else value


def _recovery_action(handle: Any) -> str | None:
    import pynvml  # NVML exists only on a GPU host (nvidia-ml-py); nvidia-smi is the fallback

    values = _optional(pynvml.nvmlDeviceGetFieldValues, handle, [pynvml.NVML_FI_DEV_GET_GPU_RECOVERY_ACTION])
    if not values or values[0].nvmlReturn != pynvml.NVML_SUCCESS:
        return None
    action = int(values[0].value.uiVal)
    return RECOVERY_ACTIONS.get(action, f"action {action}")


def _gpu(index: int) -> GpuFacts:
    import pynvml  # NVML exists only on a GPU host (nvidia-ml-py); nvidia-smi is the fallback

    handle = pynvml.nvmlDeviceGetHandleByIndex(index)
    cc = _optional(pynvml.nvmlDeviceGetCudaComputeCapability, handle)
    mig = _optional(pynvml.nvmlDeviceGetMigMode, handle)
    persistence = _optional(pynvml.nvmlDeviceGetPersistenceMode, handle)
    retired = _optional(pynvml.nvmlDeviceGetRetiredPagesPendingStatus, handle)
    remapped = _optional(pynvml.nvmlDeviceGetRemappedRows, handle)
    ecc = _optional(
        pynvml.nvmlDeviceGetTotalEccErrors, handle, pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, pynvml.NVML_VOLATILE_ECC
    )
    pci = _optional(pynvml.nvmlDeviceGetPciInfo, handle)
    state, status, cluster, clique, health = _fabric(handle)
    return GpuFacts(
        index=index,
        name=_str(pynvml.nvmlDeviceGetName(handle)),
        uuid=_str(_optional(pynvml.nvmlDeviceGetUUID, handle)),
        pci_bus_id=_str(pci.busId) if pci is not None else None,
        memory_mib=int(pynvml.nvmlDeviceGetMemoryInfo(handle).total) // MIB,
        compute_capability=f"{cc[0]}.{cc[1]}" if cc else None,
        mig_enabled=None if mig is None else mig[0] == pynvml.NVML_DEVICE_MIG_ENABLE,
        persistence_mode=None if persistence is None else persistence == pynvml.NVML_FEATURE_ENABLED,
        recovery_action=_recovery_action(handle),
        retired_pages_pending=None if retired is None else retired == pynvml.NVML_FEATURE_ENABLED,
        remapped_rows_pending=None if remapped is None else bool(remapped[2]),
        remapped_rows_failure=None if remapped is None else bool(remapped[3]),
        uncorrectable_ecc_volatile=ecc,
        fabric_state=state,
        fabric_status=status,
        fabric_cluster_uuid=cluster,
        fabric_clique_id=clique,
        fabric_health=health,
    )


def nvml_facts() -> GpuNodeFacts:
    """GPU facts through NVML; NvmlUnavailable when the module or the library cannot be loaded."""
    try:
        import pynvml  # NVML exists only on a GPU host (nvidia-ml-py); nvidia-smi is the fallback
    except ImportError as exc:
        raise NvmlUnavailable(f"nvidia-ml-py is not installed ({exc})") from None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        raise NvmlUnavailable(str(exc)) from None
    try:
        return GpuNodeFacts(
            source="nvml",
            driver_version=_str(pynvml.nvmlSystemGetDriverVersion()),
            cuda_driver_version=cuda_version_from_int(pynvml.nvmlSystemGetCudaDriverVersion()),
            gpus=[_gpu(i) for i in range(pynvml.nvmlDeviceGetCount())],
        )
    except pynvml.NVMLError as exc:
        raise EnvironmentProblem(
            f"NVML failed while reading the GPUs: {exc}", hint="check the driver with nvidia-smi; a GPU may be lost"
        ) from None
    finally:
        pynvml.nvmlShutdown()


def _run_smi(smi: str, *args: str) -> str:
    try:
        done = subprocess.run([smi, *args], capture_output=True, text=True, timeout=_SMI_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EnvironmentProblem(
            f"nvidia-smi {' '.join(args)} failed: {exc}", hint="check the NVIDIA driver on this node"
        ) from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise EnvironmentProblem(
            f"nvidia-smi {' '.join(args)} exited {done.returncode}: {said[0] if said else 'no output'}",
            hint="check the NVIDIA driver on this node (is the kernel module loaded?)",
        )
    return done.stdout


def smi_facts(smi: str) -> GpuNodeFacts:
    """GPU facts from `nvidia-smi -q -x` plus its compute-capability query."""
    xml_text = _run_smi(smi, "-q", "-x")
    caps = parse_compute_caps(_run_smi(smi, "--query-gpu=index,compute_cap", "--format=csv,noheader"))
    try:
        return parse_nvidia_smi_xml(xml_text, caps)
    except ValueError as exc:
        raise EnvironmentProblem(str(exc), hint="run nvidia-smi -q -x by hand; the driver may be too old") from None


def gpu_facts() -> GpuNodeFacts:
    """GPU facts through NVML, else nvidia-smi; EnvironmentProblem (exit 3) when neither is there."""
    try:
        return nvml_facts()
    except NvmlUnavailable as nvml_error:
        smi = shutil.which("nvidia-smi")
        if smi is None:
            raise EnvironmentProblem(
                f"cannot look at the GPUs: NVML and nvidia-smi were not found (NVML: {nvml_error}; nvidia-smi: not on PATH)",
                hint="run `k3deploy preflight --node` on a GPU node (or in a pod with the NVIDIA runtime); "
                "use --cluster from a workstation",
            ) from None
        return smi_facts(smi)


def _existing_parent(path: Path) -> Path | None:
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return None


def _systemctl(*args: str) -> str | None:
    systemctl = shutil.which("systemctl")
    if systemctl is None:
        return None
    try:
        done = subprocess.run([systemctl, *args], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip()


def _imex_service() -> str | None:
    """`active`/`inactive`/`absent` for the host nvidia-imex service; None when it cannot be told (no systemd)."""
    state = _systemctl("is-active", "nvidia-imex.service")
    if state == "active":
        return "active"
    if state:
        # `is-active` answers "inactive" for a missing unit too; `list-unit-files` tells them apart.
        listed = _systemctl("list-unit-files", "nvidia-imex.service", "--no-legend") or ""
        return "inactive" if "nvidia-imex" in listed else "absent"
    # Without systemd (a container) a running daemon still shows in /proc when the PID namespace is the host's;
    # not seeing one proves nothing, so that is "unknown", not "absent".
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            if comm.read_text().strip() == "nvidia-imex":
                return "active"
        except OSError:
            continue
    return None


def host_facts(cache_path: str) -> HostFacts:
    """Architecture, /dev/shm size, free disk where the model cache would live, host IMEX service state."""
    shm = Path("/dev/shm")
    shm_bytes = None
    if shm.is_dir():
        stat = os.statvfs(shm)
        shm_bytes = stat.f_blocks * stat.f_frsize
    probe = _existing_parent(Path(cache_path))
    free = shutil.disk_usage(probe).free if probe is not None else None
    return HostFacts(
        arch=normalize_arch(platform.machine()),
        shm_bytes=shm_bytes,
        cache_path=cache_path,
        cache_probe_path=str(probe) if probe is not None else None,
        cache_free_bytes=free,
        imex_service=_imex_service(),
    )
