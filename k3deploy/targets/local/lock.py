"""One k3deploy command at a time per state directory: an exclusive `flock` held for the whole command.

The lock file holds the holder's pid (for the error message) and is removed on release. Removing a lock file
races with a second process that opened it before the removal; so after locking, the holder checks that the
path still names the file it locked, and starts over otherwise. The kernel drops a flock when its holder
dies, however it dies, so a crashed command never leaves the directory locked.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from k3deploy.errors import EnvironmentProblem, K3DeployError
from k3deploy.fileio.read import read_text_capped
from k3deploy.targets.local.process import signals_deferred

LOCK_FILE = "k3deploy.lock"


def _holder(path: Path) -> str:
    with contextlib.suppress(K3DeployError, OSError, ValueError):
        pid = int(read_text_capped(path, 64, "lock file").strip())
        return f"pid {pid}"
    return "another process"


@contextlib.contextmanager
def locked(state_dir: Path, what: str) -> Iterator[None]:
    """Hold the state directory's lock for the block; EnvironmentProblem (exit 3) at once when another holds it."""
    path = state_dir / LOCK_FILE
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EnvironmentProblem(
            f"cannot create the state directory {state_dir}: {exc.strerror}",
            hint="check its permissions, or set local.state_dir",
        ) from exc
    with signals_deferred():  # a lock file made but not yet in the try below would be left behind
        fd = _acquire(path, state_dir, what)
    try:
        yield
    finally:
        with signals_deferred():
            with contextlib.suppress(OSError):
                os.unlink(path)
            os.close(fd)


def _acquire(path: Path, state_dir: Path, what: str) -> int:
    """The locked file descriptor of `path`, holding this process's pid."""
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise EnvironmentProblem(
                f"cannot open the lock file {path}: {exc.strerror}", hint="check the state directory's permissions"
            ) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise EnvironmentProblem(
                f"another k3deploy command ({_holder(path)}) is using {state_dir}; not starting {what}",
                hint="wait for it to finish (or interrupt it), then run this again",
            ) from None
        try:
            same = os.stat(path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            return fd
        os.close(fd)  # the holder before us removed it after we opened it: lock the current file instead
