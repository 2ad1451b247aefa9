"""The Reporter's live table on a terminal (k3deploy/reporter.py): rows redrawn in place, notes scrolling above them,
and the final rows left on screen when it stops. The one Reporter module that loads rich."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.live import Live
from rich.table import Table
from rich.text import Text

from k3deploy.console import err

#: A row as shown: the object, its state, a detail, and for how long (`3m05s`).
Cells = tuple[str, str, str, str]

#: States shown in green: the object is where it should be.
_GOOD = {"Ready", "Available", "Complete"}
#: States shown in red: the object is stuck or failed.
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


def rows_table(rows: Sequence[Cells]) -> Table:
    """OBJECT, STATE, DETAIL, FOR: the rows as a table, states styled."""
    table = Table("OBJECT", "STATE", "DETAIL", "FOR", box=None, pad_edge=False)
    # Text, never markup strings: the console may have markup off, and names and details come from the
    # cluster (an image reference in brackets would otherwise vanish as an unknown tag).
    for name, state, detail, since in rows:
        style = "green" if state in _GOOD else ("red" if state in _BAD else "")
        table.add_row(Text(name), Text(state, style=style), Text(detail), Text(since))
    return table


class LiveTable:
    """A rich Live around `rows_table` of what `rows()` returns, on stderr, transient."""

    def __init__(self, rows: Callable[[], Sequence[Cells]]) -> None:
        self._rows = rows
        self._live = Live(get_renderable=lambda: rows_table(rows()), console=err, refresh_per_second=4, transient=True)

    def start(self) -> None:
        """Draw the table, redrawn four times a second until `stop`."""
        self._live.start()

    def print(self, text: str) -> None:
        """A line above the table, as text (never markup)."""
        self._live.console.print(text, markup=False, highlight=False)

    def stop(self) -> None:
        """Take the table down and leave the final rows on screen (the live table itself was transient)."""
        self._live.stop()
        for name, state, detail, _ in self._rows():
            err.print(f"  {name}: {state} {detail}".rstrip(), markup=False, highlight=False)
