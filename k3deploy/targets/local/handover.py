"""Make before break: a running server on another port keeps serving until its replacement is ready.

When `up`/`apply` moves the server to another port (and waits for readiness), the new server starts beside the old
one; the old one is stopped only once the new one answers `/health` from its own socket. If the new one never gets
there (a failure, a timeout, Ctrl-C), it is stopped and the old one's record is put back, so the endpoint never went
away. On the same port the two cannot run side by side: the old server is stopped first, as before.

The handover is kept in the state directory (`handover.json`, the old server's record) from the apply that begins it
to the wait that ends it: the target holds nothing between its calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from k3deploy.targets.local import process
from k3deploy.targets.local.state import ServerRecord, clear_record, read_record, write_record

#: The record of the server that keeps serving while its replacement starts, beside the server's own record.
HANDOVER_FILE = "handover.json"


def _identity(record: ServerRecord) -> process.Identity:
    return process.Identity(record.pid, record.create_time, tuple(record.argv), record.server_id)


@dataclass(frozen=True)
class Handover:
    """The server that keeps serving while its replacement (on another port) starts."""

    old: ServerRecord
    record_path: Path

    @property
    def path(self) -> Path:
        """Where the handover is kept until the replacement is ready or abandoned."""
        return self.record_path.parent / HANDOVER_FILE

    def finish(self) -> str:
        """The new server is ready: stop the old one; what was done, in words."""
        stopped = process.stop(_identity(self.old))
        clear_record(self.path)
        state = "stopped" if stopped else "found already gone"
        return f"the previous server (pid {self.old.pid}, port {self.old.port}) {state} once the new one was ready"

    def abandon(self, new: ServerRecord | None) -> None:
        """The new server did not get ready: stop it and record the old one again, which never stopped serving."""
        if new is not None:
            process.stop(_identity(new))
        write_record(self.record_path, self.old)
        clear_record(self.path)


def handover_for(old: ServerRecord | None, port: int, options: Any, record_path: Path) -> Handover | None:
    """Begin a Handover when the new server can start beside the running `old` one: another port, and readiness
    awaited (without --wait nothing would stop the old server later); kept in the state directory for the wait."""
    stale = record_path.parent / HANDOVER_FILE
    if old is None or old.port == port or not getattr(options, "wait", True) or not process.is_ours(_identity(old)):
        clear_record(stale)
        return None
    handover = Handover(old, record_path)
    write_record(handover.path, old)
    return handover


def pending(record_path: Path) -> Handover | None:
    """The handover the last apply began and no wait has ended yet, or None."""
    old = read_record(record_path.parent / HANDOVER_FILE)
    return Handover(old, record_path) if old is not None else None
