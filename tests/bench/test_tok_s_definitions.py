"""Both bs=1 tok/s definitions side by side: decode tok/s leaves TTFT out (what smoke's gate judges), output tok/s
keeps it in (vllm bench serve's output throughput, its headline at concurrency 1); each labelled in the report,
the table and `bench compare`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from k3deploy.bench.compare import compare
from k3deploy.bench.figures import Sent, cell_figures, compact
from k3deploy.report.bench import FORMULAS, BenchReport, Point
from k3deploy.report.bench_view import compare_view, figures_table
from k3deploy.report.smoke import RequestRecord
from tests.bench.test_ab import _report
from tests.conftest import run_cli
from tests.smoke.scripted_server import Script, scripted_server


def _record(t_send: float, ttft: float, gap: float, chunks: int) -> RequestRecord:
    """A request of `chunks` one-token chunks: the first `ttft` after send, then one every `gap` seconds."""
    offsets = [ttft + i * gap for i in range(chunks)]
    return RequestRecord(
        index=0,
        phase="measured",
        prompt_id="p",
        ok=True,
        max_tokens=chunks,
        t_send=t_send,
        t_first=t_send + offsets[0],
        t_last=t_send + offsets[-1],
        t_end=t_send + offsets[-1],
        completion_tokens=chunks,
        chunk_offsets_s=offsets,
        ttft_s=ttft,
        decode_tok_s=(chunks - 1) / (offsets[-1] - offsets[0]),
        e2e_tok_s=chunks / offsets[-1],
    )


def test_output_tok_s_counts_ttft_and_decode_tok_s_does_not() -> None:
    # Two bs=1 requests back to back: 1 s of prefill, then 101 tokens 10 ms apart (100 tok/s of decode).
    records = [_record(0.0, 1.0, 0.01, 101), _record(2.0, 1.0, 0.01, 101)]
    sent = [Sent(record=r, request=compact(r, "a")) for r in records]
    cell = cell_figures("a", Point(concurrency=1), sent, None, duration_s=4.0)
    assert cell.decode_tok_s.median == pytest.approx(100.0)
    # vllm bench serve's output throughput: 202 tokens over the 4 s run, TTFTs included.
    assert cell.output_tok_s == pytest.approx(202 / 4.0) == cell.throughput.output_throughput
    assert "TTFT" in FORMULAS["output_tok_s"] and "output_tok_s" in cell.model_dump()


def test_compare_reports_both_and_reads_a_report_written_before_output_tok_s() -> None:
    a, b = _report("a", {1: 100.0}), _report("b", {1: 300.0})
    a.overall[0].output_tok_s = 80.0
    # An older report: no output_tok_s, its output throughput stands in.
    b.overall[0].throughput.output_throughput = 240.0
    (row,) = compare([a, b], ["a.json", "b.json"]).rows
    assert row.decode_tok_s == [100.0, 300.0] and row.output_tok_s == [80.0, 240.0]
    view = compare_view(compare([a, b], ["a", "b"]))
    headers = [c.header for c in view.renderables[0].columns]  # type: ignore[attr-defined]
    assert "a DECODE TOK/S" in headers and "b OUTPUT TOK/S" in headers
    assert "TTFT excluded" in str(view.renderables[0].title)  # type: ignore[attr-defined]


def test_the_figures_table_labels_which_tok_s_includes_ttft() -> None:
    report = _report("a", {1: 100.0})
    report.overall[0].output_tok_s = 80.0
    headers = [c.header for c in figures_table(report, Point(concurrency=1)).columns]
    assert "DECODE TOK/S excl. TTFT med (p10..p90)" in headers and "OUTPUT TOK/S incl. TTFT" in headers


def test_bench_json_and_compare_json_carry_both(tmp_path: Path) -> None:
    paths = []
    for name in ("a", "b"):
        with scripted_server(Script(chunk_delay_s=0.0005)) as srv:
            path = tmp_path / f"{name}.json"
            result = run_cli(
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
                "16",
                "--label",
                name,
                "--top-p",
                "0.95",
                "--report",
                str(path),
            )
            sent = [b for b in srv.bodies if b.get("max_tokens") == 16]
        assert result.returncode == 0, result.stderr
        assert sent and all(b["top_p"] == 0.95 for b in sent)
        assert "OUTPUT TOK/S incl. TTFT" in result.stderr
        paths.append(path)
    report = BenchReport.load(paths[0])
    assert report.settings.top_p == 0.95  # the published method's top_p, sent and recorded
    overall = report.overall[0]
    assert overall.output_tok_s is not None and overall.output_tok_s > 0 and overall.decode_tok_s.median
    result = run_cli("bench", "compare", *map(str, paths), "-o", "json")
    assert result.returncode == 0, result.stderr
    row = next(r for r in json.loads(result.stdout)["rows"] if r["category"] == "overall")
    assert len(row["output_tok_s"]) == 2 and all(v > 0 for v in row["output_tok_s"])
