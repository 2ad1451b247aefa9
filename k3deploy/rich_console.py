"""The rich Console k3deploy prints tables and messages through (k3deploy/console.py makes one on first use)."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console, ConsoleOptions, RenderableType
from rich.measure import Measurement
from rich.segment import Segment
from rich.table import Table

#: How wide a table written to a file or a pipe may grow: any real row fits; only a runaway one is folded.
MAX_NATURAL_WIDTH = 100_000


class RichConsole(Console):
    """A rich Console that lets a broken pipe reach the CLI's one handler (cli/__init__.py) instead of exiting 1,
    and that prints a table bound for a file or a pipe whole, each row on one line at its natural width, as
    `kubectl get` does (never folded at 80 columns, never cut with "…")."""

    def on_broken_pipe(self) -> None:
        """rich's documented hook; its default ends the process with exit code 1 ("a check failed" here)."""
        raise BrokenPipeError

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        """As rich renders it; a table bound for a file or a pipe gets the width its longest row needs (a script
        or a log must get every character, and `grep`/`awk` one row per line; rich renders nested renderables
        through here too). Past MAX_NATURAL_WIDTH a cell folds rather than being cut."""
        if isinstance(renderable, Table) and not self.is_terminal:
            for column in renderable.columns:
                if column.overflow == "ellipsis":
                    column.overflow = "fold"
            options = options or self.options
            natural = Measurement.get(self, options.update_width(MAX_NATURAL_WIDTH), renderable).maximum
            if natural > options.max_width:
                options = options.update_width(min(natural, MAX_NATURAL_WIDTH))
        return super().render(renderable, options)
