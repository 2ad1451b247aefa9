"""The gpu-check script's NVML reader (ctypes on libnvidia-ml.so.1) against a stand-in library that checks every
argument (tests/pod_scripts/nvml_lib.py), and its structs against nvidia-ml-py's bindings of nvml.h."""

from __future__ import annotations

import ctypes

import pynvml
import pytest

from k3deploy.pod_scripts import gpu_check as script
from tests.pod_scripts.nvml_lib import Gpu, NvmlLib


def test_a_gb300_tray_reads_as_the_checks_expect_it() -> None:
    lib = NvmlLib(gpus=[Gpu() for _ in range(4)])
    facts = script.read_nvml(lib)
    assert (facts["driver"], facts["cuda"], len(facts["gpus"])) == ("580.95.05", "13.0", 4)
    assert facts["gpus"][3] == {
        "index": 3,
        "name": "NVIDIA GB300",
        "memory_mib": 284208,
        "compute_capability": "10.3",
        "mig": False,
        "remap_pending": False,
        "remap_failed": False,
        "ecc_uncorrected": 0,
        "fabric_state": "Completed",
        "fabric_status": "Success",
        "clique": "7c8d0a3e-1b2f-4e5d-9a8b-0c1d2e3f4a5b.1",
    }
    assert lib.calls[0] == "nvmlInit_v2" and lib.calls[-1] == "nvmlShutdown" and not lib.initialised


def test_unsupported_queries_read_as_unknown_and_mig_and_fabric_states_as_named() -> None:
    lib = NvmlLib(gpus=[Gpu(cc=None, mig=None, fabric_state=None), Gpu(mig=1, fabric_state=2, fabric_status=10)])
    first, second = script.read_nvml(lib)["gpus"]
    assert (first["compute_capability"], first["mig"], first["fabric_state"], first["clique"]) == (
        None,
        False,
        None,
        None,
    )
    assert (second["mig"], second["fabric_state"], second["fabric_status"]) == (True, "In Progress", "Timeout")


def test_an_nvml_error_is_reported_and_the_library_still_shut_down() -> None:
    lib = NvmlLib(gpus=[Gpu()])

    def broken(*_args: object) -> int:
        lib.calls.append("nvmlDeviceGetName")
        return 15  # NVML_ERROR_GPU_IS_LOST

    lib.nvmlDeviceGetName = broken  # type: ignore[method-assign]
    with pytest.raises(script.NvmlError, match="nvmlDeviceGetName returned NVML error 15"):
        script.read_nvml(lib)
    assert lib.calls[-1] == "nvmlShutdown" and not lib.initialised


def test_the_structs_match_nvidia_ml_pys_bindings_of_nvml_h() -> None:
    assert pynvml.nvmlGpuFabricInfo_v2 == script.FABRIC_INFO_V2
    theirs, ours = pynvml.c_nvmlGpuFabricInfo_v2_t, script._FabricInfoV2
    assert ctypes.sizeof(ours) == ctypes.sizeof(theirs)
    for name, _ in theirs._fields_:
        assert getattr(ours, name).offset == getattr(theirs, name).offset, name
    assert [(n, t) for n, t in script._Memory._fields_] == list(pynvml.c_nvmlMemory_t._fields_)
