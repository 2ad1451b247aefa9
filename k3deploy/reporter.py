"""One output object per command: what a stage says while it works goes through a `Reporter` (hatch's `Terminal`
and guidellm's progress hooks are the models), in place of a `note` callable, a progress view and prints of its own.

Plain lines on stderr with terminal controls escaped (console.plain), so text from a server or a cluster never
drives the terminal and rich is not loaded for them; data (tables, `-o json`) never goes through a Reporter. Rows
that change over time (a rollout's objects and pods) print as a line each time one changes, or, entered (`with`) on
a terminal, as a live table above which the notes scroll (k3deploy/live_table.py, the one place rich is loaded).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from k3deploy.console import is_interactive, plain

if TYPE_CHECKING:
    from k3deploy.live_table import LiveTable


class Shown(Protocol):
    """A row the Reporter shows (rollout/judge.py `Row`): an object or pod, its state, a detail and since when."""

    @property
    def name(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def detail(self) -> str: ...
    @property
    def since(self) -> float: ...


def elapsed(seconds: float) -> str:
    """`42s`, `3m05s` or `1h02m`: how long a row has been in its state, or the run has been going."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class Reporter:
    """Where a command's progress and warnings go. `quiet` (`-o json`, a script) keeps progress off, never warnings
    nor what the command `say`s; `interactive` (default: stderr is a terminal) lets a `with` block show a live table."""

    def __init__(self, quiet: bool = False, interactive: bool | None = None) -> None:
        self.quiet = quiet
        self.interactive = is_interactive() if interactive is None else interactive
        self._rows: Sequence[Shown] = []
        self._printed: dict[str, tuple[str, str]] = {}
        self._live: LiveTable | None = None
        self._started = time.monotonic()

    def __enter__(self) -> Reporter:
        if self.interactive and not self.quiet:
            # rich is loaded here, by a command that shows rows on a terminal.
            from k3deploy.live_table import LiveTable

            self._live = LiveTable(self.cells)
            self._live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def _line(self, text: str) -> None:
        if self._live is not None:
            self._live.print(text)
        else:
            plain(text)

    def note(self, text: str) -> None:
        """A progress line: a stage begun, an apply result, a variant served. Nothing when quiet."""
        if not self.quiet:
            self._line(text)

    def warn(self, text: str) -> None:
        """`warning: text`, quiet or not: something went wrong that the command goes on past."""
        self._line(f"warning: {text}")

    def say(self, text: str) -> None:
        """A line the command reports whatever the output format (a run's summary, what `down` did): quiet or not."""
        self._line(text)

    def block(self, lines: Sequence[str]) -> None:
        """A multi-line block (a diagnosis, a log's last lines), a note per line."""
        for line in lines:
            self.note(line)

    def cells(self) -> list[tuple[str, str, str, str]]:
        """The rows as the live table shows them: name, state, detail, and for how long (`3m05s`)."""
        now = time.monotonic()
        return [(row.name, row.state, row.detail, elapsed(now - row.since)) for row in self._rows]

    def show(self, rows: Sequence[Shown]) -> None:
        """Replace the rows: the live table redraws them; without one, a line for each row whose state or detail
        changed (so a CI log stays short). Nothing when quiet."""
        self._rows = rows
        if self._live is not None or self.quiet:
            return
        for row in rows:
            shown = (row.state, row.detail)
            if self._printed.get(row.name) != shown:
                self._printed[row.name] = shown
                at = elapsed(time.monotonic() - self._started)
                plain(f"  [{at}] {row.name}: {row.state} {row.detail}".rstrip())
