"""Where messages go: data to stdout, progress and messages to stderr; quiet when not a TTY."""

from __future__ import annotations

import sys
from collections.abc import Iterable

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.table import Table


class _Console(Console):
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


#: Progress, tables and messages: stderr, so stdout stays clean for data (`-o json`, `-o -`).
err = _Console(stderr=True, highlight=False, soft_wrap=True)
#: Data only.
out = _Console(highlight=False, soft_wrap=True)


def is_interactive() -> bool:
    """True when stderr is a terminal (live views and spinners allowed)."""
    return sys.stderr.isatty()


def print_error(message: str, hint: str | None = None) -> None:
    """The one abort path's output: `error: ...` and `hint: ...` on stderr."""
    err.print(f"[bold red]error:[/] {message}", markup=True, highlight=False) if is_interactive() else print(
        f"error: {message}", file=sys.stderr
    )
    if hint:
        if is_interactive():
            err.print(f"[yellow]hint:[/] {hint}", markup=True, highlight=False)
        else:
            print(f"hint: {hint}", file=sys.stderr)
