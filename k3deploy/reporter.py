"""One output object per command: what a stage says while it works goes through a `Reporter` (hatch's `Terminal`
and guidellm's progress hooks are the models), in place of a `note` callable, a quiet flag and prints of its own.

Plain lines on stderr with terminal controls escaped (console.plain), so text from a server or a cluster never
drives the terminal and rich is not loaded for them; data (tables, `-o json`) never goes through a Reporter.
"""

from __future__ import annotations

from dataclasses import dataclass

from k3deploy.console import plain


@dataclass(frozen=True)
class Reporter:
    """Where a command's progress and warnings go; `quiet` (`-o json`, a script) keeps progress off, never warnings."""

    quiet: bool = False

    def note(self, text: str) -> None:
        """A progress line: a stage begun, a variant served, what was done. Nothing when quiet."""
        if not self.quiet:
            plain(text)

    def warn(self, text: str) -> None:
        """`warning: text`, quiet or not: something went wrong that the command goes on past."""
        plain(f"warning: {text}")
