"""The progress view: plain (non-TTY) lines only when a row changes; the live table styled, never raw markup."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from k3deploy.targets.progress import ProgressView, Row


def test_plain_view_prints_changes_only(capsys: pytest.CaptureFixture[str]) -> None:
    with ProgressView(interactive=False) as view:
        view.show([Row("LeaderWorkerSet/k3", "Progressing", "0/1 groups ready")])
        view.show([Row("LeaderWorkerSet/k3", "Progressing", "0/1 groups ready")])
        view.show([Row("LeaderWorkerSet/k3", "Available", "1/1 groups ready")])
        view.note("done")
    lines = [line.split("] ", 1)[-1] for line in capsys.readouterr().err.splitlines()]
    assert lines == [
        "LeaderWorkerSet/k3: Progressing 0/1 groups ready",
        "LeaderWorkerSet/k3: Available 1/1 groups ready",
        "done",
    ]


def test_live_view_leaves_the_final_rows(capsys: pytest.CaptureFixture[str]) -> None:
    with ProgressView(interactive=True) as view:
        view.show([Row("Pod/k3-0", "Ready", "group 0 leader")])
    assert "Pod/k3-0: Ready group 0 leader" in capsys.readouterr().err


@pytest.mark.parametrize("markup", [True, False], ids=["markup-on", "markup-off"])
def test_live_table_renders_styles_not_markup(markup: bool) -> None:
    view = ProgressView(interactive=False)
    view.show(
        [
            Row("Pod/k3-0", "Ready", "group 0 leader"),
            Row("Pod/k3-0-1", "ImagePullBackOff", "Back-off pulling image [vllm/vllm-openai:x]"),
        ]
    )
    console = Console(file=io.StringIO(), record=True, force_terminal=True, width=160, markup=markup)
    console.print(view._table())
    styled = console.export_text(clear=False, styles=True)
    text = console.export_text()
    assert "[green]" not in text and "[red]" not in text and "[/]" not in text
    assert "\x1b[32mReady" in styled and "\x1b[31mImagePullBackOff" in styled
    assert "Back-off pulling image [vllm/vllm-openai:x]" in text
