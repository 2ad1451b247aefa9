"""Where messages go: data to stdout, progress and messages to stderr; quiet when not a TTY."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable

from rich.console import Console, ConsoleOptions, RenderableType
from rich.markup import escape
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


#: C0 controls but tab and newline, DEL, C1 controls (ESC opens terminal escapes; C1 CSI/OSC do in some terminals),
#: and the bidirectional overrides that make text read other than it is.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def safe_text(text: str) -> str:
    """`text` with every terminal control character shown as an escape (`\\x1b`), so text from elsewhere (a
    registry's error, a Prometheus label, a node label) prints as text and never drives the terminal."""
    return _UNPRINTABLE.sub(
        lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", text
    )


def is_interactive() -> bool:
    """True when stderr is a terminal (live views and spinners allowed)."""
    return sys.stderr.isatty()


def print_error(message: str, hint: str | None = None) -> None:
    """The one abort path's output: `error: ...` and `hint: ...` on stderr."""
    message = safe_text(message)
    err.print(f"[bold red]error:[/] {escape(message)}", markup=True, highlight=False) if is_interactive() else print(
        f"error: {message}", file=sys.stderr
    )
    if hint:
        hint = safe_text(hint)
        if is_interactive():
            err.print(f"[yellow]hint:[/] {escape(hint)}", markup=True, highlight=False)
        else:
            print(f"hint: {hint}", file=sys.stderr)
