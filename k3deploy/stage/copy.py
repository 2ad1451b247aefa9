"""Copy one file of a snapshot: into a temporary name beside its final one, hashed while it is read, fsynced, checked
against the sha256 it must have, and only then renamed to its final name, so a partial file never looks complete.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from k3deploy.errors import StagedFileMismatch, StageStopped
from k3deploy.stage.plan import SourceFile
from k3deploy.stage.throttle import Throttle

#: The prefix of a file being copied; `stage` removes leftovers with it (a killed run's) from its own folder only.
PART_PREFIX = ".k3deploy-part."
#: Bytes read and written at a time: large enough for a disk's sequential rate, small enough for a smooth cap.
CHUNK = 8 * 1024 * 1024
#: How far ahead of the reader the source is asked for (WILLNEED): many reads in flight, as a network volume and
#: an NVMe disk both need to reach their rate, while the hash still reads the file in order.
READ_AHEAD = 8 * CHUNK


@dataclass
class Copier:
    """What every copy of a run shares: the cap, the progress callback, the stop flag, and whether to hash."""

    throttle: Throttle
    on_bytes: Callable[[int], None]
    stop: threading.Event
    verify: bool = True

    @staticmethod
    def _stream(src: int, dst: int, done: int, n: int) -> None:
        """Ask for the source's next window, and start writing back the chunk just written (DONTNEED writes dirty
        pages back, then drops them: the copy streams to the disk instead of piling up for the final fsync)."""
        os.posix_fadvise(src, done + n, READ_AHEAD, os.POSIX_FADV_WILLNEED)
        os.posix_fadvise(dst, done, n, os.POSIX_FADV_DONTNEED)

    def _pace(self, nbytes: int) -> None:
        self.on_bytes(nbytes)
        wait = self.throttle.take(nbytes, time.monotonic())
        if wait > 0:
            self.stop.wait(wait)
        if self.stop.is_set():
            raise StageStopped("the copy stopped: another copier failed or the run was interrupted")

    def _hash_copy(self, src: int, dst: int, size: int) -> str:
        digest = hashlib.sha256()
        buffer = bytearray(CHUNK)
        view = memoryview(buffer)
        copied = 0
        while True:
            n = os.readv(src, [buffer])
            if n == 0:
                break
            digest.update(view[:n])
            written = 0
            while written < n:
                written += os.write(dst, view[written:n])
            self._stream(src, dst, copied, n)
            copied += n
            self._pace(n)
        if copied != size:
            raise StagedFileMismatch(
                f"read {copied} bytes where the record lists {size}", "the source changed: fetch again"
            )
        return digest.hexdigest()

    def _kernel_copy(self, src: int, dst: int, size: int) -> None:
        copied, move = 0, _copy_range
        while copied < size:
            try:
                n = move(src, dst, copied, min(CHUNK, size - copied))
            except OSError as exc:
                # copy_file_range refuses two kinds of filesystem (Linux 5.19+: the weight volume's NFS onto a
                # tray's ext4 or XFS); sendfile copies inside the kernel between any two.
                if move is not _copy_range or exc.errno not in _CROSS_FS:
                    raise
                move = _send_range
                continue
            if n == 0:
                raise StagedFileMismatch(
                    f"the source ended after {copied} of {size} bytes", "the source changed: fetch again"
                )
            self._stream(src, dst, copied, n)
            copied += n
            self._pace(n)

    def copy(self, source: Path, folder: Path, entry: SourceFile) -> str | None:
        """Copy `source`/`entry.path` to `folder`/`entry.path`; its sha256 (None when neither verified nor needed).

        Raises StagedFileMismatch (the temporary file removed, the final name untouched) when the bytes are not the record's.
        """
        final = folder / entry.path
        final.parent.mkdir(parents=True, exist_ok=True)
        part = final.with_name(PART_PREFIX + final.name)
        hashing = self.verify or entry.sha256 is None
        src = os.open(source / entry.path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.posix_fadvise(src, 0, 0, os.POSIX_FADV_SEQUENTIAL)
            os.posix_fadvise(src, 0, READ_AHEAD, os.POSIX_FADV_WILLNEED)
            dst = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
            try:
                if hashing:
                    sha: str | None = self._hash_copy(src, dst, entry.size)
                else:
                    self._kernel_copy(src, dst, entry.size)
                    sha = entry.sha256
                os.fsync(dst)
            finally:
                os.close(dst)
            if entry.sha256 is not None and sha != entry.sha256:
                raise StagedFileMismatch(
                    f"{entry.path}: sha256 {sha} where the record lists {entry.sha256}",
                    "the source's copy is damaged: fetch the snapshot again (the prefetch), then stage",
                )
            os.replace(part, final)
            _fsync_dir(final.parent)
            return sha
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                part.unlink()
            raise
        finally:
            os.close(src)


#: What copy_file_range answers for a pair of files it does not copy between.
_CROSS_FS = frozenset({errno.EXDEV, errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP})


def _copy_range(src: int, dst: int, offset: int, count: int) -> int:
    return os.copy_file_range(src, dst, count, offset)


def _send_range(src: int, dst: int, offset: int, count: int) -> int:
    return os.sendfile(dst, src, offset, count)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def hash_file(path: Path, stop: threading.Event | None = None) -> str:
    """The sha256 of a file (a staged one, rechecked)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            if stop is not None and stop.is_set():
                raise StageStopped("the copy stopped: another copier failed or the run was interrupted")
            digest.update(chunk)
    return digest.hexdigest()
