"""Where messages go: data to stdout, progress and messages to stderr; quiet when not a TTY."""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from k3deploy.rich_console import RichConsole


class _OnFirstUse:
    """Stands for a RichConsole made (and rich loaded, ~20 ms) on first use: a command that prints only plain lines
    (`render`, `--help`) never loads rich. Everything but making it is passed to the console itself."""

    __slots__ = ("_made", "_options")

    def __init__(self, **options: Any) -> None:
        object.__setattr__(self, "_options", options)
        object.__setattr__(self, "_made", None)

    def _console(self) -> RichConsole:
        if self._made is None:
            # rich is loaded here, by the first command that prints through a console.
            from k3deploy.rich_console import RichConsole

            object.__setattr__(self, "_made", RichConsole(**self._options))
        return cast("RichConsole", self._made)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._console(), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._console(), name, value)

    # rich's Live enters its console (`with self.console:`), and Python looks `with`'s methods up on the type.
    def __enter__(self) -> RichConsole:
        console = self._console()
        console.__enter__()
        return console

    def __exit__(self, *exc: Any) -> None:
        self._console().__exit__(*exc)


#: Progress, tables and messages: stderr, so stdout stays clean for data (`-o json`, `-o -`).
err = cast("RichConsole", _OnFirstUse(stderr=True, highlight=False, soft_wrap=True))
#: Data only.
out = cast("RichConsole", _OnFirstUse(highlight=False, soft_wrap=True))


def plain(line: str) -> None:
    """One line of plain text on stderr: what `err.print(line, markup=False, highlight=False)` printed, without
    loading rich. Where rich differed it is shown as written: a `:name:` emoji code stays text, a tab a tab, and a
    terminal control (which rich dropped) is shown as its escape, as `safe_text` shows it."""
    print(safe_text(line), file=sys.stderr)


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
    hint = safe_text(hint) if hint else None
    if not is_interactive():
        print(f"error: {message}", file=sys.stderr)
        if hint:
            print(f"hint: {hint}", file=sys.stderr)
        return
    # rich is loaded for a terminal's colours only: a script's error is plain text.
    from rich.markup import escape

    err.print(f"[bold red]error:[/] {escape(message)}", markup=True, highlight=False)
    if hint:
        err.print(f"[yellow]hint:[/] {escape(hint)}", markup=True, highlight=False)
