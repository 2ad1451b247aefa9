"""DEST's bookkeeping: a lock (one `stage` per DEST), a journal per staged folder (each file appended once it is
renamed into place, so a killed run resumes), the record and the marker (each written to a temporary name,
fsynced and renamed: atomic), and the proof that a folder is k3deploy's.

DEST/
  .k3deploy-stage/lock, .k3deploy-stage/<name>.journal
  <name>/                      the staged snapshot
  <name>.sha256.json           its record
  <name>.k3deploy-staged.json  its marker, written last
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
from collections.abc import Iterator
from pathlib import Path

from k3deploy.errors import EnvironmentProblem, UsageError
from k3deploy.stage.record import FileEntry, Marker, marker_data, marker_from_text
from k3deploy.stage.source import RECORD_SUFFIX

STATE_DIR = ".k3deploy-stage"
MARKER_SUFFIX = ".k3deploy-staged.json"
_MARKER_CAP = 1 << 20


def state_dir(dest: Path) -> Path:
    """DEST's bookkeeping folder."""
    return dest / STATE_DIR


def journal_path(dest: Path, name: str) -> Path:
    """The journal of the folder `name`."""
    return state_dir(dest) / f"{name}.journal"


def marker_path(dest: Path, name: str) -> Path:
    """The marker of the folder `name`."""
    return dest / f"{name}{MARKER_SUFFIX}"


def record_path(dest: Path, name: str) -> Path:
    """The record written beside the folder `name`."""
    return dest / f"{name}{RECORD_SUFFIX}"


@contextlib.contextmanager
def locked(dest: Path) -> Iterator[None]:
    """Hold DEST's lock for the run; another `stage` on the same DEST is refused (exit 3), not waited for."""
    state_dir(dest).mkdir(parents=True, exist_ok=True)
    fd = os.open(state_dir(dest) / "lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                raise EnvironmentProblem(
                    f"another `k3deploy stage` is copying into {dest}", "wait for it to finish, then run again"
                ) from None
            raise
        yield
    finally:
        os.close(fd)


def read_marker(dest: Path, name: str) -> Marker | None:
    """The marker of `name`, or None (absent, damaged, a link, or not k3deploy's)."""
    path = marker_path(dest, name)
    if path.is_symlink() or not path.is_file() or path.stat().st_size > _MARKER_CAP:
        return None
    marker = marker_from_text(path.read_text(encoding="utf-8", errors="replace"))
    return marker if marker is not None and marker.name == name else None


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to a temporary name beside `path`, fsync it, rename it over `path`, fsync the folder."""
    part = path.with_name(f".{path.name}.part")
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
    try:
        os.write(fd, text.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(part, path)
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def write_marker(dest: Path, marker: Marker) -> None:
    """Write the marker, last, atomically."""
    write_atomic(marker_path(dest, marker.name), json.dumps(marker_data(marker), indent=2) + "\n")


def drop_marker(dest: Path, name: str) -> None:
    """Remove the marker of `name` (before its folder changes, so it never looks complete meanwhile)."""
    with contextlib.suppress(FileNotFoundError):
        marker_path(dest, name).unlink()


def claim(dest: Path, name: str) -> None:
    """Make the folder `name` k3deploy's: its journal first (the proof), then the folder. A folder that exists with
    neither journal nor marker was not made by k3deploy and is refused (exit 2)."""
    folder, journal = dest / name, journal_path(dest, name)
    ours = journal.is_file() or read_marker(dest, name) is not None
    if (folder.exists() or folder.is_symlink()) and not ours:
        raise UsageError(
            f"{folder} exists and k3deploy did not stage it", "stage into another DEST, or name the copy with --name"
        )
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise UsageError(f"{folder} is not a folder", "stage into another DEST, or name the copy with --name")
    journal.touch(exist_ok=True)
    folder.mkdir(exist_ok=True)


def read_journal(dest: Path, name: str) -> dict[str, FileEntry]:
    """The files a previous run finished (relative path -> entry); a line cut by a kill is ignored."""
    entries: dict[str, FileEntry] = {}
    path = journal_path(dest, name)
    if not path.is_file():
        return entries
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            data = json.loads(line)
            entries[data["path"]] = FileEntry(str(data["path"]), int(data["size"]), str(data["sha256"]))
        except (ValueError, KeyError, TypeError):
            continue
    return entries


def append_journal(dest: Path, name: str, entry: FileEntry) -> None:
    """Record one finished file (after its rename), flushed to disk."""
    line = json.dumps({"path": entry.path, "size": entry.size, "sha256": entry.sha256}) + "\n"
    fd = os.open(journal_path(dest, name), os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW)
    try:
        os.write(fd, line.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)


def reset_journal(dest: Path, name: str) -> None:
    """Forget what a previous run finished (its copy was of another revision)."""
    write_atomic(journal_path(dest, name), "")
