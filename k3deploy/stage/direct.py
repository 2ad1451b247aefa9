"""Direct I/O for the copier: page-aligned buffers, O_DIRECT turned on where a filesystem takes it and off again
where a read or write cannot be aligned, and positioned reads and writes that go on after a short one.

Why direct: a buffered copy moves every byte through the page cache twice (the source's pages copied into the
process, the process's bytes copied into the destination's pages), which costs as much CPU as the sha256 does; with
O_DIRECT the disk reads into the buffer and writes from it, so the only pass over the bytes is the hash.
"""

from __future__ import annotations

import errno
import fcntl
import mmap
import os

#: The alignment O_DIRECT wants of offsets, lengths and buffer addresses: 4096 covers disks of 512 and 4K sectors.
ALIGN = 4096


def buffer(size: int) -> memoryview:
    """A writable buffer of `size` bytes at a page-aligned address (an anonymous mapping)."""
    return memoryview(mmap.mmap(-1, size))


def set_direct(fd: int, on: bool) -> bool:
    """Turn O_DIRECT on or off for `fd`; whether it is on after (a filesystem without direct I/O says EINVAL)."""
    flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    wanted = flags | os.O_DIRECT if on else flags & ~os.O_DIRECT
    if wanted != flags:
        try:
            fcntl.fcntl(fd, fcntl.F_SETFL, wanted)
        except OSError as exc:
            if exc.errno != errno.EINVAL:
                raise
    return is_direct(fd)


def is_direct(fd: int) -> bool:
    """Whether `fd` does direct I/O."""
    return bool(fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_DIRECT)


def _aligned(offset: int, length: int) -> bool:
    return offset % ALIGN == 0 and length % ALIGN == 0


def read_at(fd: int, view: memoryview, offset: int) -> int:
    """Read up to len(view) bytes at `offset` into `view`; 0 at the end of the file. A direct read at an unaligned
    offset (after a short read) or one the filesystem refuses goes on buffered."""
    if is_direct(fd) and not _aligned(offset, len(view)):
        set_direct(fd, False)
    try:
        return os.preadv(fd, [view], offset)
    except OSError as exc:
        if exc.errno != errno.EINVAL or not is_direct(fd):
            raise
        set_direct(fd, False)
        return os.preadv(fd, [view], offset)


def write_at(fd: int, view: memoryview, offset: int) -> None:
    """Write all of `view` at `offset`. With O_DIRECT the aligned head goes direct and an unaligned tail (a file's
    last bytes) buffered; a write the filesystem refuses goes on buffered."""
    done, length = 0, len(view)
    while done < length:
        rest = length - done
        if is_direct(fd) and not _aligned(offset + done, rest):
            head = rest - rest % ALIGN if (offset + done) % ALIGN == 0 else 0
            if head == 0:
                set_direct(fd, False)
                continue
            rest = head
        try:
            done += os.pwrite(fd, view[done : done + rest], offset + done)
        except OSError as exc:
            if exc.errno != errno.EINVAL or not is_direct(fd):
                raise
            set_direct(fd, False)
