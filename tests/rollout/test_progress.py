"""The plain (non-TTY) progress view prints a line only when a row changes."""

from __future__ import annotations

import pytest

from k3deploy.rollout.progress import ProgressView, Row


def test_plain_view_prints_changes_only(capsys: pytest.CaptureFixture[str]) -> None:
    with ProgressView(interactive=False) as view:
        view.show([Row("LeaderWorkerSet/k3", "Progressing", "0/1 groups ready")])
        view.show([Row("LeaderWorkerSet/k3", "Progressing", "0/1 groups ready")])
        view.show([Row("LeaderWorkerSet/k3", "Available", "1/1 groups ready")])
        view.note("done")
    lines = [line.split("] ", 1)[-1] for line in capsys.readouterr().err.splitlines()]
    assert lines == ["LeaderWorkerSet/k3: Progressing 0/1 groups ready", "LeaderWorkerSet/k3: Available 1/1 groups ready", "done"]


def test_live_view_leaves_the_final_rows(capsys: pytest.CaptureFixture[str]) -> None:
    with ProgressView(interactive=True) as view:
        view.show([Row("Pod/k3-0", "Ready", "group 0 leader")])
    assert "Pod/k3-0: Ready group 0 leader" in capsys.readouterr().err
