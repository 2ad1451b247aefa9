"""Write a rendered file set into a folder without ever touching a file k3deploy did not write.

The folder keeps a record of what k3deploy wrote there (`.k3deploy-render.json`: file name -> sha256 of the
bytes written). A new render:

1. refuses (UsageError, exit 2) when a file it would write exists and is not one it wrote, unchanged since
   (a user's `kustomization.yaml`, a hand-edited manifest), unless `force`; refuses a symlink, a folder or any
   other non-regular file in the way, and a symlinked output folder, always;
2. writes the complete new set into a staging folder inside the output folder (same file system, so each file
   is then moved into place with one atomic rename), so a render that fails leaves the previous set untouched;
3. moves the files in, removes the files of the previous set that the new one lacks (only if unchanged
   since written: an edited one is left where it is and reported), and writes the new record last.

Every path is opened relative to a descriptor of the output folder with O_NOFOLLOW, and every name is one
path component, so nothing is written outside the folder or through a symlink. While files move, the record
lists both the new and the previous digests, so a run killed half-way leaves a folder the next run accepts.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import secrets
import signal
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from k3deploy.errors import EnvironmentProblem, UsageError
from k3deploy.kobject import JsonObject

#: The record of what k3deploy wrote into an output folder.
RECORD = ".k3deploy-render.json"
_STAGING_PREFIX = ".k3deploy-staging-"
_GENERATOR = "k3deploy render"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
_CHUNK = 1 << 20
#: A record larger than this is not one k3deploy wrote (it holds a line per file).
_MAX_RECORD_BYTES = 1 << 20


@dataclass
class WriteResult:
    """What a write did: files written, stale files removed, stale files kept because they were edited."""

    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)


def sha256(text: str) -> str:
    """Hex sha256 of the UTF-8 bytes of `text` (what is written to disk)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def record_text(files: dict[str, str], previous: dict[str, str] | None = None) -> str:
    """The record for `files` (name -> content): deterministic JSON, so equal sets give equal bytes."""
    data: JsonObject = {
        "generator": _GENERATOR,
        "files": {name: sha256(text) for name, text in sorted(files.items())},
    }
    if previous:
        data["previous"] = dict(sorted(previous.items()))
    return json.dumps(data, indent=2) + "\n"


def _check_name(name: str) -> None:
    if not name or name in (".", "..") or "/" in name or "\0" in name or name.startswith(_STAGING_PREFIX):
        raise ValueError(f"not a plain file name: {name!r}")


def _lstat(name: str, dfd: int) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _read(name: str, dfd: int) -> bytes:
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dfd)
    try:
        chunks = []
        while chunk := os.read(fd, _CHUNK):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _file_sha(name: str, dfd: int) -> str:
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dfd)
    digest = hashlib.sha256()
    try:
        while chunk := os.read(fd, _CHUNK):
            digest.update(chunk)
    finally:
        os.close(fd)
    return digest.hexdigest()


def _parse_record(raw: bytes) -> dict[str, set[str]] | None:
    """name -> accepted digests from a record; None when it is not a record k3deploy wrote."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("generator") != _GENERATOR:
        return None
    owned: dict[str, set[str]] = {}
    for key in ("files", "previous"):
        entries = data.get(key, {})
        if not isinstance(entries, dict):
            return None
        for name, digest in entries.items():
            if not isinstance(name, str) or not isinstance(digest, str):
                return None
            owned.setdefault(name, set()).add(digest)
    return owned


def _write_new(name: str, text: str, dfd: int) -> None:
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666, dir_fd=dfd)
    try:
        data = text.encode("utf-8")
        while data:
            data = data[os.write(fd, data) :]
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """While the set is written, SIGTERM raises KeyboardInterrupt, so the staging folder is removed on the way out."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def _staging(dfd: int) -> Iterator[int]:
    """A fresh private folder inside the output folder; removed with whatever is left in it."""
    name = _STAGING_PREFIX + secrets.token_hex(8)
    os.mkdir(name, 0o700, dir_fd=dfd)
    sfd = os.open(name, _DIR_FLAGS, dir_fd=dfd)
    try:
        yield sfd
    finally:
        for left in os.listdir(sfd):  # only files this run created: the folder is new and private
            os.unlink(left, dir_fd=sfd)
        os.close(sfd)
        os.rmdir(name, dir_fd=dfd)


def _open_output(directory: Path) -> int:
    """A descriptor of the output folder, created when missing; a symlink or a non-folder is refused."""
    shown = str(directory)
    try:
        info = os.lstat(directory)
    except FileNotFoundError:
        info = None
    if info is not None and stat.S_ISLNK(info.st_mode):
        raise UsageError(
            f"--output {shown!r} is a symbolic link; k3deploy writes only into a real folder",
            hint="pass the folder the link points to, or another path",
        )
    if info is not None and not stat.S_ISDIR(info.st_mode):
        raise UsageError(
            f"--output {shown!r} exists and is not a directory", hint="pass a directory, or '-' for stdout"
        )
    if info is None:
        os.makedirs(directory, exist_ok=True)
    try:
        return os.open(directory, _DIR_FLAGS)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UsageError(
                f"--output {shown!r} is a symbolic link; k3deploy writes only into a real folder",
                hint="pass the folder the link points to, or another path",
            ) from None
        raise


@dataclass
class _Plan:
    on_disk: dict[str, str]
    """name -> digest of each file of k3deploy's, unchanged, that this write replaces or removes."""
    removable: list[str]
    kept: list[str]


def _plan(files: dict[str, str], dfd: int, force: bool, shown: str) -> _Plan:
    """Decide by reading only; refuse before anything is written."""
    record_info = _lstat(RECORD, dfd)
    owned: dict[str, set[str]] | None = {}
    if record_info is not None:
        readable = stat.S_ISREG(record_info.st_mode) and record_info.st_size <= _MAX_RECORD_BYTES
        owned = _parse_record(_read(RECORD, dfd)) if readable else None
    blocked, foreign, on_disk = [], [], {}
    for name in [*files, RECORD]:
        info = _lstat(name, dfd)
        if info is None:
            continue
        if not stat.S_ISREG(info.st_mode):
            blocked.append(name)
        elif name == RECORD:
            if owned is None:
                foreign.append(name)
        else:
            digest = _file_sha(name, dfd)
            if digest in (owned or {}).get(name, set()):
                on_disk[name] = digest
            else:
                foreign.append(name)
    if blocked:
        raise UsageError(
            f"--output {shown!r}: {_names(blocked)} in the way: not a regular file (a symlink or a folder)",
            hint="k3deploy never writes through a symlink; move them away",
        )
    if foreign and not force:
        raise UsageError(
            f"--output {shown!r}: refusing to overwrite {_names(foreign)}: not written by k3deploy, or changed since",
            hint="move them away, or pass --force to overwrite them",
        )
    removable, kept = [], []
    for name in sorted(set(owned or {}) - set(files) - {RECORD}):
        try:
            _check_name(name)
        except ValueError:
            continue  # a record naming a path is not k3deploy's: nothing but plain names in the folder is touched
        info = _lstat(name, dfd)
        if info is None:
            continue
        sha = _file_sha(name, dfd) if stat.S_ISREG(info.st_mode) else None
        if sha is not None and sha in (owned or {})[name]:
            removable.append(name)
            on_disk[name] = sha
        else:
            kept.append(name)
    return _Plan(on_disk, removable, kept)


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return f"{len(names)} file{'s' if len(names) != 1 else ''} ({shown})"


def write_set(directory: Path, files: dict[str, str], *, force: bool = False) -> WriteResult:
    """Write `files` (name -> text) into `directory` as described in the module docstring."""
    for name in files:
        _check_name(name)
        if name.startswith(RECORD):
            raise ValueError(f"{name!r} is the record's own name")
    shown = str(directory)
    try:
        dfd = _open_output(directory)
    except OSError as exc:
        raise EnvironmentProblem(
            f"cannot create {shown!r}: {exc.strerror or exc}", hint="check the path and its permissions"
        ) from None
    try:
        plan = _plan(files, dfd, force, shown)
        with _terminate_as_interrupt(), _staging(dfd) as sfd:
            for name, text in files.items():
                _write_new(name, text, sfd)
            _write_new(RECORD + ".pending", record_text(files, plan.on_disk), sfd)
            _write_new(RECORD, record_text(files), sfd)
            os.replace(RECORD + ".pending", RECORD, src_dir_fd=sfd, dst_dir_fd=dfd)
            for name in files:
                os.replace(name, name, src_dir_fd=sfd, dst_dir_fd=dfd)
            for name in plan.removable:
                os.unlink(name, dir_fd=dfd)
            os.replace(RECORD, RECORD, src_dir_fd=sfd, dst_dir_fd=dfd)
        os.fsync(dfd)
    except OSError as exc:
        raise EnvironmentProblem(
            f"cannot write to {shown!r}: {exc.strerror or exc}", hint="check the path and its permissions"
        ) from None
    finally:
        os.close(dfd)
    return WriteResult(written=list(files), removed=plan.removable, kept=plan.kept)
