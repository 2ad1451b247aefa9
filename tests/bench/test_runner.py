"""The bench runner against the scripted vLLM-like server (real sockets): per-cell figures and /metrics deltas."""

from __future__ import annotations

import pytest

from k3deploy.bench.datasets import load_dataset, select
from k3deploy.bench.runner import BenchOptions, BenchPlan, run_bench
from k3deploy.errors import EnvironmentProblem
from k3deploy.profile import load_profile
from k3deploy.report.bench import BenchReport
from tests.smoke.scripted_server import Script, scripted_server


def plan(levels: list[int], tokens: int = 20, per_category: int = 2) -> BenchPlan:
    dataset = load_dataset("builtin", "throughput")
    return BenchPlan(dataset, select(dataset, None, per_category), levels, tokens, per_category, "test")


def bench(url: str, levels: list[int], **kw: object) -> BenchReport:
    return run_bench(load_profile("local-cpu"), url, plan(levels), BenchOptions(**kw))  # type: ignore[arg-type]


def test_cells_per_category_and_concurrency_agree_with_the_server_counters() -> None:
    seen: list[tuple[int, int]] = []
    with scripted_server(Script(chunk_delay_s=0.0005)) as srv:
        report = bench(srv.url, [1, 2], progress=lambda done, total, _rate: seen.append((done, total)))
        # 6 cells x 2 requests + the warm-up, each 20 tokens.
        assert srv.counters.generation == 13 * 20
    assert [(c.category, c.concurrency) for c in report.cells] == [
        (t, level) for level in (1, 2) for t in ("low_entropy", "mixed", "high_entropy")
    ]
    assert seen[-1] == (12, 12) and [d for d, _ in seen] == list(range(1, 13))
    for cell in report.cells:
        assert cell.requests == 2 and cell.failed == 0
        assert cell.completion_tokens == 40
        assert cell.server is not None and cell.server.generation_tokens == 40  # exactly the server's delta
        # Script: a 1-token first chunk, then chunks of 3,2,4,1,3,2,4 = 7 verify steps of 4 drafted tokens each.
        spec = cell.server.spec_decode
        assert spec is not None
        assert (spec.drafts, spec.draft_tokens, spec.accepted_tokens) == (14, 56, 24)
        assert spec.mean_acceptance_length == pytest.approx(1 + 24 / 14)
        assert spec.accepted_per_position == {0: 12, 1: 8, 2: 4}
        assert cell.tokens_per_chunk.mean == pytest.approx(20 / 8)
        assert (
            cell.decode_tok_s.count == 2 and cell.decode_tok_s.p10 <= cell.decode_tok_s.median <= cell.decode_tok_s.p90
        )
    overall = report.cell("overall", 2)
    assert overall is not None and overall.completion_tokens == 120 and overall.server.generation_tokens == 120
    assert overall.server.spec_decode.drafts == 42
    assert report.warnings == []
    assert [r.category for r in report.requests[:2]] == ["low_entropy", "low_entropy"]
    assert report.settings.output_tokens == 20 and report.settings.temperature == 0.0
    assert set(report.formulas) >= {
        "decode_tok_s",
        "e2e_tok_s",
        "ttft_ms",
        "tpot_ms",
        "acceptance_rate",
        "mean_acceptance_length",
        "per_position_acceptance",
        "tokens_per_chunk",
        "aggregate_tok_s",
    }


def test_requests_are_compact() -> None:
    with scripted_server(Script(chunk_delay_s=0.0)) as srv:
        report = run_bench(load_profile("local-cpu"), srv.url, plan([1], tokens=512, per_category=1), BenchOptions())
    size = len(report.requests[0].model_dump_json())
    assert size < 600  # no per-chunk stamps: a 512-token request is one short line


def test_failed_requests_and_missing_spec_series_are_reported() -> None:
    with scripted_server(Script(completion_status=500)) as srv:
        report = bench(srv.url, [1])
    assert all(c.failed == 2 for c in report.cells)
    assert report.warnings and "6 of 6 request(s) failed" in report.warnings[0]
    with scripted_server(Script(metrics="no_spec")) as srv:
        report = bench(srv.url, [1])
    assert report.cells[0].server.available and report.cells[0].server.spec_decode is None
    with scripted_server(Script(metrics="missing")) as srv:
        report = bench(srv.url, [1])
    assert not report.cells[0].server.available and "/metrics unavailable" in report.cells[0].server.error


def test_unreachable_or_wrong_model_raises_exit_3() -> None:
    with pytest.raises(EnvironmentProblem, match="connection refused"):
        bench("http://127.0.0.1:9", [1])
    with (
        scripted_server(Script(models=["someone-else"])) as srv,
        pytest.raises(EnvironmentProblem, match="someone-else"),
    ):
        bench(srv.url, [1])
