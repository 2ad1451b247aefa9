"""Client cost of `k3deploy bench` vs `vllm bench serve`: CPU time per streamed token, side by side.

Both stream from the same local synthetic SSE server (tests/smoke/scripted_server.py, no delay: as fast as it can)
at 1 and 4 tokens per chunk and concurrency 1 and 16. Each client runs as a child process with few and with many
requests and reports the CPU seconds (user + system) it spent inside its benchmark: `run_bench` for k3deploy
(tests/bench/bench_child.py), vLLM's `benchmark()` coroutine for `vllm bench serve` (tests/bench/vllm_bench.py with
K3DEPLOY_CPU_FILE). The difference over the difference of tokens is the marginal cost per token, free of
start-up, imports, tokenizer loading, warm-up and /metrics scrapes. The two clients take turns, `--rounds` times per
cell, and the median of each one's rounds is kept (on a shared host other processes inflate some rounds). Prints
microseconds per token and the ratio k3deploy / vllm (goal <= 1); asserts nothing.

    python -m tests.bench.bench_bench_client_cost [--output-tokens 1024] [--few 16] [--many 96] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from k3deploy.targets.local.rehearsal import ensure_rehearsal_model
from tests.bench.vllm_bench import serve_argv
from tests.conftest import REPO_ROOT, cli_env
from tests.integration.vllm_server import vllm_python
from tests.smoke.scripted_server import MODEL, Script, scripted_server


def k3deploy_cmd(url: str, dataset: Path, requests: int, tokens: int, level: int) -> list[str]:
    return [sys.executable, "-m", "tests.bench.bench_child", url, str(dataset), str(requests), str(tokens), str(level)]


def k3deploy_cpu(cmd: list[str]) -> float:
    """CPU seconds the k3deploy child spent inside run_bench (it prints them)."""
    done = subprocess.run(cmd, capture_output=True, text=True, env=cli_env(), cwd=REPO_ROOT, timeout=1800, check=False)
    if done.returncode != 0:
        raise SystemExit(f"k3deploy bench child exited {done.returncode}:\n{done.stderr[-2000:]}")
    return float(done.stdout.split()[-1])


def vllm_cpu(cmd: list[str], work: Path) -> float:
    """CPU seconds the `vllm bench serve` child spent inside vLLM's benchmark() (it writes them to a file)."""
    out = work / "vllm-cpu.txt"
    out.unlink(missing_ok=True)
    done = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        env=cli_env({"K3DEPLOY_CPU_FILE": str(out)}),
        cwd=REPO_ROOT,
        timeout=1800,
        check=False,
    )
    if done.returncode != 0 or not out.exists():
        raise SystemExit(f"vllm bench serve exited {done.returncode}:\n{done.stderr[-2000:]}")
    return float(out.read_text())


def vllm_cmd(url: str, model_dir: Path, dataset: Path, requests: int, tokens: int, level: int) -> list[str]:
    return serve_argv(vllm_python(), url, MODEL, model_dir, dataset, requests, tokens, level)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-tokens", type=int, default=1024)
    parser.add_argument("--few", type=int, default=16)
    parser.add_argument("--many", type=int, default=96)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tokens-per-chunk", default="1,4", help="Cells to measure, e.g. 1")
    parser.add_argument("--concurrency", default="1,16", help="Cells to measure, e.g. 16")
    args = parser.parse_args()
    extra = (args.many - args.few) * args.output_tokens
    with tempfile.TemporaryDirectory(prefix="k3deploy-bench-") as tmp:
        model_dir = ensure_rehearsal_model(Path(tmp) / "model")  # vllm bench needs a tokenizer
        dataset = Path(tmp) / "prompts.jsonl"
        dataset.write_text("".join(json.dumps({"prompt": f"prompt number {i}"}) + "\n" for i in range(args.many)))
        print(f"client CPU per streamed token ({extra} marginal tokens per cell):")
        for per_chunk in [int(v) for v in args.tokens_per_chunk.split(",")]:
            with scripted_server(Script(tokens_per_chunk=[per_chunk], chunk_delay_s=0.0)) as srv:
                for level in [int(v) for v in args.concurrency.split(",")]:
                    k3_rounds, vb_rounds = [], []
                    for _ in range(args.rounds):
                        k3 = [
                            k3deploy_cpu(k3deploy_cmd(srv.url, dataset, n, args.output_tokens, level))
                            for n in (args.few, args.many)
                        ]
                        vb = [
                            vllm_cpu(vllm_cmd(srv.url, model_dir, dataset, n, args.output_tokens, level), Path(tmp))
                            for n in (args.few, args.many)
                        ]
                        k3_rounds.append(1e6 * (k3[1] - k3[0]) / extra)
                        vb_rounds.append(1e6 * (vb[1] - vb[0]) / extra)
                    k3_us, vb_us = statistics.median(k3_rounds), statistics.median(vb_rounds)
                    print(
                        f"  {per_chunk} token(s)/chunk, concurrency {level:2d}: k3deploy bench {k3_us:6.2f} us, "
                        f"vllm bench serve {vb_us:6.2f} us, ratio {k3_us / vb_us:.2f} (goal <= 1)",
                        flush=True,
                    )


if __name__ == "__main__":
    sys.exit(main())
