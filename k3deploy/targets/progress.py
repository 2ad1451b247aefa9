"""How a rollout shows itself on stderr: a rich live table on a terminal, plain lines otherwise.

Plain mode prints a line only when an object's state changes, so logs of CI runs stay short.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from rich.live import Live
from rich.table import Table
from rich.text import Text

from k3deploy.console import err, is_interactive
from k3deploy.rollout.judge import Row as Row  # the view's row: the waiter's judgement makes them


def _elapsed(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class ProgressView:
    """Rows that change over time, plus notes; a context manager around a live table when interactive."""

    def __init__(self, interactive: bool | None = None) -> None:
        self.interactive = is_interactive() if interactive is None else interactive
        self._rows: list[Row] = []
        self._printed: dict[str, tuple[str, str]] = {}
        self._live: Any = None
        self._started = time.monotonic()

    def __enter__(self) -> ProgressView:
        if self.interactive:
            self._live = Live(get_renderable=self._table, console=err, refresh_per_second=4, transient=True)
            self._live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
            # Leave the final state on screen (the live table itself was transient).
            for row in self._rows:
                err.print(f"  {row.name}: {row.state} {row.detail}".rstrip(), markup=False, highlight=False)

    def _table(self) -> Any:
        table = Table("OBJECT", "STATE", "DETAIL", "FOR", box=None, pad_edge=False)
        now = time.monotonic()
        # Text, never markup strings: the console may have markup off, and names and details come from the
        # cluster (an image reference in brackets would otherwise vanish as an unknown tag).
        for row in self._rows:
            style = "green" if row.state in ("Ready", "Available", "Complete") else ("red" if row.state in _BAD else "")
            table.add_row(
                Text(row.name), Text(row.state, style=style), Text(row.detail), Text(_elapsed(now - row.since))
            )
        return table

    def note(self, text: str) -> None:
        """A line of its own (an apply result, a stage change, a re-list)."""
        if self._live is not None:
            self._live.console.print(text, markup=False, highlight=False)
        else:
            print(text, file=sys.stderr, flush=True)

    def show(self, rows: list[Row]) -> None:
        """Replace the rows; in plain mode print those whose state or detail changed."""
        self._rows = rows
        if self._live is not None:
            return
        for row in rows:
            shown = (row.state, row.detail)
            if self._printed.get(row.name) != shown:
                self._printed[row.name] = shown
                at = _elapsed(time.monotonic() - self._started)
                print(f"  [{at}] {row.name}: {row.state} {row.detail}".rstrip(), file=sys.stderr, flush=True)

    def block(self, lines: list[str]) -> None:
        """A multi-line block (a diagnosis), printed as is."""
        for line in lines:
            self.note(line)


_BAD = {
    "ImagePullBackOff",
    "ErrImagePull",
    "CrashLoopBackOff",
    "OOMKilled",
    "Unschedulable",
    "Failed",
    "Error",
    "BackoffLimitExceeded",
    "InvalidImageName",
    "CreateContainerConfigError",
    "ProvisioningFailed",
    "StorageClassNotFound",
    "NoDefaultStorageClass",
}
