"""k3deploy/reporter.py: progress notes follow quiet, warnings never do, and both print text, never terminal
controls."""

from __future__ import annotations

import pytest

from k3deploy.reporter import Reporter


def test_quiet_keeps_notes_off_but_not_warnings(capsys: pytest.CaptureFixture[str]) -> None:
    Reporter(quiet=True).note("applying")
    Reporter(quiet=True).warn("could not restore")
    Reporter().note("applying")
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == ["warning: could not restore", "applying"]


def test_a_servers_text_prints_as_text(capsys: pytest.CaptureFixture[str]) -> None:
    Reporter().note("pod [bold]x\x1b[2J")
    Reporter().warn("\u202eevil")
    assert capsys.readouterr().err.splitlines() == ["pod [bold]x\\x1b[2J", "warning: \\u202eevil"]
