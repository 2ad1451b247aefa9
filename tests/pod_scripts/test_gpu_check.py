"""The serving pods' gpu-check script (k3deploy/pod_scripts/gpu_check.py): its judgements and exit codes on
described GPUs, and the text the profile ConfigMap ships running as the pod runs it."""

from __future__ import annotations

import ast
import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from k3deploy.pod_scripts import gpu_check as script
from k3deploy.profile import load_profile
from k3deploy.render.gpu_check import expectations
from k3deploy.render.manifests import build

K3 = "kimi-k3-gb300-tp16"
EXPECT = expectations(load_profile(K3))
CLIQUE = "7c8d0a3e-1b2f-4e5d-9a8b-0c1d2e3f4a5b.1"


def _gpu(index: int, **changes: Any) -> dict[str, Any]:
    gpu = {
        "index": index,
        "name": "NVIDIA GB300",
        "memory_mib": 284208,
        "compute_capability": "10.3",
        "mig": False,
        "remap_pending": False,
        "remap_failed": False,
        "ecc_uncorrected": 0,
        "fabric_state": "Completed",
        "fabric_status": "Success",
        "clique": CLIQUE,
    }
    return {**gpu, **changes}


def _tray(*changed: dict[str, Any]) -> dict[str, Any]:
    gpus = [_gpu(i) for i in range(4)]
    for change in changed:
        gpus[change["index"]] = _gpu(**change)
    return {"driver": "580.95.05", "cuda": "13.0", "gpus": gpus}


HOST = {"shm_bytes": 64 * 2**30, "imex_channels": ["channel0"]}


def _run(facts: dict[str, Any], host: dict[str, Any] = HOST, expect: dict[str, Any] = EXPECT) -> tuple[int, str]:
    said: list[str] = []
    code = script.main({script.EXPECT_ENV: json.dumps(expect)}, lambda: facts, lambda: host, said.append)
    return code, "\n".join(said)


def test_a_healthy_gb300_tray_passes_every_check() -> None:
    code, said = _run(_tray())
    assert code == script.EXIT_OK
    names = [line.split(":")[0] for line in said.splitlines()[:-1]]
    assert names == [
        "PASS gpu.count",
        "PASS gpu.product",
        "PASS gpu.compute_capability",
        "PASS gpu.memory",
        "PASS driver.version",
        "PASS driver.cuda",
        "PASS gpu.mig",
        "PASS gpu.health",
        "PASS fabric.state",
        "PASS host.shm",
        "PASS imex.channel",
    ]
    assert said.splitlines()[-1] == "gpu-check: ok"


@pytest.mark.parametrize(
    ("facts", "failed"),
    [
        ({"driver": "580.95.05", "cuda": "13.0", "gpus": [_gpu(0), _gpu(1)]}, "gpu.count"),
        (_tray({"index": 2, "name": "NVIDIA H100 80GB HBM3"}), "gpu.product"),
        (_tray({"index": 1, "compute_capability": "9.0"}), "gpu.compute_capability"),
        (_tray({"index": 3, "memory_mib": 81559}), "gpu.memory"),
        ({**_tray(), "driver": "575.57.08"}, "driver.version"),
        ({**_tray(), "cuda": "12.9"}, "driver.cuda"),
        (_tray({"index": 0, "mig": True}), "gpu.mig"),
        (_tray({"index": 2, "remap_pending": True}), "gpu.health"),
        (_tray({"index": 2, "remap_failed": True}), "gpu.health"),
        (_tray({"index": 1, "ecc_uncorrected": 2}), "gpu.health"),
        (_tray({"index": 1, "fabric_state": "In Progress", "fabric_status": None}), "fabric.state"),
        (_tray({"index": 1, "clique": "7c8d0a3e-1b2f-4e5d-9a8b-0c1d2e3f4a5b.2"}), "fabric.state"),
        (_tray({"index": 0, "fabric_state": None, "fabric_status": None, "clique": None}), "fabric.state"),
    ],
)
def test_each_wrong_fact_fails_its_check_and_the_pod(facts: dict[str, Any], failed: str) -> None:
    code, said = _run(facts)
    assert code == script.EXIT_FAILED
    assert [line.split(":")[0] for line in said.splitlines() if line.startswith("FAIL")] == [f"FAIL {failed}"]
    assert said.splitlines()[-1] == f"gpu-check: FAIL ({failed})"


def test_no_imex_channel_fails_with_what_nccl_would_say_and_where_to_look() -> None:
    code, said = _run(_tray(), {**HOST, "imex_channels": []})
    assert code == script.EXIT_FAILED
    (line,) = [line for line in said.splitlines() if line.startswith("FAIL")]
    assert line.startswith("FAIL imex.channel: no IMEX channel device in /dev/nvidia-caps-imex-channels")
    assert "NCCL_MNNVL_ENABLE=1" in line and "computedomain" in line
    # Without a ComputeDomain and without MNNVL nothing needs a channel.
    off = expectations(load_profile(K3, ["kubernetes.compute_domain=false", "vllm.env.NCCL_MNNVL_ENABLE=0"]))
    assert off["imex_channel"] is False
    assert _run(_tray(), {**HOST, "imex_channels": []}, off)[0] == script.EXIT_OK
    assert expectations(load_profile(K3, ["kubernetes.compute_domain=false"]))["imex_channel"] is True


def test_a_small_shm_warns_without_failing() -> None:
    code, said = _run(_tray(), {**HOST, "shm_bytes": 2**30})
    assert code == script.EXIT_OK and "WARN host.shm: 1.0 GiB, below 64.0 GiB" in said
    assert _run(_tray(), {**HOST, "shm_bytes": None})[0] == script.EXIT_OK


def test_without_a_hardware_section_only_the_count_and_host_are_judged() -> None:
    expect = {**copy.deepcopy(EXPECT), "hardware": None}
    code, said = _run({"driver": "1", "cuda": "1.0", "gpus": [_gpu(i, name="other") for i in range(4)]}, expect=expect)
    assert code == script.EXIT_OK and "gpu.product" not in said


def test_no_nvml_or_no_expectations_is_an_environment_problem() -> None:
    def no_nvml() -> dict[str, Any]:
        raise script.NvmlError("cannot load libnvidia-ml.so.1")

    said: list[str] = []
    code = script.main({script.EXPECT_ENV: json.dumps(EXPECT)}, no_nvml, lambda: HOST, said.append)
    assert code == script.EXIT_ENVIRONMENT and "nvidia.com/gpu" in said[-1]
    assert script.main({}, lambda: _tray(), lambda: HOST, said.append) == script.EXIT_ENVIRONMENT


def test_versions_compare_as_numbers() -> None:
    assert script.version_tuple("580.95.05") > script.version_tuple("580.9.99")
    assert script.version_tuple("13.0") >= script.version_tuple("13.0") > script.version_tuple("12.9")


def _shipped() -> str:
    configmap = next(m.obj for m in build(load_profile(K3)) if m.name == f"{K3}-profile")
    return str(configmap["data"]["gpu-check.py"])


def test_the_shipped_script_is_python_of_the_standard_library_only() -> None:
    source = _shipped()
    assert source == Path(script.__file__).read_text(encoding="utf-8")
    tree = ast.parse(source)
    compile(source, "gpu-check.py", "exec")
    roots = {
        alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    }
    roots |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    assert roots - {"__future__"} <= sys.stdlib_module_names, roots - set(sys.stdlib_module_names)


def test_the_shipped_script_run_as_the_pod_runs_it_exits_3_where_there_is_no_nvml(tmp_path: Path) -> None:
    # This machine has no NVIDIA driver: the real ctypes load fails, and the pod would stop with a clear line.
    # The isolated interpreter (-I) sees neither this checkout nor the venv's packages, as in the vLLM image.
    if Path("/dev/nvidiactl").exists():
        pytest.skip("an NVIDIA driver is present here: the script would read real GPUs")
    path = tmp_path / "gpu-check.py"
    path.write_text(_shipped(), encoding="utf-8")
    env = {script.EXPECT_ENV: json.dumps(EXPECT), "PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, "-I", str(path)], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == script.EXIT_ENVIRONMENT, done.stderr
    assert "gpu-check: cannot read the GPUs through NVML: cannot load libnvidia-ml.so.1" in done.stdout
    assert not list(tmp_path.glob("__pycache__"))
