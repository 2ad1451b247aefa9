"""A stand-in for libnvidia-ml.so.1 as the gpu-check script calls it through ctypes (test helper).

Why: no NVIDIA driver here. It imitates the C functions of NVIDIA's nvml.h (as nvidia-ml-py's pynvml.py binds them)
that gpu_check.read_nvml calls, taking the same ctypes arguments the real library would get and writing through
them. At least as strict as the library: every call checks its arguments' types, a handle must be one it gave out,
a buffer must be as long as the length passed, the fabric struct must carry the v2 version word, and nvmlInit_v2
must come first and nvmlShutdown last; a GPU may answer NOT_SUPPORTED (3) as NVML does.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field

NVML_SUCCESS, NVML_ERROR_UNINITIALIZED, NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_INVALID_ARGUMENT = 0, 1, 3, 2
#: nvml.h nvmlGpuFabricInfo_v2 (NVML_STRUCT_VERSION(GpuFabricInfo, 2)), as pynvml.py names it.
FABRIC_INFO_V2 = 0x02000024


@dataclass
class Gpu:
    """One GPU as NVML reports it; `cc` or `mig` None: NOT_SUPPORTED; `fabric_state` None: no fabric API."""

    name: str = "NVIDIA GB300"
    memory_bytes: int = 284208 * 2**20
    cc: tuple[int, int] | None = (10, 3)
    mig: int | None = 0
    #: (correctable, uncorrectable, pending, failure) rows; None: NOT_SUPPORTED.
    remapped: tuple[int, int, int, int] | None = (0, 0, 0, 0)
    ecc_uncorrected: int | None = 0
    fabric_state: int | None = 3
    fabric_status: int = NVML_SUCCESS
    cluster_uuid: bytes = bytes.fromhex("7c8d0a3e1b2f4e5d9a8b0c1d2e3f4a5b")
    clique_id: int = 1


@dataclass
class NvmlLib:
    """The library: a driver, a CUDA driver version and GPUs; `calls` records the function names in order."""

    gpus: list[Gpu]
    driver: bytes = b"580.95.05"
    cuda: int = 13000
    calls: list[str] = field(default_factory=list)
    initialised: bool = False

    def _enter(self, name: str) -> None:
        self.calls.append(name)
        if not self.initialised:
            raise AssertionError(f"{name} before nvmlInit_v2")

    def _gpu(self, handle: object) -> Gpu:
        assert isinstance(handle, ctypes.c_void_p) and handle.value, f"not a device handle: {handle!r}"
        return self.gpus[handle.value - 1]

    @staticmethod
    def _buffer(buf: object, length: object) -> ctypes.Array[ctypes.c_char]:
        assert isinstance(buf, ctypes.Array) and buf._type_ is ctypes.c_char, f"not a char buffer: {buf!r}"
        assert isinstance(length, int) and length == len(buf), (length, len(buf))
        return buf

    def nvmlInit_v2(self) -> int:
        self.calls.append("nvmlInit_v2")
        self.initialised = True
        return NVML_SUCCESS

    def nvmlShutdown(self) -> int:
        self._enter("nvmlShutdown")
        self.initialised = False
        return NVML_SUCCESS

    def nvmlSystemGetDriverVersion(self, buf: object, length: object) -> int:
        self._enter("nvmlSystemGetDriverVersion")
        self._buffer(buf, length).value = self.driver
        return NVML_SUCCESS

    def nvmlSystemGetCudaDriverVersion(self, out: object) -> int:
        self._enter("nvmlSystemGetCudaDriverVersion")
        assert isinstance(out, ctypes.POINTER(ctypes.c_int))
        out.contents.value = self.cuda
        return NVML_SUCCESS

    def nvmlDeviceGetCount_v2(self, out: object) -> int:
        self._enter("nvmlDeviceGetCount_v2")
        assert isinstance(out, ctypes.POINTER(ctypes.c_uint))
        out.contents.value = len(self.gpus)
        return NVML_SUCCESS

    def nvmlDeviceGetHandleByIndex_v2(self, index: object, out: object) -> int:
        self._enter("nvmlDeviceGetHandleByIndex_v2")
        assert isinstance(index, int) and isinstance(out, ctypes.POINTER(ctypes.c_void_p))
        if not 0 <= index < len(self.gpus):
            return NVML_ERROR_INVALID_ARGUMENT
        out.contents.value = index + 1
        return NVML_SUCCESS

    def nvmlDeviceGetName(self, handle: object, buf: object, length: object) -> int:
        self._enter("nvmlDeviceGetName")
        self._buffer(buf, length).value = self._gpu(handle).name.encode()
        return NVML_SUCCESS

    def nvmlDeviceGetMemoryInfo(self, handle: object, out: object) -> int:
        self._enter("nvmlDeviceGetMemoryInfo")
        gpu = self._gpu(handle)
        memory = out.contents  # type: ignore[attr-defined]
        assert [name for name, _ in memory._fields_] == ["total", "free", "used"]
        memory.total, memory.free, memory.used = gpu.memory_bytes, gpu.memory_bytes, 0
        return NVML_SUCCESS

    def nvmlDeviceGetCudaComputeCapability(self, handle: object, major: object, minor: object) -> int:
        self._enter("nvmlDeviceGetCudaComputeCapability")
        gpu = self._gpu(handle)
        assert isinstance(major, ctypes.POINTER(ctypes.c_int)) and isinstance(minor, ctypes.POINTER(ctypes.c_int))
        if gpu.cc is None:
            return NVML_ERROR_NOT_SUPPORTED
        major.contents.value, minor.contents.value = gpu.cc
        return NVML_SUCCESS

    def nvmlDeviceGetMigMode(self, handle: object, current: object, pending: object) -> int:
        self._enter("nvmlDeviceGetMigMode")
        gpu = self._gpu(handle)
        assert isinstance(current, ctypes.POINTER(ctypes.c_uint)) and isinstance(pending, ctypes.POINTER(ctypes.c_uint))
        if gpu.mig is None:
            return NVML_ERROR_NOT_SUPPORTED
        current.contents.value = pending.contents.value = gpu.mig
        return NVML_SUCCESS

    def nvmlDeviceGetRemappedRows(self, handle: object, *rows: object) -> int:
        self._enter("nvmlDeviceGetRemappedRows")
        gpu = self._gpu(handle)
        assert len(rows) == 4 and all(isinstance(r, ctypes.POINTER(ctypes.c_uint)) for r in rows)
        if gpu.remapped is None:
            return NVML_ERROR_NOT_SUPPORTED
        for row, value in zip(rows, gpu.remapped, strict=True):
            row.contents.value = value  # type: ignore[attr-defined]
        return NVML_SUCCESS

    def nvmlDeviceGetTotalEccErrors(self, handle: object, error_type: object, counter: object, out: object) -> int:
        self._enter("nvmlDeviceGetTotalEccErrors")
        gpu = self._gpu(handle)
        # nvml.h: NVML_MEMORY_ERROR_TYPE_UNCORRECTED is 1, NVML_VOLATILE_ECC 0; the stand-in knows only that pair.
        assert (error_type, counter) == (1, 0) and isinstance(out, ctypes.POINTER(ctypes.c_ulonglong))
        if gpu.ecc_uncorrected is None:
            return NVML_ERROR_NOT_SUPPORTED
        out.contents.value = gpu.ecc_uncorrected
        return NVML_SUCCESS

    def nvmlDeviceGetGpuFabricInfoV(self, handle: object, out: object) -> int:
        self._enter("nvmlDeviceGetGpuFabricInfoV")
        gpu = self._gpu(handle)
        info = out.contents  # type: ignore[attr-defined]
        if info.version != FABRIC_INFO_V2:
            return NVML_ERROR_INVALID_ARGUMENT  # nvml.h: NVML_ERROR_ARGUMENT_VERSION_MISMATCH in newer drivers
        if gpu.fabric_state is None:
            return NVML_ERROR_NOT_SUPPORTED
        info.state, info.status, info.cliqueId = gpu.fabric_state, gpu.fabric_status, gpu.clique_id
        ctypes.memmove(info.clusterUuid, gpu.cluster_uuid, 16)
        return NVML_SUCCESS
