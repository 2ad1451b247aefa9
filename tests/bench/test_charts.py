"""HTML and PNG reports: produced from real runs (scripted server) and checked for the series they must show."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from k3deploy.bench import charts, html_report, series
from k3deploy.bench.datasets import load_dataset, select
from k3deploy.bench.runner import BenchOptions, BenchPlan, run_bench
from k3deploy.profile import load_profile
from k3deploy.report.bench import BenchReport
from tests.conftest import run_cli
from tests.smoke.scripted_server import Script, scripted_server


@pytest.fixture(scope="module")
def runs() -> list[BenchReport]:
    dataset = load_dataset("builtin", "throughput")
    out = []
    for label, delay, pattern in (("base", 0.003, [1]), ("spec", 0.001, [3, 2, 4, 1])):
        plan = BenchPlan(dataset, select(dataset, None, 2), [1, 2], 24, 2, label)
        sets = ["targets.baseline_decode_tok_s=118", "targets.decode_tok_s=370", "targets.peak_decode_tok_s=464"]
        with scripted_server(Script(chunk_delay_s=delay, tokens_per_chunk=pattern)) as srv:
            out.append(run_bench(load_profile("local-cpu", sets), srv.url, plan, BenchOptions()))
    return out


def test_series_hold_each_runs_figures(runs: list[BenchReport]) -> None:
    data = series.all_series(runs)
    base, spec = runs
    assert data["per_category"]["spec"]["mixed"] == spec.cell("mixed", 1).decode_tok_s.median
    assert list(data["speedups"]) == ["spec"]
    assert data["speedups"]["spec"]["overall"] == pytest.approx(
        spec.cell("overall", 1).decode_tok_s.median / base.cell("overall", 1).decode_tok_s.median
    )
    # Each published figure with the tier it was measured on: 370 and 464 belong to low_entropy, 118 to random.
    assert [(r["value"], r["category"]) for r in data["published"]] == [
        (118, "random"),
        (370, "low_entropy"),
        (464, "low_entropy"),
    ]
    assert data["load_curve"]["base"]["points"] == [1, 2] and data["load_curve"]["base"]["x"] == "concurrency"
    assert data["load_curve"]["base"]["output_throughput"] == [c.throughput.output_throughput for c in base.overall]
    # base streams one token per chunk: drafts nothing accepted; spec accepts at positions 0..2.
    # spec: a 1-token chunk, then 3,2,4,1,3,2,4,1,3 = 9 drafts per request; positions 0/1/2 accepted 7/5/2 times.
    assert data["acceptance_per_position"] == {
        "spec": {"0": pytest.approx(7 / 9), "1": pytest.approx(5 / 9), "2": pytest.approx(2 / 9)}
    }


def test_html_is_self_contained_and_embeds_the_series(runs: list[BenchReport], tmp_path: Path) -> None:
    path = tmp_path / "r.html"
    path.write_text(charts.html(runs), encoding="utf-8")
    text = path.read_text()
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", text)  # nothing fetched from elsewhere
    blob = re.search(rf'<script type="application/json" id="{charts.SERIES_ID}">(.*?)</script>', text, re.S)
    assert blob is not None and json.loads(blob.group(1).replace("<\\/", "</")) == json.loads(
        json.dumps(series.all_series(runs))
    )
    assert text.count("<svg") == 4
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    for needle in (
        "low_entropy",
        "high_entropy",
        "SPEED-Bench throughput_16k, low_entropy tier",
        "parity 1x",
        "spec per-user",
        "base output tok/s",
        "acceptance per position",
        "decode_tok_s",
        "as vllm bench serve",
    ):
        assert needle in text, needle
    spec_mixed = runs[1].cell("mixed", 1).decode_tok_s.median
    assert f"spec mixed: {spec_mixed:.2f} tok/s" in text


def test_png_draws_the_series(runs: list[BenchReport], tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    fig = charts.figure(runs)
    cats, speed, curve, acc = fig.axes
    heights = [p.get_height() for p in cats.patches]
    data = series.all_series(runs)
    expected = [v for label in ("base", "spec") for v in data["per_category"][label].values()]
    assert heights == pytest.approx(expected)
    assert [p.get_height() for p in speed.patches] == pytest.approx(list(data["speedups"]["spec"].values()))
    assert any(list(line.get_ydata()) == [1.0, 1.0] for line in speed.get_lines())  # the 1.0x line
    # The same colours as the HTML's SVG: the palette, in series order.
    from matplotlib.colors import to_hex

    from k3deploy.bench.charts import PALETTE

    assert {to_hex(p.get_facecolor()) for p in cats.patches[:3]} == {PALETTE[0]}
    assert {to_hex(p.get_facecolor()) for p in cats.patches[3:]} == {PALETTE[1]}
    # Published figures drawn only over low_entropy (the first group), not across the panel.
    segments = [c for c in cats.collections if c.get_segments()]
    assert len(segments) == 2 and all(s.get_segments()[0][1][0] < 1 for s in segments)
    plotted = {line.get_label(): list(line.get_ydata()) for line in curve.get_lines()}
    assert plotted["spec output tok/s"] == data["load_curve"]["spec"]["output_throughput"]
    assert [list(line.get_ydata()) for line in acc.get_lines()] == [
        list(data["acceptance_per_position"]["spec"].values())
    ]
    path = tmp_path / "r.png"
    path.write_bytes(charts.png(runs))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_writes_html_and_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    with scripted_server(Script(chunk_delay_s=0.0005)) as srv:
        done = run_cli(
            "bench",
            "--endpoint",
            srv.url,
            "-p",
            "local-cpu",
            "--subset",
            "throughput",
            "--num-prompts",
            "1",
            "--output-tokens",
            "8",
            "--html",
            str(tmp_path / "b.html"),
            "--png",
            str(tmp_path / "b.png"),
        )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "b.png").read_bytes()[:4] == b"\x89PNG"
    page = (tmp_path / "b.html").read_text()
    assert "against the published" not in page  # no overall bar against a tier's figure
    assert html_report.REHEARSAL_WARNING in page


def test_one_engine_draws_the_html_charts_and_the_png_panels(runs: list[BenchReport]) -> None:
    """Each chart is one function: the page inlines what it draws as SVG, the PNG has it as a panel, same numbers."""
    page = charts.html(runs)
    assert page == charts.html(runs)  # the same runs give the same page (no random ids, no date)
    keys = ["per_category", "speedup", "load_curve", "acceptance"]
    assert list(charts.svgs(runs)) == keys
    for key in keys:
        assert charts.svg(key, runs) in page
    ids = re.findall(r' id="([^"]+)"', page)
    assert len(ids) == len(set(ids))  # four inline charts, no id twice on the page
    assert set(re.findall(r'(?:href="#|url\(#)([^")]+)', page)) <= set(ids)  # every reference resolves
    assert "<metadata" not in page and "<?xml" not in page
    tips = re.findall(r"<title>(\w+) (\w+): ([\d.]+) tok/s</title>", charts.svg("per_category", runs))
    heights = [p.get_height() for p in charts.figure(runs).axes[0].patches]
    assert [float(v) for _, _, v in tips] == pytest.approx(heights, abs=0.005)
    data = series.all_series(runs)
    assert [(run, cat) for run, cat, _ in tips] == [(r, c) for r, d in data["per_category"].items() for c in d]


def test_a_chart_without_matplotlib_is_refused_before_the_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # what an install without the bench extra finds
    with scripted_server(Script(chunk_delay_s=0.0)) as srv:
        done = run_cli("bench", "--endpoint", srv.url, "-p", "local-cpu", "--html", str(tmp_path / "b.html"))
        sent = list(srv.bodies)
    assert done.returncode == 3 and "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert "error: --html needs matplotlib, which is not installed" in lines
    assert lines[-1].startswith("hint: pip install 'k3deploy[bench]'")
    assert sent == [] and not (tmp_path / "b.html").exists()
    both = run_cli("bench", "compare", "a.json", "b.json", "--html", "x.html", "--png", "x.png", cwd=tmp_path)
    assert both.returncode == 3 and "error: --html/--png needs matplotlib" in both.stderr
