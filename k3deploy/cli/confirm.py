"""The confirmation rule of destructive and outage-causing commands.

`--yes` goes ahead; a terminal on stdin is asked; without either the command refuses (exit 2, one line naming the
flag), as Terraform refuses `apply`/`destroy` without `-auto-approve` when it cannot prompt: a script or a CI job
never deletes or takes a group down by default.
"""

from __future__ import annotations

import sys

import typer

from k3deploy.errors import UsageError

#: The flag that gives consent without a terminal.
YES_FLAG = "--yes"


def confirm(question: str, *, yes: bool, hint: str | None = None) -> None:
    """Return when the action may go ahead: `yes`, or "y" at the prompt on a terminal; a UsageError (exit 2, one
    error and one hint, nothing changed) on "n" and when stdin is not a terminal (nobody can answer). Ctrl-C at
    the prompt stays an interrupt (typer.Abort: exit 130)."""
    if yes:
        return
    what = question.removesuffix("?").removesuffix(" Go ahead").rstrip(". ")
    if not sys.stdin.isatty():
        raise UsageError(
            f"{what}: refused without {YES_FLAG} (stdin is not a terminal, so nobody can confirm)",
            hint=hint or f"re-run with {YES_FLAG} to go ahead",
        )
    if not typer.confirm(question, err=True):
        raise UsageError(
            f"{what}: not confirmed; nothing was changed",
            hint=f"re-run and answer y, or pass {YES_FLAG} to go ahead without being asked",
        )
