"""A stand-in `pynvml` module (nvidia-ml-py's surface, only what preflight calls) over described GPUs.

It replaces the real module at its import boundary (`sys.modules["pynvml"]`), so the probe under test is
the production code path. Names and constant values match nvidia-ml-py; `test_fake_matches_real_pynvml`
keeps them honest. The fabric struct is a real ctypes Structure with nvmlGpuFabricInfo_v2's layout, filled
through the `ctypes.byref` pointer the caller passes, as the C library does.
"""

from __future__ import annotations

import ctypes
import dataclasses
import sys
import types
import uuid as uuidlib
from dataclasses import dataclass, field
from typing import ClassVar

MIB = 1024 * 1024

NVML_SUCCESS = 0
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_FEATURE_DISABLED = 0
NVML_FEATURE_ENABLED = 1
NVML_DEVICE_MIG_DISABLE = 0
NVML_DEVICE_MIG_ENABLE = 1
NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
NVML_VOLATILE_ECC = 0
NVML_FI_DEV_GET_GPU_RECOVERY_ACTION = 230
NVML_GPU_FABRIC_UUID_LEN = 16
NVML_GPU_FABRIC_STATE_NOT_SUPPORTED = 0
NVML_GPU_FABRIC_STATE_NOT_STARTED = 1
NVML_GPU_FABRIC_STATE_IN_PROGRESS = 2
NVML_GPU_FABRIC_STATE_COMPLETED = 3
nvmlGpuFabricInfo_v2 = 0x02000024

#: The names the fake exports, checked against the real nvidia-ml-py.
CONSTANTS = {name: value for name, value in dict(globals()).items() if name.startswith(("NVML_", "nvml"))}
FUNCTIONS = (
    "nvmlInit",
    "nvmlShutdown",
    "nvmlSystemGetDriverVersion",
    "nvmlSystemGetCudaDriverVersion",
    "nvmlDeviceGetCount",
    "nvmlDeviceGetHandleByIndex",
    "nvmlDeviceGetName",
    "nvmlDeviceGetUUID",
    "nvmlDeviceGetPciInfo",
    "nvmlDeviceGetMemoryInfo",
    "nvmlDeviceGetCudaComputeCapability",
    "nvmlDeviceGetMigMode",
    "nvmlDeviceGetPersistenceMode",
    "nvmlDeviceGetRetiredPagesPendingStatus",
    "nvmlDeviceGetRemappedRows",
    "nvmlDeviceGetTotalEccErrors",
    "nvmlDeviceGetFieldValues",
    "nvmlDeviceGetGpuFabricInfoV",
)

GB300_CLUSTER = "4a2c8e61-93d7-4b5e-a0f2-6c1d9e8b7a35"
GB300_BUSES = ["00000008:01:00.0", "00000009:01:00.0", "00000018:01:00.0", "00000019:01:00.0"]
GB300_UUIDS = [
    "GPU-8f3c2a10-5d4e-4b7a-9c21-0e6f1a2b3c40",
    "GPU-2b7e9d41-8a06-4c13-b5f2-7d8e9f0a1b52",
    "GPU-c4d5e6f7-1a2b-4c3d-8e9f-a0b1c2d3e461",
    "GPU-5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a873",
]
H100_BUSES = [
    "00000000:18:00.0",
    "00000000:2A:00.0",
    "00000000:3A:00.0",
    "00000000:5D:00.0",
    "00000000:9A:00.0",
    "00000000:AB:00.0",
    "00000000:BA:00.0",
    "00000000:DB:00.0",
]


HEALTHY_FABRIC_MASK = (2 << 0) | (2 << 2) | (2 << 4) | (2 << 6) | (1 << 8) | (1 << 12)
#: The same with one field turned "true": degraded bandwidth, an unhealthy route.
DEGRADED_BANDWIDTH_MASK = (HEALTHY_FABRIC_MASK & ~(0x3 << 0)) | (1 << 0)
UNHEALTHY_ROUTE_MASK = (HEALTHY_FABRIC_MASK & ~(0x3 << 4)) | (1 << 4)


class NVMLError(Exception):
    """nvidia-ml-py's error: `.value` holds the nvmlReturn_t code."""

    _strings: ClassVar[dict[int, str]] = {
        NVML_ERROR_NOT_SUPPORTED: "Not Supported",
        NVML_ERROR_LIBRARY_NOT_FOUND: "NVML Shared Library Not Found",
        NVML_ERROR_FUNCTION_NOT_FOUND: "Function Not Found",
    }

    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return self._strings.get(self.value, f"NVML Error with code {self.value}")


class c_nvmlGpuFabricInfoV_t(ctypes.Structure):  # the binding's own name
    """nvmlGpuFabricInfo_v2_t."""

    _fields_ = [
        ("version", ctypes.c_uint),
        ("clusterUuid", ctypes.c_uint8 * NVML_GPU_FABRIC_UUID_LEN),
        ("status", ctypes.c_uint),
        ("cliqueId", ctypes.c_uint32),
        ("state", ctypes.c_uint),
        ("healthMask", ctypes.c_uint32),
    ]

    def __init__(self) -> None:
        super().__init__(version=nvmlGpuFabricInfo_v2)


@dataclass
class FakeGpu:
    """One GPU as NVML would report it; None for a query the device does not support."""

    name: str = "NVIDIA GB300"
    uuid: str = GB300_UUIDS[0]
    bus_id: str = GB300_BUSES[0]
    memory_mib: int = 284208
    cc: tuple[int, int] = (10, 3)
    mig: tuple[int, int] | None = (0, 0)
    persistence: int = NVML_FEATURE_ENABLED
    retired_pending: int | None = None
    remapped: tuple[int, int, int, int] | None = (0, 0, 0, 0)
    ecc_uncorrected: int | None = 0
    recovery_action: int | None = 0
    fabric_state: int | None = NVML_GPU_FABRIC_STATE_COMPLETED
    fabric_status: int = NVML_SUCCESS
    cluster_uuid: str | None = GB300_CLUSTER
    clique_id: int = 7
    #: nvmlGpuFabricInfo_v2 healthMask: a healthy registered tray's (nvml.h NVML_GPU_FABRIC_HEALTH_MASK_*): bandwidth
    #: not degraded, no route recovery, routes healthy, no access-timeout recovery (each "false", 2), configuration
    #: correct (1 at shift 8), partition assigned (1 at shift 12).
    health_mask: int = HEALTHY_FABRIC_MASK


@dataclass
class FakeNvml:
    """A node: driver, CUDA driver version and GPUs; `available=False` behaves like a host without libnvidia-ml."""

    gpus: list[FakeGpu] = field(default_factory=list)
    driver: str = "580.95.05"
    cuda: int = 13000
    available: bool = True


def gb300_node(**gpu_changes: object) -> FakeNvml:
    """A healthy GB300 compute tray: 4 GPUs in one NVLink clique; `gpu_changes` apply to every GPU."""
    gpus = [
        dataclasses.replace(FakeGpu(uuid=u, bus_id=b), **gpu_changes)
        for u, b in zip(GB300_UUIDS, GB300_BUSES, strict=True)
    ]
    return FakeNvml(gpus=gpus)


def h100_node() -> FakeNvml:
    """An HGX H100 node: 8 GPUs, no multi-node NVLink fabric."""
    gpus = [
        FakeGpu(
            name="NVIDIA H100 80GB HBM3",
            uuid=f"GPU-{0x3F1A2B00 + i:08x}-7c6d-4e5f-8a9b-0c1d2e3f{0x4A50 + i:04x}",
            bus_id=bus,
            memory_mib=81559,
            cc=(9, 0),
            fabric_state=None,
            cluster_uuid=None,
            clique_id=0,
        )
        for i, bus in enumerate(H100_BUSES)
    ]
    return FakeNvml(gpus=gpus)


def make_module(node: FakeNvml) -> types.ModuleType:
    """Build the `pynvml` module object for `node`."""
    mod = types.ModuleType("pynvml")
    mod.__dict__.update(CONSTANTS)
    mod.NVMLError = NVMLError
    mod.c_nvmlGpuFabricInfoV_t = c_nvmlGpuFabricInfoV_t

    def supported(value: object) -> object:
        if value is None:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return value

    def nvmlInit() -> None:
        if not node.available:
            raise NVMLError(NVML_ERROR_LIBRARY_NOT_FOUND)

    def nvmlDeviceGetPciInfo(handle: FakeGpu) -> types.SimpleNamespace:
        return types.SimpleNamespace(busId=handle.bus_id.encode())

    def nvmlDeviceGetMemoryInfo(handle: FakeGpu) -> types.SimpleNamespace:
        total = handle.memory_mib * MIB
        return types.SimpleNamespace(total=total, free=total - 1286 * MIB, used=0)

    def nvmlDeviceGetFieldValues(handle: FakeGpu, field_ids: list[int]) -> list[types.SimpleNamespace]:
        assert field_ids == [NVML_FI_DEV_GET_GPU_RECOVERY_ACTION]
        ret = NVML_SUCCESS if handle.recovery_action is not None else NVML_ERROR_NOT_SUPPORTED
        return [
            types.SimpleNamespace(
                fieldId=field_ids[0], nvmlReturn=ret, value=types.SimpleNamespace(uiVal=handle.recovery_action or 0)
            )
        ]

    def nvmlDeviceGetTotalEccErrors(handle: FakeGpu, error_type: int, counter_type: int) -> int:
        assert (error_type, counter_type) == (NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC)
        return supported(handle.ecc_uncorrected)  # type: ignore[return-value]

    def nvmlDeviceGetGpuFabricInfoV(handle: FakeGpu, ref: object) -> int:
        info = ref._obj  # type: ignore[attr-defined]  # the struct behind ctypes.byref
        assert isinstance(info, c_nvmlGpuFabricInfoV_t) and info.version == nvmlGpuFabricInfo_v2
        if handle.fabric_state is None:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        info.state, info.status, info.cliqueId = handle.fabric_state, handle.fabric_status, handle.clique_id
        info.healthMask = handle.health_mask
        raw = uuidlib.UUID(handle.cluster_uuid).bytes if handle.cluster_uuid else bytes(16)
        ctypes.memmove(info.clusterUuid, raw, 16)
        return NVML_SUCCESS

    functions = {
        "nvmlInit": nvmlInit,
        "nvmlShutdown": lambda: None,
        "nvmlSystemGetDriverVersion": lambda: node.driver,
        "nvmlSystemGetCudaDriverVersion": lambda: node.cuda,
        "nvmlDeviceGetCount": lambda: len(node.gpus),
        "nvmlDeviceGetHandleByIndex": lambda index: node.gpus[index],
        "nvmlDeviceGetName": lambda h: h.name,
        "nvmlDeviceGetUUID": lambda h: h.uuid,
        "nvmlDeviceGetPciInfo": nvmlDeviceGetPciInfo,
        "nvmlDeviceGetMemoryInfo": nvmlDeviceGetMemoryInfo,
        "nvmlDeviceGetCudaComputeCapability": lambda h: h.cc,
        "nvmlDeviceGetMigMode": lambda h: list(supported(h.mig)),  # type: ignore[arg-type]
        "nvmlDeviceGetPersistenceMode": lambda h: h.persistence,
        "nvmlDeviceGetRetiredPagesPendingStatus": lambda h: supported(h.retired_pending),
        "nvmlDeviceGetRemappedRows": lambda h: supported(h.remapped),
        "nvmlDeviceGetTotalEccErrors": nvmlDeviceGetTotalEccErrors,
        "nvmlDeviceGetFieldValues": nvmlDeviceGetFieldValues,
        "nvmlDeviceGetGpuFabricInfoV": nvmlDeviceGetGpuFabricInfoV,
    }
    assert set(functions) == set(FUNCTIONS)
    mod.__dict__.update(functions)
    return mod


def install(monkeypatch: object, node: FakeNvml) -> types.ModuleType:
    """Put the fake in `sys.modules["pynvml"]` for the duration of one test."""
    module = make_module(node)
    monkeypatch.setitem(sys.modules, "pynvml", module)  # type: ignore[attr-defined]
    return module
