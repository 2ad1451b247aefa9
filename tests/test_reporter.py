"""k3deploy/reporter.py: progress notes and rows follow quiet, warnings and what a command says never do, and all
print text, never terminal controls."""

from __future__ import annotations

import pytest

from k3deploy.reporter import Reporter
from k3deploy.rollout.judge import Row


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


def test_plain_rows_print_changes_only(capsys: pytest.CaptureFixture[str]) -> None:
    with Reporter(interactive=False) as reporter:
        reporter.show([Row("LeaderWorkerSet/k3", "Progressing", "0/1 groups ready")])
        reporter.show([Row("LeaderWorkerSet/k3", "Progressing", "0/1 groups ready")])
        reporter.show([Row("LeaderWorkerSet/k3", "Available", "1/1 groups ready")])
        reporter.note("done")
    lines = [line.split("] ", 1)[-1] for line in capsys.readouterr().err.splitlines()]
    assert lines == [
        "LeaderWorkerSet/k3: Progressing 0/1 groups ready",
        "LeaderWorkerSet/k3: Available 1/1 groups ready",
        "done",
    ]


def test_quiet_shows_no_rows_but_says_what_the_command_says(capsys: pytest.CaptureFixture[str]) -> None:
    with Reporter(quiet=True, interactive=True) as reporter:
        reporter.show([Row("Pod/k3-0", "Ready", "group 0 leader")])
        reporter.block(["diagnosis"])
        reporter.say("down: removed 3 objects")
    assert capsys.readouterr().err.splitlines() == ["down: removed 3 objects"]
