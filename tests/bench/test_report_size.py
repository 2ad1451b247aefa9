"""A bench report stays small: 256 requests of 512 tokens against the scripted server (real sockets).

Per-request records hold a request's figures, never one entry per token or chunk: the report of a 512-token run
is no larger than that of a 16-token run with the same requests, and 256 of them fit in a few hundred KB.
"""

from __future__ import annotations

from pathlib import Path

from k3deploy.bench.datasets import Dataset, load_dataset, select
from k3deploy.bench.runner import BenchPlan, run_bench
from k3deploy.profile import load_profile
from k3deploy.report.bench import BenchReport
from tests.bench.test_datasets import write_jsonl
from tests.smoke.scripted_server import Script, scripted_server

REQUESTS = 256
#: ~1 KB per request record with its figures and stamps, plus the cells; 512 tokens per request add nothing.
REPORT_LIMIT = 512 * 1024


def run(url: str, dataset: Dataset, tokens: int) -> BenchReport:
    plan = BenchPlan(dataset, select(dataset, None, REQUESTS), [16], tokens, REQUESTS, "size")
    return run_bench(load_profile("local-cpu", ["speculative=null"]), url, plan)


def test_a_256_by_512_token_run_keeps_a_small_report(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "prompts.jsonl", [{"prompt": f"prompt number {i}"} for i in range(REQUESTS)])
    dataset = load_dataset(f"jsonl:{source}", None)
    with scripted_server(Script(tokens_per_chunk=[1], chunk_delay_s=0.0)) as srv:
        long, short = run(srv.url, dataset, 512), run(srv.url, dataset, 16)
    assert len(long.requests) == REQUESTS and all(r.ok for r in long.requests)
    assert long.overall[0].completion_tokens == REQUESTS * 512 == long.overall[0].server.generation_tokens
    assert {r.chunks for r in long.requests} == {512}
    (tmp_path / "long.json").write_text(long.to_json(), encoding="utf-8")
    (tmp_path / "short.json").write_text(short.to_json(), encoding="utf-8")
    size, baseline = (tmp_path / "long.json").stat().st_size, (tmp_path / "short.json").stat().st_size
    assert size < REPORT_LIMIT, f"{size / 1024:.0f} KiB"
    # Nothing grows with the output length: only the digits of the figures differ.
    assert size < baseline * 1.1, f"{size} bytes for 512 tokens vs {baseline} for 16"
