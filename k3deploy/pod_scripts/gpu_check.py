"""The serving pods' `gpu-check` init container: the GPUs and IMEX channel this pod was given, against the profile.

Shipped as text in the profile ConfigMap and run by the vLLM image's `python3` (render/gpu_check.py), so the serving
pods need no image but vLLM's. The standard library only: NVML through ctypes on libnvidia-ml.so.1, which the
NVIDIA container runtime mounts into a container that requests GPUs. What to expect comes as JSON in
K3DEPLOY_GPU_CHECK (render/gpu_check.py `expectations`), never from string building.

The same judgements as `k3deploy preflight --node` (preflight/checks_node.py), on what a pod can see: count,
product, compute capability, memory, driver and CUDA version, MIG, memory health (row remapping, uncorrectable ECC),
the NVLink fabric, /dev/shm, and the IMEX channel
device the ComputeDomain claim injects (NCCL_MNNVL_ENABLE=1 fails at init without one).

Exit 0: no FAIL (WARNs allowed); 1: a FAIL; 3: the GPUs could not be read (no NVML). Each check is one line on
stdout, so the pod's log (and, through FallbackToLogsOnError, its termination message) says what failed.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

#: A JSON object as the script reads and writes it (the expectations, NVML and host facts).
Facts = Mapping[str, Any]
#: One GPU's or the host's facts as the readers build them.
FactsOut = dict[str, Any]

#: Exit codes, as k3deploy's own (errors.py): a check failed, or it could not look.
EXIT_OK, EXIT_FAILED, EXIT_ENVIRONMENT = 0, 1, 3
#: Where the environment names what to expect.
EXPECT_ENV = "K3DEPLOY_GPU_CHECK"
#: Where the NVIDIA DRA driver's ComputeDomain kubelet plugin puts the pod's IMEX channel (channel0, ...).
IMEX_CHANNEL_DIR = "/dev/nvidia-caps-imex-channels"
SHM_DIR = "/dev/shm"
#: nvmlGpuFabricState_t and the nvmlReturn_t values a fabric probe reports, named as `nvidia-smi -q` prints them.
FABRIC_STATES = {0: "Not Supported", 1: "Not Started", 2: "In Progress", 3: "Completed"}
NVML_RETURNS = {0: "Success", 3: "Not Supported", 6: "Not Found", 9: "Driver Not Loaded", 10: "Timeout"}
NVML_SUCCESS, NVML_ERROR_NOT_SUPPORTED = 0, 3
MIB = 1024 * 1024


class Result(NamedTuple):
    """One check: PASS, WARN or FAIL, its name and what it saw (with the fix, for a FAIL)."""

    status: str
    name: str
    detail: str


def version_tuple(value: str) -> tuple[int, ...]:
    """A dotted version as numbers (580.95.05 -> (580, 95, 5)); a part that is no number counts as 0."""
    return tuple(int(part) if part.isdigit() else 0 for part in value.split("."))


def _indexes(gpus: Sequence[Facts]) -> str:
    return ", ".join(str(g["index"]) for g in gpus)


def gpu_results(expect: Facts, facts: Facts) -> list[Result]:
    """The GPU checks: count, then (with the profile's hardware section) product, compute capability, memory,
    driver, CUDA, MIG and the NVLink fabric."""
    gpus: list[Facts] = facts["gpus"]
    need = int(expect["gpus"])
    if len(gpus) < need:
        return [
            Result(
                "FAIL",
                "gpu.count",
                f"this pod sees {len(gpus)} GPU(s), the profile runs {need} per node: check the pod's "
                "nvidia.com/gpu request and the device plugin on this node",
            )
        ]
    out = [Result("PASS", "gpu.count", f"{len(gpus)} GPU(s)")]
    hw = expect.get("hardware")
    if not hw:
        return out
    wrong = [g for g in gpus if g["name"] not in hw["products"]]
    out.append(
        Result(
            "FAIL", "gpu.product", f"GPU {_indexes(wrong)} is {wrong[0]['name']!r}, not {' or '.join(hw['products'])}"
        )
        if wrong
        else Result("PASS", "gpu.product", gpus[0]["name"])
    )
    wrong = [g for g in gpus if g["compute_capability"] not in (None, hw["compute_capability"])]
    out.append(
        Result(
            "FAIL",
            "gpu.compute_capability",
            f"GPU {_indexes(wrong)} has {wrong[0]['compute_capability']}; the image's kernels are built for "
            f"{hw['compute_capability']}",
        )
        if wrong
        else Result("PASS", "gpu.compute_capability", hw["compute_capability"])
    )
    smallest = min(int(g["memory_mib"]) for g in gpus)
    out.append(
        Result("PASS", "gpu.memory", f"{smallest} MiB")
        if smallest >= int(hw["memory_mib"])
        else Result("FAIL", "gpu.memory", f"the smallest GPU has {smallest} MiB; the plan assumes {hw['memory_mib']}")
    )
    out.append(
        Result("PASS", "driver.version", facts["driver"])
        if version_tuple(facts["driver"]) >= version_tuple(hw["min_driver"])
        else Result("FAIL", "driver.version", f"driver {facts['driver']} is older than {hw['min_driver']}")
    )
    out.append(
        Result("PASS", "driver.cuda", facts["cuda"])
        if version_tuple(facts["cuda"]) >= version_tuple(hw["min_cuda"])
        else Result(
            "FAIL", "driver.cuda", f"the driver supports CUDA {facts['cuda']}; the image needs {hw['min_cuda']}"
        )
    )
    mig = [g for g in gpus if g["mig"]]
    out.append(
        Result("FAIL", "gpu.mig", f"MIG is on for GPU {_indexes(mig)}: tensor parallelism needs whole GPUs")
        if mig
        else Result("PASS", "gpu.mig", "disabled")
    )
    out.append(health_result(gpus))
    if hw["nvlink_domain"]:
        out.append(fabric_result(gpus))
    return out


def health_result(gpus: Sequence[Facts]) -> Result:
    """No GPU with a row remap pending a reset, a failed remap or uncorrectable ECC errors since the driver loaded:
    one such GPU crashes or corrupts the whole TP group."""
    problems = []
    for g in gpus:
        if g["remap_pending"]:
            problems.append(f"GPU {g['index']} has a row remap pending a reset")
        if g["remap_failed"]:
            problems.append(f"GPU {g['index']} failed a row remap")
        if g["ecc_uncorrected"]:
            problems.append(f"GPU {g['index']} has {g['ecc_uncorrected']} uncorrectable ECC error(s) since boot")
    if problems:
        return Result("FAIL", "gpu.health", "; ".join(problems) + ": drain the node and reset the GPU (or replace it)")
    return Result("PASS", "gpu.health", "no pending remap, failed remap or uncorrectable ECC")


def fabric_result(gpus: Sequence[Facts]) -> Result:
    """Every GPU registered with the NVLink fabric (State Completed, Status Success), all in one clique."""
    bad = [g for g in gpus if (g["fabric_state"], g["fabric_status"]) != ("Completed", "Success")]
    if bad:
        first = bad[0]
        return Result(
            "FAIL",
            "fabric.state",
            f"GPU {_indexes(bad)}: State {first['fabric_state'] or 'N/A'}, Status {first['fabric_status'] or 'N/A'}: "
            "the NVLink fabric registration has not finished (check nvidia-fabricmanager / the NVLink switch trays)",
        )
    cliques = sorted({str(g["clique"]) for g in gpus})
    if len(cliques) != 1:
        return Result("FAIL", "fabric.state", f"this pod's GPUs sit in {len(cliques)} NVLink partitions: {cliques}")
    return Result("PASS", "fabric.state", f"Completed / Success, clique {cliques[0]}")


def host_results(expect: Facts, host: Facts) -> list[Result]:
    """/dev/shm against the profile's size (a WARN: NCCL fails under load, not at once) and, where the group spans
    trays over NVLink, the IMEX channel device the ComputeDomain claim injects (a FAIL: NCCL_MNNVL_ENABLE=1 stops
    NCCL's init without one)."""
    out = []
    shm, want = host["shm_bytes"], int(expect["shm_bytes"])
    if shm is None or shm < want:
        seen = "no /dev/shm" if shm is None else f"{shm / 2**30:.1f} GiB"
        out.append(Result("WARN", "host.shm", f"{seen}, below {want / 2**30:.1f} GiB: NCCL may run out under load"))
    else:
        out.append(Result("PASS", "host.shm", f"{shm / 2**30:.1f} GiB"))
    if expect["imex_channel"]:
        channels = host["imex_channels"]
        out.append(
            Result("PASS", "imex.channel", f"{IMEX_CHANNEL_DIR}/{channels[0]}")
            if channels
            else Result(
                "FAIL",
                "imex.channel",
                f"no IMEX channel device in {IMEX_CHANNEL_DIR}: with NCCL_MNNVL_ENABLE=1 NCCL fails at init "
                '("MNNVL ... is available but not working"). The pod\'s ComputeDomain claim brought no channel: check '
                "`kubectl get computedomain` status and the DRA driver's kubelet plugin on this node",
            )
        )
    return out


def exit_code(results: Sequence[Result]) -> int:
    """EXIT_FAILED when any check failed, else EXIT_OK."""
    return EXIT_FAILED if any(r.status == "FAIL" for r in results) else EXIT_OK


def report(results: Sequence[Result]) -> str:
    """One line per check, then the verdict."""
    lines = [f"{r.status:<4} {r.name}: {r.detail}" for r in results]
    failed = [r.name for r in results if r.status == "FAIL"]
    lines.append(f"gpu-check: FAIL ({', '.join(failed)})" if failed else "gpu-check: ok")
    return "\n".join(lines)


# -- I/O: NVML through ctypes, the pod's /dev --------------------------------------------------------------------


class NvmlError(Exception):
    """An NVML call returned an error (or the library could not be loaded)."""


class _Memory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


class _FabricInfoV2(ctypes.Structure):
    # nvml.h nvmlGpuFabricInfo_v2_t (nvmlGpuFabricState_t is an unsigned char).
    _fields_ = [
        ("version", ctypes.c_uint),
        ("clusterUuid", ctypes.c_ubyte * 16),
        ("status", ctypes.c_uint),
        ("cliqueId", ctypes.c_uint),
        ("state", ctypes.c_ubyte),
        ("healthMask", ctypes.c_uint),
    ]


#: nvmlGpuFabricInfo_v2: the struct's size with the version in the top byte (NVML_STRUCT_VERSION).
FABRIC_INFO_V2 = ctypes.sizeof(_FabricInfoV2) | (2 << 24)


def _call(lib: ctypes.CDLL, name: str, *args: Any) -> int:
    code = int(getattr(lib, name)(*args))
    if code not in (NVML_SUCCESS, NVML_ERROR_NOT_SUPPORTED):
        raise NvmlError(f"{name} returned NVML error {code}")
    return code


def _fabric(lib: ctypes.CDLL, handle: ctypes.c_void_p) -> tuple[str | None, str | None, str | None]:
    info = _FabricInfoV2(version=FABRIC_INFO_V2)
    try:
        code = _call(lib, "nvmlDeviceGetGpuFabricInfoV", handle, ctypes.pointer(info))
    except AttributeError:  # a driver older than the fabric API
        return None, None, None
    state = FABRIC_STATES.get(info.state, f"state {info.state}")
    if code != NVML_SUCCESS or state == "Not Supported":
        return None, None, None
    uuid = bytes(info.clusterUuid).hex()
    cluster = f"{uuid[:8]}-{uuid[8:12]}-{uuid[12:16]}-{uuid[16:20]}-{uuid[20:]}"
    return state, NVML_RETURNS.get(info.status, f"NVML return {info.status}"), f"{cluster}.{info.cliqueId}"


def _gpu(lib: ctypes.CDLL, index: int) -> FactsOut:
    handle = ctypes.c_void_p()
    _call(lib, "nvmlDeviceGetHandleByIndex_v2", index, ctypes.pointer(handle))
    name = ctypes.create_string_buffer(96)
    _call(lib, "nvmlDeviceGetName", handle, name, 96)
    memory = _Memory()
    _call(lib, "nvmlDeviceGetMemoryInfo", handle, ctypes.pointer(memory))
    major, minor = ctypes.c_int(), ctypes.c_int()
    cc = _call(lib, "nvmlDeviceGetCudaComputeCapability", handle, ctypes.pointer(major), ctypes.pointer(minor))
    current, pending = ctypes.c_uint(), ctypes.c_uint()
    mig = _call(lib, "nvmlDeviceGetMigMode", handle, ctypes.pointer(current), ctypes.pointer(pending))
    rows = [ctypes.c_uint() for _ in range(4)]  # correctable, uncorrectable, pending, failure
    remap = _call(lib, "nvmlDeviceGetRemappedRows", handle, *(ctypes.pointer(r) for r in rows))
    ecc_count = ctypes.c_ulonglong()
    # NVML_MEMORY_ERROR_TYPE_UNCORRECTED (1), NVML_VOLATILE_ECC (0): since the driver loaded.
    ecc = _call(lib, "nvmlDeviceGetTotalEccErrors", handle, 1, 0, ctypes.pointer(ecc_count))
    state, status, clique = _fabric(lib, handle)
    return {
        "index": index,
        "name": name.value.decode(),
        "memory_mib": memory.total // MIB,
        "compute_capability": f"{major.value}.{minor.value}" if cc == NVML_SUCCESS else None,
        "mig": mig == NVML_SUCCESS and current.value == 1,
        "remap_pending": remap == NVML_SUCCESS and rows[2].value != 0,
        "remap_failed": remap == NVML_SUCCESS and rows[3].value != 0,
        "ecc_uncorrected": ecc_count.value if ecc == NVML_SUCCESS else 0,
        "fabric_state": state,
        "fabric_status": status,
        "clique": clique,
    }


def read_nvml(lib: ctypes.CDLL) -> FactsOut:
    """Driver, CUDA version and every GPU NVML lists, from a loaded libnvidia-ml."""
    _call(lib, "nvmlInit_v2")
    try:
        driver = ctypes.create_string_buffer(80)
        _call(lib, "nvmlSystemGetDriverVersion", driver, 80)
        cuda, count = ctypes.c_int(), ctypes.c_uint()
        _call(lib, "nvmlSystemGetCudaDriverVersion", ctypes.pointer(cuda))
        _call(lib, "nvmlDeviceGetCount_v2", ctypes.pointer(count))
        return {
            "driver": driver.value.decode(),
            "cuda": f"{cuda.value // 1000}.{(cuda.value % 1000) // 10}",
            "gpus": [_gpu(lib, i) for i in range(count.value)],
        }
    finally:
        lib.nvmlShutdown()


def load_nvml() -> ctypes.CDLL:
    """libnvidia-ml.so.1, as the NVIDIA container runtime mounts it."""
    try:
        return ctypes.CDLL("libnvidia-ml.so.1")
    except OSError as exc:
        raise NvmlError(f"cannot load libnvidia-ml.so.1 ({exc})") from None


def read_host() -> FactsOut:
    """/dev/shm's size and the IMEX channel devices in this container."""
    shm = None
    if os.path.isdir(SHM_DIR):
        stat = os.statvfs(SHM_DIR)
        shm = stat.f_blocks * stat.f_frsize
    channels = sorted(os.listdir(IMEX_CHANNEL_DIR)) if os.path.isdir(IMEX_CHANNEL_DIR) else []
    return {"shm_bytes": shm, "imex_channels": [c for c in channels if c.startswith("channel")]}


def main(
    environ: Mapping[str, str],
    gpus: Callable[[], FactsOut],
    host: Callable[[], FactsOut],
    say: Callable[[str], None],
) -> int:
    """Read what this pod sees, judge it against K3DEPLOY_GPU_CHECK, say so line by line; the exit code."""
    try:
        expect = json.loads(environ[EXPECT_ENV])
    except (KeyError, ValueError) as exc:
        say(f"gpu-check: cannot read {EXPECT_ENV} ({exc}); the pod spec is not k3deploy's render")
        return EXIT_ENVIRONMENT
    try:
        facts = gpus()
    except NvmlError as exc:
        say(f"gpu-check: cannot read the GPUs through NVML: {exc}")
        say("hint: the pod must request nvidia.com/gpu under the NVIDIA runtime (kubernetes.runtime_class)")
        return EXIT_ENVIRONMENT
    results = gpu_results(expect, facts) + host_results(expect, host())
    say(report(results))
    return exit_code(results)


if __name__ == "__main__":
    sys.exit(main(os.environ, lambda: read_nvml(load_nvml()), read_host, print))
