"""The record of the running local server (pid, port, argv and its hash), kept as JSON in the state directory.

A second `up` reads it to find the server instead of starting another; `status`, `down` and rollback use it.
The file is written atomically (temporary file, fsync, rename), and a record that does not validate (a
truncated file, a pid that cannot be a server's) is reported as unreadable, never trusted.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from k3deploy.errors import EnvironmentProblem, K3DeployError
from k3deploy.fileio.read import read_text_capped

#: Linux's largest pid_max (2**22): a recorded pid outside 2..PID_MAX was not written by k3deploy.
PID_MAX = 4_194_304
#: A record is a few KiB (argv and env); anything larger was not written by k3deploy.
MAX_RECORD_BYTES = 1 << 20


class ServerRecord(BaseModel):
    """One started server: enough to find it, identify it (pid reuse), stop it and start it again."""

    profile: str
    pid: int = Field(ge=2, le=PID_MAX)
    create_time: float = Field(gt=0, allow_inf_nan=False)
    host: str
    port: int = Field(ge=1, le=65535)
    argv: list[str] = Field(min_length=1)
    env: dict[str, str]
    argv_hash: str
    log_path: str
    model_path: str
    rehearsal: bool
    started_at: str
    generation: int = 1
    #: A random id put in the server's environment (K3DEPLOY_SERVER_ID): proof that a process is this server.
    server_id: str | None = None
    #: True when the record was rebuilt from the running process because the file was unreadable.
    recovered: bool = False


class Unreadable:
    """A record file that exists but does not hold a valid record; `why` says what is wrong."""

    def __init__(self, why: str) -> None:
        self.why = why


def read_record_or_error(path: Path) -> ServerRecord | Unreadable | None:
    """The record at `path`; None when there is none; `Unreadable` when the file is there but corrupt."""
    try:
        text = read_text_capped(path, MAX_RECORD_BYTES, "server record", error=EnvironmentProblem)
    except FileNotFoundError:
        return None
    except K3DeployError as exc:  # a device, a FIFO, a folder or a huge file in its place: never read on
        return Unreadable(exc.message)
    try:
        return ServerRecord.model_validate(json.loads(text))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the record"
        return Unreadable(f"{path} is not a valid record ({where}: {first['msg']})")
    except ValueError as exc:
        return Unreadable(f"{path} is not a valid record (not JSON: {exc})")


def read_record(path: Path) -> ServerRecord | None:
    """The record at `path`, or None when there is none or it is unreadable."""
    record = read_record_or_error(path)
    return record if isinstance(record, ServerRecord) else None


def atomic_write_text(path: Path, text: str) -> None:
    """Write `text` to `path` so a reader sees the old file or the whole new one, never half (even after a crash)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # make the rename itself durable
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def write_record(path: Path, record: ServerRecord) -> None:
    """Write the record atomically, so a reader never sees half of it."""
    try:
        atomic_write_text(path, record.model_dump_json(indent=2, exclude={"recovered"}) + "\n")
    except OSError as exc:
        raise EnvironmentProblem(
            f"cannot write {path}: {exc.strerror}", hint="check the state directory's permissions"
        ) from exc


def clear_record(path: Path) -> None:
    """Remove the record (nothing is running any more)."""
    path.unlink(missing_ok=True)
