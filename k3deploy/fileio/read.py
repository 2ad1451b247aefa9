"""Read a file the user named: only a regular file, streamed with a size cap, never read whole and then measured.

A path that names `/dev/zero`, `/dev/full`, a FIFO, a socket or a folder is refused before a byte is read (a
FIFO with no writer would block `open`, so the file is opened non-blocking and checked with `fstat` on the
descriptor opened, not on the path, which could change in between). A file larger than `cap` is refused after
reading `cap + 1` bytes at most.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from k3deploy.errors import K3DeployError, UsageError

_CHUNK = 1 << 16


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_capped(
    path: Path | str,
    cap: int,
    what: str,
    *,
    error: type[K3DeployError] = UsageError,
    hint: str | None = None,
) -> bytes:
    """The bytes of the regular file `path`, at most `cap` of them; `error` (one line, a hint) for anything else.

    `what` names the file in the message ("dataset", "bench report"). FileNotFoundError is raised as is, so a
    caller can say what a missing file means in its own words.
    """
    shown = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise error(f"cannot read the {what} {shown}: {exc.strerror or exc}", hint=hint or "check the path") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise error(
                f"the {what} {shown} is {_kind(info.st_mode)}, not a regular file",
                hint=hint or "pass a regular file",
            )
        chunks: list[bytes] = []
        size = 0
        while size <= cap:
            chunk = os.read(fd, min(_CHUNK, cap + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > cap:
            raise error(
                f"the {what} {shown} is larger than {_size(cap)}: stopped reading",
                hint=hint or f"pass a {what} under {_size(cap)}",
            )
        return b"".join(chunks)
    except OSError as exc:
        raise error(f"cannot read the {what} {shown}: {exc.strerror or exc}", hint=hint or "check the path") from None
    finally:
        os.close(fd)


def read_text_capped(
    path: Path | str,
    cap: int,
    what: str,
    *,
    error: type[K3DeployError] = UsageError,
    hint: str | None = None,
) -> str:
    """`read_capped` decoded as UTF-8; a file that is not UTF-8 is `error` too."""
    raw = read_capped(path, cap, what, error=error, hint=hint)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(
            f"the {what} {path} is not UTF-8 text (byte {exc.start})", hint=hint or "save it as UTF-8"
        ) from None


def _size(cap: int) -> str:
    if cap >= 1 << 20 and cap % (1 << 20) == 0:
        return f"{cap >> 20} MiB"
    if cap >= 1 << 10 and cap % (1 << 10) == 0:
        return f"{cap >> 10} KiB"
    return f"{cap} bytes"
