"""The confirmation rule: --yes goes ahead, a terminal is asked, and without either the command refuses (exit 2)."""

from __future__ import annotations

import io

import pytest

from k3deploy.cli.confirm import confirm
from k3deploy.errors import EXIT_USAGE, UsageError


class _Stdin(io.StringIO):
    """stdin with a chosen answer to isatty()."""

    def __init__(self, text: str, tty: bool) -> None:
        super().__init__(text)
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def test_without_a_terminal_it_refuses_naming_the_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", _Stdin("y\n", tty=False))
    with pytest.raises(UsageError) as info:
        confirm("Delete the deployment of 'x' in namespace 'y'?", yes=False)
    assert info.value.exit_code == EXIT_USAGE == 2
    assert info.value.message == (
        "Delete the deployment of 'x' in namespace 'y': refused without --yes (stdin is not a terminal, so nobody "
        "can confirm)"
    )
    assert info.value.hint == "re-run with --yes to go ahead"
    # A question ending "Go ahead?" loses that too.
    with pytest.raises(UsageError, match=r"^an outage \(7200s\): refused without --yes"):
        confirm("an outage (7200s). Go ahead?", yes=False, hint="h")


def test_yes_goes_ahead_without_asking(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", _Stdin("", tty=False))
    confirm("Delete?", yes=True)


def test_a_terminal_is_asked_and_no_is_a_usage_error_with_a_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: "n" raised typer.Abort, which the CLI printed as "error: aborted" with no hint and exit 130 (the
    code of a SIGINT, which the exit code table (docs/operations/scripts-ci.md) gives no other meaning)."""
    monkeypatch.setattr("sys.stdin", _Stdin("y\n", tty=True))
    confirm("Delete?", yes=False)
    monkeypatch.setattr("sys.stdin", _Stdin("n\n", tty=True))
    with pytest.raises(UsageError) as info:
        confirm("Delete the deployment of 'x'?", yes=False)
    assert info.value.exit_code == 2
    assert info.value.message == "Delete the deployment of 'x': not confirmed; nothing was changed"
    assert info.value.hint == "re-run and answer y, or pass --yes to go ahead without being asked"
