"""The record of the running local server (pid, port, argv and its hash), kept as JSON in the state directory.

A second `up` reads it to find the server instead of starting another; `status`, `down` and rollback use it.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from pydantic import BaseModel, ValidationError

from k3deploy.errors import EnvironmentProblem


class ServerRecord(BaseModel):
    """One started server: enough to find it, identify it (pid reuse), stop it and start it again."""

    profile: str
    pid: int
    create_time: float
    host: str
    port: int
    argv: list[str]
    env: dict[str, str]
    argv_hash: str
    log_path: str
    model_path: str
    rehearsal: bool
    started_at: str
    generation: int = 1


def read_record(path: Path) -> ServerRecord | None:
    """The record at `path`, or None when there is none (a corrupt file counts as none)."""
    try:
        return ServerRecord.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, ValidationError):
        return None


def write_record(path: Path, record: ServerRecord) -> None:
    """Write the record atomically (temporary file + rename), so a reader never sees half of it."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(record.model_dump_json(indent=2) + "\n")
        os.replace(tmp, path)
    except OSError as exc:
        raise EnvironmentProblem(f"cannot write {path}: {exc.strerror}", hint="check the state directory's permissions") from exc


def clear_record(path: Path) -> None:
    """Remove the record (nothing is running any more)."""
    path.unlink(missing_ok=True)
