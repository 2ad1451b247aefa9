"""Run-time defaults of kubernetes.host_vllm (the cluster-cpu rehearsal): a machine's paths are no profile's, so
what `--set` leaves unset is derived here when the profile is loaded, from the interpreter that has vLLM.

- python: $K3DEPLOY_VLLM_PYTHON, else this interpreter (the local target's rule, targets/local/probe.py);
- mounts: that interpreter's environment and base installation (a virtualenv's folder and the `home` of its
  pyvenv.cfg) and the folders of its dynamic loader (PT_INTERP, and the folder a loader link points into, where the
  C libraries are), so the pods' image need carry none of them;
- model_dir: the folder the local rehearsal generates the same model in (~/.cache/k3deploy/<profile>/model, or
  under $XDG_CACHE_HOME), which `up` generates when it is missing (targets/kubernetes/host_model.py).
"""

from __future__ import annotations

import os
import struct
import sys
from pathlib import Path

from k3deploy.profile.model import Profile

#: The ELF program header type of the interpreter's path.
_PT_INTERP = 3
#: Enough of an executable to hold its program headers and interpreter path.
_HEAD_BYTES = 65536


def elf_interpreter(binary: Path) -> str | None:
    """The dynamic loader a 64-bit little-endian ELF executable names (PT_INTERP), None for anything else."""
    try:
        with binary.open("rb") as handle:
            data = handle.read(_HEAD_BYTES)
    except OSError:
        return None
    if data[:4] != b"\x7fELF" or data[4:6] != b"\x02\x01":
        return None
    (phoff,) = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    for index in range(phnum):
        start = phoff + index * phentsize
        if start + 40 > len(data):
            return None
        kind, _, offset, _, _, size = struct.unpack_from("<IIQQQQ", data, start)
        if kind == _PT_INTERP and offset + size <= len(data):
            return data[offset : offset + size].rstrip(b"\0").decode(errors="replace")
    return None


def environment_folders(python: str) -> list[str]:
    """The environment folder of `python` and its base installation: for a virtualenv (`<env>/bin/python` beside
    `<env>/pyvenv.cfg`) the env and the parent of the cfg's `home`; otherwise the parent of the bin folder."""
    env = Path(os.path.abspath(python)).parent.parent
    config = env / "pyvenv.cfg"
    folders = [str(env)]
    try:
        lines = config.read_text(encoding="utf-8").splitlines()
    except OSError:
        return folders
    for line in lines:
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            folders.append(str(Path(value.strip()).parent))
    return folders


def loader_folders(python: str) -> list[str]:
    """The folder of `python`'s dynamic loader and, when the loader is a link, the folder it points into."""
    loader = elf_interpreter(Path(os.path.realpath(python)))
    if loader is None:
        return []
    folders = [os.path.dirname(loader)]
    if os.path.islink(loader):
        target = os.path.join(os.path.dirname(loader), os.readlink(loader))
        folders.append(os.path.dirname(os.path.normpath(target)))
    return folders


def default_model_dir(profile_name: str) -> str:
    """Where the local rehearsal keeps its generated model for a profile of this name."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    cache = Path(xdg) if xdg else Path.home() / ".cache"
    return str(cache / "k3deploy" / profile_name / "model")


def completed(profile: Profile) -> Profile:
    """`profile` with kubernetes.host_vllm's unset paths derived on this machine (unchanged without host_vllm)."""
    host = profile.kubernetes.host_vllm
    if host is None or not profile.on_kubernetes:
        return profile
    python = host.python or os.environ.get("K3DEPLOY_VLLM_PYTHON") or sys.executable
    mounts = list(host.mounts) or list(dict.fromkeys([*environment_folders(python), *loader_folders(python)]))
    model_dir = host.model_dir or default_model_dir(profile.name)
    filled = host.model_copy(update={"python": python, "mounts": mounts, "model_dir": model_dir})
    return profile.model_copy(update={"kubernetes": profile.kubernetes.model_copy(update={"host_vllm": filled})})
