"""Write one output file (`smoke --report`, `bench --report/--html/--png`, `pin -o`) the way `render -o` writes a set.

The rules (render/output_dir.py's, for a single file):

1. an existing file is replaced only when k3deploy wrote it and it is unchanged since, unless `force`: the
   folder keeps a record of the files written there (`.k3deploy-written.json`: name -> sha256 of the bytes);
2. a symlink, a folder, a device (`/dev/zero`, `/dev/full`), a FIFO or any other non-regular file in the way is
   refused always, `force` or not: nothing is ever written through a link or into a special file;
3. the bytes go to a fresh temporary file in the same folder, fsynced, then renamed over the name, so a full
   disk or a kill leaves the previous file whole;
4. two outputs of one command never name one file (`bench --report r.json --csv r.json`): the last written
   would silently replace the first; `distinct` refuses that before the run, and an output that names one of
   the command's own input files.

`check_output` applies rules 1-2 before the command's long run (a bench of an hour must not end in "refusing to
overwrite"); `write_output` applies them again just before the rename, since the folder may change meanwhile.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from k3deploy.errors import EnvironmentProblem, UsageError

#: The record of the single files k3deploy wrote into a folder.
RECORD = ".k3deploy-written.json"
_GENERATOR = "k3deploy"
_TEMP_PREFIX = ".k3deploy-tmp-"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_MAX_RECORD_BYTES = 1 << 20
_CHUNK = 1 << 20


@dataclass(frozen=True)
class OutputFile:
    """A checked output path: the folder it goes in, its name there, the flag that named it, and `force`."""

    path: Path
    flag: str
    force: bool

    @property
    def folder(self) -> Path:
        """The folder the file goes in."""
        return self.path.parent

    @property
    def name(self) -> str:
        """The file's name inside its folder."""
        return self.path.name


def _digest_fd(fd: int) -> str:
    digest = hashlib.sha256()
    while chunk := os.read(fd, _CHUNK):
        digest.update(chunk)
    return digest.hexdigest()


def _file_sha(name: str, dfd: int) -> str | None:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
    except OSError:
        return None
    try:
        return _digest_fd(fd) if stat.S_ISREG(os.fstat(fd).st_mode) else None
    finally:
        os.close(fd)


def _record(dfd: int) -> dict[str, str] | None:
    """name -> sha256 from the folder's record; {} without one; None when the file there is not k3deploy's record."""
    try:
        fd = os.open(RECORD, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
    except FileNotFoundError:
        return {}
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_RECORD_BYTES:
            return None
        raw = os.read(fd, _MAX_RECORD_BYTES + 1)
    finally:
        os.close(fd)
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or data.get("generator") != _GENERATOR or not isinstance(data.get("files"), dict):
        return None
    files = data["files"]
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
        return None
    return dict(files)


def _open_folder(out: OutputFile) -> int:
    shown = f"{out.flag} {out.path}"
    try:
        return os.open(out.folder, _DIR_FLAGS)
    except FileNotFoundError:
        raise UsageError(
            f"{shown}: folder {out.folder} does not exist", hint="create it, or pick another path"
        ) from None
    except NotADirectoryError:
        raise UsageError(f"{shown}: {out.folder} is not a folder", hint="pick another path") from None
    except OSError as exc:
        raise EnvironmentProblem(
            f"{shown}: cannot open folder {out.folder}: {exc.strerror or exc}", hint="check its permissions"
        ) from None


def _vet(out: OutputFile, dfd: int) -> None:
    """Refuse what rules 1-2 refuse; return quietly when the name is free or replaceable."""
    shown = f"{out.flag} {out.path}"
    try:
        info = os.stat(out.name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode):
        raise UsageError(
            f"{shown} is a symbolic link; k3deploy never writes through one",
            hint="pass the real file name, or another path",
        )
    if not stat.S_ISREG(info.st_mode):
        kind = "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file (a device, a FIFO or a socket)"
        raise UsageError(f"{shown} is {kind}; k3deploy writes only regular files", hint="name a file, or another path")
    if out.force:
        return
    owned = (_record(dfd) or {}).get(out.name)
    if owned is None or owned != _file_sha(out.name, dfd):
        raise UsageError(
            f"{shown}: refusing to overwrite {out.path}: not written by k3deploy, or changed since",
            hint="pick another path, or pass --force to overwrite it",
        )


def check_output(path: Path | str, flag: str, *, force: bool = False) -> OutputFile:
    """Check `path` can be written by the rules above (UsageError, exit 2, when not), before any long work."""
    text = str(path)
    if not text.strip():
        raise UsageError(f"{flag} is empty", hint="name a file")
    out = OutputFile(Path(text), flag, force)
    if text.endswith(os.sep) or out.name in ("", ".", "..") or out.name.startswith((_TEMP_PREFIX, RECORD)):
        raise UsageError(f"{flag} {text}: not a file name", hint="name a file, e.g. report.json")
    dfd = _open_folder(out)
    try:
        _vet(out, dfd)
        if not os.access(out.folder, os.W_OK | os.X_OK):
            raise EnvironmentProblem(
                f"{flag} {text}: folder {out.folder} is not writable",
                hint="check its permissions, or pick another path",
            )
    finally:
        os.close(dfd)
    return out


def _identity(path: Path) -> tuple[int, int, str]:
    """The file a path names: its folder's device and inode (so `./r.json`, `d/../r.json` and a linked folder
    agree) and its name there; a file that exists is named by its own device and inode (a hard link too)."""
    with contextlib.suppress(OSError):
        info = os.stat(path)
        if stat.S_ISREG(info.st_mode):
            return info.st_dev, info.st_ino, ""
    try:
        folder = os.stat(path.parent)
    except OSError:
        return -1, -1, os.path.abspath(path)
    return folder.st_dev, folder.st_ino, path.name


def distinct(outputs: list[OutputFile], inputs: tuple[tuple[str, Path], ...] = ()) -> None:
    """Refuse (UsageError, exit 2) two outputs on one file, or an output on one of the command's inputs (rule 4)."""
    seen: dict[tuple[int, int, str], str] = {_identity(path): f"{label} {path}" for label, path in inputs}
    for out in outputs:
        key = _identity(out.path)
        shown = f"{out.flag} {out.path}"
        if key in seen:
            raise UsageError(
                f"{shown} and {seen[key]} name the same file; one would replace the other",
                hint="give each output its own path",
            )
        seen[key] = shown


def _write_new(name: str, data: bytes, dfd: int) -> None:
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=dfd)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def _replace(name: str, data: bytes, dfd: int) -> None:
    """Write `data` under `name` in the folder through a temporary file and one rename; the temporary never stays."""
    temp = f"{_TEMP_PREFIX}{secrets.token_hex(6)}"
    try:
        _write_new(temp, data, dfd)
        os.replace(temp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=dfd)
        raise


def write_output(out: OutputFile, content: bytes | str) -> None:
    """Write `content` to the checked `out`: the rules checked again, then temporary file, rename, record."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    dfd = _open_folder(out)
    try:
        fcntl.flock(dfd, fcntl.LOCK_EX)  # two k3deploy runs writing into one folder keep one record
        _vet(out, dfd)
        _replace(out.name, data, dfd)
        record = _record(dfd)
        if record is not None:  # a foreign file named like the record is left alone (and the file stays unowned)
            record[out.name] = hashlib.sha256(data).hexdigest()
            text = json.dumps({"generator": _GENERATOR, "files": dict(sorted(record.items()))}, indent=2) + "\n"
            _replace(RECORD, text.encode("utf-8"), dfd)
        os.fsync(dfd)
    except OSError as exc:
        hint = "free some space; the previous file is untouched" if exc.errno == errno.ENOSPC else "check the path"
        raise EnvironmentProblem(f"cannot write {out.flag} {out.path}: {exc.strerror or exc}", hint=hint) from None
    finally:
        os.close(dfd)
