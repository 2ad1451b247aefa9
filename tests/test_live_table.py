"""k3deploy/live_table.py: the Reporter's live table on a terminal leaves the final rows, and styles states, never
raw markup."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from k3deploy.live_table import rows_table
from k3deploy.reporter import Reporter
from k3deploy.rollout.judge import Row


def test_live_view_leaves_the_final_rows(capsys: pytest.CaptureFixture[str]) -> None:
    with Reporter(interactive=True) as reporter:
        reporter.show([Row("Pod/k3-0", "Ready", "group 0 leader")])
    assert "Pod/k3-0: Ready group 0 leader" in capsys.readouterr().err


@pytest.mark.parametrize("markup", [True, False], ids=["markup-on", "markup-off"])
def test_live_table_renders_styles_not_markup(markup: bool) -> None:
    reporter = Reporter(interactive=False)
    reporter.show(
        [
            Row("Pod/k3-0", "Ready", "group 0 leader"),
            Row("Pod/k3-0-1", "ImagePullBackOff", "Back-off pulling image [vllm/vllm-openai:x]"),
        ]
    )
    console = Console(file=io.StringIO(), record=True, force_terminal=True, width=160, markup=markup)
    console.print(rows_table(reporter.cells()))
    styled = console.export_text(clear=False, styles=True)
    text = console.export_text()
    assert "[green]" not in text and "[red]" not in text and "[/]" not in text
    assert "\x1b[32mReady" in styled and "\x1b[31mImagePullBackOff" in styled
    assert "Back-off pulling image [vllm/vllm-openai:x]" in text
