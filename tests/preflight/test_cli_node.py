"""`k3deploy preflight --node` as a user runs it: no GPU, a fake nvidia-smi on PATH, a fake NVML module (in this
process: put in `sys.modules`; in a subprocess: a `pynvml.py` first on its PYTHONPATH)."""

from __future__ import annotations

import ctypes.util
import json
import platform
import shutil
import sys
from pathlib import Path

import pytest

from k3deploy.preflight.facts import normalize_arch
from tests.conftest import REPO_ROOT, run_cli, run_cli_process
from tests.preflight.fake_nvml import FakeNvml, gb300_node, make_module
from tests.preflight.test_checks_pinning import PINNED

DATA = Path(__file__).parent / "data"
GB300 = "kimi-k3-gb300-tp16"
HOST_ARCH = normalize_arch(platform.machine())
#: Small weights so the free-disk check passes on a test machine, and the image built for this machine.
FITS_HERE = [
    "--set",
    "model.checkpoint_bytes=1000000",
    "--set",
    "speculative.draft_bytes=1000",
    "--set",
    f"vllm.image_arch={HOST_ARCH}",
    *[arg for s in PINNED for arg in ("--set", s)],
]


def fake_pynvml_dir(tmp_path: Path, node_expr: str) -> Path:
    """A directory holding a `pynvml.py` that replaces itself with the fake for `node_expr`."""
    folder = tmp_path / "fake-pynvml"
    folder.mkdir()
    (folder / "pynvml.py").write_text(
        "import sys\n"
        "from tests.preflight.fake_nvml import FakeNvml, gb300_node, h100_node, make_module\n"
        f"sys.modules[__name__] = make_module({node_expr})\n"
    )
    return folder


def use_fake_nvml(monkeypatch: pytest.MonkeyPatch, node: FakeNvml) -> None:
    """In this process, `import pynvml` (done lazily by preflight/node.py) gets the fake for `node`."""
    monkeypatch.setitem(sys.modules, "pynvml", make_module(node))


def fake_nvidia_smi_dir(tmp_path: Path, name: str) -> Path:
    """A directory holding an `nvidia-smi` that prints the `name` fixture for -q -x and the compute-cap query."""
    folder = tmp_path / "bin"
    folder.mkdir()
    script = folder / "nvidia-smi"
    script.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        f"name = 'compute-cap.csv' if any(a.startswith('--query-gpu') for a in sys.argv) else 'nvidia-smi-q-x.xml'\n"
        f"sys.stdout.write(open('{DATA}/{name}-' + name).read())\n"
    )
    script.chmod(0o755)
    return folder


@pytest.mark.skipif(
    shutil.which("nvidia-smi") is not None or ctypes.util.find_library("nvidia-ml") is not None,
    reason="this machine has an NVIDIA driver",
)
def test_no_gpu_exits_3_with_one_error_line() -> None:
    done = run_cli("preflight", "--node")
    assert done.returncode == 3
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        "error: cannot look at the GPUs: NVML and nvidia-smi were not found "
        "(NVML: NVML Shared Library Not Found; nvidia-smi: not on PATH)"
    ]
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_nvidia_smi_fallback_reads_the_gb300_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_nvml(monkeypatch, FakeNvml(available=False))
    smi_dir = fake_nvidia_smi_dir(tmp_path, "gb300")
    done = run_cli(
        "preflight", "-p", GB300, "--node", "-o", "json", *FITS_HERE, env={"PATH": f"{smi_dir}:/usr/bin:/bin"}
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    checks = {c["name"]: c for c in report["checks"]}
    assert checks["gpu.count"]["detail"] == "4 GPU(s) via nvidia-smi"
    assert checks["fabric.clique"]["measured"] == "4a2c8e61-93d7-4b5e-a0f2-6c1d9e8b7a35.7"
    assert not [name for name, c in checks.items() if c["status"] == "fail"]
    assert {c["status"] for name, c in checks.items() if name.startswith("profile.")} == {"pass"}


def test_h100_node_fails_with_exit_1_and_a_table(tmp_path: Path) -> None:
    # A real process: the fake module replaces pynvml from its PYTHONPATH, as on a user's machine.
    env = {"PYTHONPATH": f"{fake_pynvml_dir(tmp_path, 'h100_node()')}:{REPO_ROOT}"}
    done = run_cli_process("preflight", "-p", GB300, "--node", *FITS_HERE, env=env)
    assert done.returncode == 1
    rows = {line.split()[0]: line.split()[1] for line in done.stdout.splitlines()[1:] if len(line.split()) > 1}
    assert rows["gpu.product"] == "FAIL" and rows["gpu.count"] == "PASS" and rows["fabric.state"] == "FAIL"
    assert "fix: run on the GPUs the profile is sized for" in done.stdout
    assert done.stderr.splitlines()[-2] == (
        "error: preflight failed 5 check(s): gpu.product, gpu.compute_capability, "
        "gpu.memory, fabric.state, fabric.clique"
    )


def test_healthy_gb300_through_nvml_exits_0(monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_nvml(monkeypatch, gb300_node())
    done = run_cli("preflight", "-p", GB300, "--node", "-o", "json", *FITS_HERE)
    assert done.returncode == 0, done.stderr
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    assert checks["gpu.count"]["detail"] == "4 GPU(s) via nvml"
    assert not [name for name, c in checks.items() if c["status"] == "fail"]


def test_local_profile_without_flags_runs_the_checks_up_runs() -> None:
    done = run_cli("preflight", "-o", "json", "--set", f"vllm.image_arch={HOST_ARCH}")
    assert done.returncode in (0, 1), done.stderr  # 1 when something of the host's already serves the port
    names = [c["name"] for c in json.loads(done.stdout)["checks"]]
    assert names == ["local.vllm", "local.model", "local.cpu", "local.ram", "local.disk", "local.port"]


def test_unknown_option_is_a_usage_error() -> None:
    done = run_cli("preflight", "--gpu")
    assert done.returncode == 2
    assert done.stderr.splitlines()[0].startswith("error: No such option: --gpu")
