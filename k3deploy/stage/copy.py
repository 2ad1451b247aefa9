"""Copy one file of a snapshot: into a temporary name beside its final one, hashed while it is read, fsynced, checked
against the sha256 it must have, and only then renamed to its final name, so a partial file never looks complete.

The copy is a pipeline per file: the copier reads chunk n+1 while a writer thread writes chunk n and a hasher
thread hashes it (hashlib and the I/O calls release the GIL), with direct I/O where both filesystems take it, so a
verified copy costs one pass of sha256 over the bytes and overlaps it with the disk. Without a hash to compute
and where direct I/O is not available the kernel copies (copy_file_range, else sendfile).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from k3deploy.errors import StagedFileMismatch, StageStopped
from k3deploy.stage import direct
from k3deploy.stage.plan import SourceFile
from k3deploy.stage.throttle import Throttle

#: The prefix of a file being copied; `stage` removes leftovers with it (a killed run's) from its own folder only.
PART_PREFIX = ".k3deploy-part."
#: Bytes read and written at a time: large enough for a disk's sequential rate, small enough for a smooth cap.
CHUNK = 8 * 1024 * 1024
#: Chunks of one file in flight (read, being written, being hashed): the buffers each copier holds.
DEPTH = 4
#: How far ahead of the reader a buffered source is asked for (WILLNEED): many reads in flight, as a network
#: volume and an NVMe disk both need to reach their rate.
READ_AHEAD = 8 * CHUNK


@dataclass
class Copier:
    """What every copy of a run shares: the cap, the progress callback, the stop flag, whether to hash, and whether
    to try direct I/O."""

    throttle: Throttle
    on_bytes: Callable[[int], None]
    stop: threading.Event
    verify: bool = True
    direct: bool = True

    @staticmethod
    def _stream(src: int, dst: int, done: int, n: int) -> None:
        """Buffered only: ask for the source's next window, and start writing back the chunk just written (DONTNEED
        writes dirty pages back, then drops them: the copy streams instead of piling up for the final fsync)."""
        if not direct.is_direct(src):
            os.posix_fadvise(src, done + n, READ_AHEAD, os.POSIX_FADV_WILLNEED)
        if not direct.is_direct(dst):
            os.posix_fadvise(dst, done, n, os.POSIX_FADV_DONTNEED)

    def _pace(self, nbytes: int) -> None:
        self.on_bytes(nbytes)
        wait = self.throttle.take(nbytes, time.monotonic())
        if wait > 0:
            self.stop.wait(wait)
        if self.stop.is_set():
            raise StageStopped("the copy stopped: another copier failed or the run was interrupted")

    def _write(self, src: int, dst: int, view: memoryview, offset: int) -> None:
        direct.write_at(dst, view, offset)
        self._stream(src, dst, offset, len(view))

    def _pipe_copy(self, src: int, dst: int, size: int, hash_update: Callable[[memoryview], None] | None) -> None:
        """Read, write and hash in step: DEPTH buffers, one writer and one hasher thread, each in the file's order."""
        buffers = [direct.buffer(CHUNK) for _ in range(DEPTH)]
        in_flight: deque[list[Future[None]]] = deque()
        copied, chunks = 0, 0
        with ThreadPoolExecutor(1, "stage-write") as writer, ThreadPoolExecutor(1, "stage-hash") as hasher:
            try:
                while True:
                    if len(in_flight) == DEPTH:  # the oldest chunk's buffer is the one to read into next
                        for future in in_flight.popleft():
                            future.result()
                    view = buffers[chunks % DEPTH]
                    n = direct.read_at(src, view, copied)
                    if n == 0:
                        break
                    chunk = view[:n]
                    steps = [writer.submit(self._write, src, dst, chunk, copied)]
                    if hash_update is not None:
                        steps.append(hasher.submit(hash_update, chunk))
                    in_flight.append(steps)
                    copied, chunks = copied + n, chunks + 1
                    self._pace(n)
                while in_flight:
                    for future in in_flight.popleft():
                        future.result()
            except BaseException:
                for steps in in_flight:
                    for future in steps:
                        future.cancel()
                raise
        if copied != size:
            raise StagedFileMismatch(
                f"read {copied} bytes where the record lists {size}", "the source changed: fetch again"
            )

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

    def _copy_bytes(self, src: int, dst: int, size: int, listed: str | None, hashing: bool) -> str | None:
        """Copy every byte; the sha256 computed (hashing), else the one listed."""
        both_direct = self.direct and all([direct.set_direct(src, True), direct.set_direct(dst, True)])
        if not hashing and not both_direct:
            for fd in (src, dst):
                direct.set_direct(fd, False)
        if not direct.is_direct(src):
            os.posix_fadvise(src, 0, 0, os.POSIX_FADV_SEQUENTIAL)
            os.posix_fadvise(src, 0, READ_AHEAD, os.POSIX_FADV_WILLNEED)
        if hashing:
            digest = hashlib.sha256()
            self._pipe_copy(src, dst, size, digest.update)
            return digest.hexdigest()
        if both_direct:
            self._pipe_copy(src, dst, size, None)
        else:
            self._kernel_copy(src, dst, size)
        return listed

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
            dst = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
            try:
                sha = self._copy_bytes(src, dst, entry.size, entry.sha256, hashing)
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
