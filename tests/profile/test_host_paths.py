"""kubernetes.host_vllm's run-time defaults (k3deploy/profile/host_paths.py) and what the profile refuses of it: the
cluster-cpu built-in holds no machine path, loading it derives them, a `--set` wins, and a host_vllm profile must
be Pod Security privileged and, without hardware, claim no GPU."""

from __future__ import annotations

import os
import struct
import sys
from pathlib import Path

import pytest

from k3deploy.errors import ProfileError
from k3deploy.profile import load_profile
from k3deploy.profile.host_paths import default_model_dir, elf_interpreter, environment_folders, loader_folders
from k3deploy.profile.load import read_layers

CPU = "cluster-cpu"


def _elf(path: Path, interp: bytes) -> Path:
    """A minimal 64-bit little-endian ELF header with one PT_INTERP program header naming `interp`."""
    header = bytearray(64)
    header[:6] = b"\x7fELF\x02\x01"
    struct.pack_into("<Q", header, 0x20, 64)  # e_phoff
    struct.pack_into("<HH", header, 0x36, 56, 1)  # e_phentsize, e_phnum
    program = struct.pack("<IIQQQQQQ", 3, 4, 120, 0, 0, len(interp) + 1, len(interp) + 1, 1)
    path.write_bytes(bytes(header) + program + interp + b"\0")
    return path


def test_the_builtin_holds_no_machine_path() -> None:
    base, _, _ = read_layers(CPU)
    assert base["kubernetes"]["host_vllm"] == {"python": None, "mounts": [], "model_dir": None}


def test_loading_derives_the_paths_from_this_interpreter(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("K3DEPLOY_VLLM_PYTHON", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    host = load_profile(CPU).kubernetes.host_vllm
    assert host is not None and host.python == sys.executable
    assert host.model_dir == str(tmp_path / "k3deploy" / CPU / "model") == default_model_dir(CPU)
    assert str(Path(os.path.abspath(sys.executable)).parent.parent) in host.mounts
    assert all(Path(m).is_dir() for m in host.mounts) and len(set(host.mounts)) == len(host.mounts)


def test_a_set_wins_over_the_derived_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("K3DEPLOY_VLLM_PYTHON", "/opt/elsewhere/bin/python")
    sets = ["kubernetes.host_vllm.model_dir=/srv/model", 'kubernetes.host_vllm.mounts=["/opt/elsewhere"]']
    host = load_profile(CPU, sets).kubernetes.host_vllm
    assert host is not None
    assert (host.python, host.mounts, host.model_dir) == ("/opt/elsewhere/bin/python", ["/opt/elsewhere"], "/srv/model")


def test_a_relative_host_path_is_refused() -> None:
    with pytest.raises(ProfileError, match="host_vllm"):
        load_profile(CPU, ["kubernetes.host_vllm.model_dir=models"])


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        (["kubernetes.pod_security_level=baseline"], "pod_security_level privileged"),
        (["kubernetes.gpu_check=true"], "kubernetes.gpu_check"),
        (["parallel.nodes=2", "parallel.tensor_parallel_size=2"], "a group of one pod"),
    ],
)
def test_what_a_host_vllm_profile_refuses(sets: list[str], message: str) -> None:
    with pytest.raises(ProfileError, match=message):
        load_profile(CPU, sets)


def test_a_virtualenv_gives_its_folder_and_its_base_installation(tmp_path: Path) -> None:
    env = tmp_path / "env"
    (env / "bin").mkdir(parents=True)
    (env / "pyvenv.cfg").write_text("home = /opt/python/3.11/bin\ninclude-system-site-packages = false\n")
    assert environment_folders(str(env / "bin" / "python")) == [str(env), "/opt/python/3.11"]
    plain = tmp_path / "usr"
    (plain / "bin").mkdir(parents=True)
    assert environment_folders(str(plain / "bin" / "python3")) == [str(plain)]


def test_the_loader_folders_follow_its_link(tmp_path: Path) -> None:
    libs = tmp_path / "lib" / "x86_64-linux-gnu"
    libs.mkdir(parents=True)
    (libs / "ld.so").write_bytes(b"")
    (tmp_path / "lib64").mkdir()
    (tmp_path / "lib64" / "ld.so").symlink_to(libs / "ld.so")
    binary = _elf(tmp_path / "python", str(tmp_path / "lib64" / "ld.so").encode())
    assert elf_interpreter(binary) == str(tmp_path / "lib64" / "ld.so")
    assert loader_folders(str(binary)) == [str(tmp_path / "lib64"), str(libs)]


def test_no_loader_for_what_is_not_an_elf_executable(tmp_path: Path) -> None:
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\n")
    assert elf_interpreter(script) is None and loader_folders(str(script)) == []
    assert elf_interpreter(tmp_path / "missing") is None
