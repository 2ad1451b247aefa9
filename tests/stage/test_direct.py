"""The copier's direct I/O: a file copied in many chunks through the pipeline (read, write, hash in step) is the
source's bytes with the source's sha256, its tail written past O_DIRECT's alignment, and a filesystem that refuses
direct I/O part way gets the rest buffered."""

from __future__ import annotations

import errno
import hashlib
import os
import threading
from pathlib import Path

import pytest

from k3deploy.stage import copy as copy_module
from k3deploy.stage import direct
from k3deploy.stage.copy import Copier
from k3deploy.stage.plan import SourceFile
from k3deploy.stage.throttle import Throttle
from tests.stage.snapshot import make_files

#: A small chunk (still a multiple of the alignment), so a file of a few hundred KB crosses every depth of the pipeline.
SMALL_CHUNK = 16 * direct.ALIGN


def _copier(verify: bool = True) -> Copier:
    return Copier(Throttle(None, 0.0), lambda n: None, threading.Event(), verify=verify)


def _direct_here(folder: Path) -> bool:
    probe = folder / "probe"
    probe.write_bytes(b"")
    fd = os.open(probe, os.O_RDONLY)
    try:
        return direct.set_direct(fd, True)
    finally:
        os.close(fd)
        probe.unlink()


@pytest.mark.parametrize("verify", [True, False])
def test_a_file_of_many_chunks_and_an_unaligned_tail_is_copied_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, verify: bool
) -> None:
    if not _direct_here(tmp_path):
        pytest.skip("this filesystem takes no direct I/O (the buffered copy is test_run's)")
    size = SMALL_CHUNK * (3 * copy_module.DEPTH) + 1_234  # every buffer reused three times, then a short tail
    data = make_files(tmp_path / "src", {"shard": size})["shard"]
    monkeypatch.setattr(copy_module, "CHUNK", SMALL_CHUNK)
    flags: list[bool] = []
    real_write = direct.write_at

    def write_at(fd: int, view: memoryview, offset: int) -> None:
        flags.append(direct.is_direct(fd))
        real_write(fd, view, offset)

    monkeypatch.setattr(direct, "write_at", write_at)
    sha = _copier(verify).copy(tmp_path / "src", tmp_path / "dest", SourceFile("shard", size, None))
    assert (tmp_path / "dest" / "shard").read_bytes() == data
    assert sha == hashlib.sha256(data).hexdigest()
    assert len(flags) == 3 * copy_module.DEPTH + 1 and all(flags)  # every chunk went out through O_DIRECT


def test_a_write_the_filesystem_refuses_direct_goes_on_buffered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not _direct_here(tmp_path):
        pytest.skip("this filesystem takes no direct I/O")
    size = 3 * SMALL_CHUNK + 7
    data = make_files(tmp_path / "src", {"shard": size})["shard"]
    monkeypatch.setattr(copy_module, "CHUNK", SMALL_CHUNK)
    real_pwrite, refused = os.pwrite, []

    def pwrite(fd: int, view: memoryview, offset: int) -> int:
        if direct.is_direct(fd):
            refused.append(offset)
            raise OSError(errno.EINVAL, "Invalid argument")
        return real_pwrite(fd, view, offset)

    monkeypatch.setattr(direct.os, "pwrite", pwrite)
    sha = _copier().copy(
        tmp_path / "src", tmp_path / "dest", SourceFile("shard", size, hashlib.sha256(data).hexdigest())
    )
    assert refused == [0] and sha == hashlib.sha256(data).hexdigest()
    assert (tmp_path / "dest" / "shard").read_bytes() == data


def test_a_short_read_leaves_the_rest_to_buffered_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A read that returns less than a chunk before the end (a network volume may) puts the next one at an offset
    O_DIRECT cannot take: the rest is read buffered, and every byte still arrives in order."""
    if not _direct_here(tmp_path):
        pytest.skip("this filesystem takes no direct I/O")
    size = 4 * SMALL_CHUNK
    data = make_files(tmp_path / "src", {"shard": size})["shard"]
    monkeypatch.setattr(copy_module, "CHUNK", SMALL_CHUNK)
    real_preadv, reads = os.preadv, []

    def preadv(fd: int, buffers: list[memoryview], offset: int) -> int:
        reads.append((offset, direct.is_direct(fd)))
        n = real_preadv(fd, buffers, offset)
        return min(n, 100) if offset == 0 else n

    monkeypatch.setattr(direct.os, "preadv", preadv)
    sha = _copier().copy(tmp_path / "src", tmp_path / "dest", SourceFile("shard", size, None))
    assert sha == hashlib.sha256(data).hexdigest()
    assert reads[0] == (0, True) and reads[1] == (100, False)


def test_a_filesystem_without_direct_io_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """fcntl's EINVAL for O_DIRECT (a filesystem without it) leaves the file buffered, and set_direct says so."""
    real_fcntl = direct.fcntl.fcntl

    def fcntl(fd: int, cmd: int, arg: int = 0) -> int:
        if cmd == direct.fcntl.F_SETFL and arg & os.O_DIRECT:
            raise OSError(errno.EINVAL, "Invalid argument")
        return int(real_fcntl(fd, cmd, arg))

    monkeypatch.setattr(direct.fcntl, "fcntl", fcntl)
    (tmp_path / "f").write_bytes(b"x")
    fd = os.open(tmp_path / "f", os.O_RDONLY)
    try:
        assert direct.set_direct(fd, True) is False and not direct.is_direct(fd)
    finally:
        os.close(fd)
