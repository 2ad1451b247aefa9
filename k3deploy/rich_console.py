"""The rich Console k3deploy prints tables and messages through (k3deploy/console.py makes one on first use)."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.table import Table


class RichConsole(Console):
    """A rich Console that lets a broken pipe reach the CLI's one handler (cli/__init__.py) instead of exiting 1,
    and that never cuts a table's cell with "…" when it does not write to a terminal."""

    def on_broken_pipe(self) -> None:
        """rich's documented hook; its default ends the process with exit code 1 ("a check failed" here)."""
        raise BrokenPipeError

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        """As rich renders it; a table bound for a file or a pipe folds what does not fit instead of cutting it
        (a script or a log must get every character; rich renders nested renderables through here too)."""
        if isinstance(renderable, Table) and not self.is_terminal:
            for column in renderable.columns:
                if column.overflow == "ellipsis":
                    column.overflow = "fold"
        return super().render(renderable, options)
