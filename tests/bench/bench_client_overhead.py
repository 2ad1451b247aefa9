"""Client overhead benchmark: CPU seconds per 1,000 streamed tokens, k3deploy's client vs `vllm bench serve`.

Both stream from the same local synthetic SSE server (tests/smoke/scripted_server.py, one token per chunk, no
delay: as fast as it can). Each client runs as a child process twice, with few and with many requests; the
difference of its CPU time (user + system, from wait4) over the difference of tokens is the marginal cost per
token, free of start-up and import costs. Prints the figures and their ratio; asserts nothing.

    python -m tests.bench.bench_client_overhead [--output-tokens 2000] [--few 2] [--many 10]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from k3deploy.targets.local.rehearsal import ensure_rehearsal_model
from tests.bench.vllm_bench import serve_argv
from tests.conftest import REPO_ROOT, cli_env
from tests.integration.vllm_server import vllm_python
from tests.smoke.scripted_server import MODEL, Script, scripted_server


def cpu_seconds(cmd: list[str]) -> float:
    """User + system CPU seconds of a child process (and its children it waited for)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=cli_env(), cwd=REPO_ROOT)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{cmd[:4]} exited {proc.returncode}:\n{stderr[-2000:]}")
    return usage.ru_utime + usage.ru_stime


def k3deploy_cmd(url: str, requests: int, tokens: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "k3deploy",
        "smoke",
        "--endpoint",
        url,
        "--requests",
        str(requests),
        "--output-tokens",
        str(tokens),
        "--set",
        "smoke.api=completions",
        "--set",
        "speculative=null",
        "--set",
        "targets.decode_tok_s=null",
        "-o",
        "json",
    ]


def vllm_bench_cmd(url: str, model_dir: Path, dataset: Path, requests: int, tokens: int) -> list[str]:
    return serve_argv(vllm_python(), url, MODEL, model_dir, dataset, requests, tokens)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-tokens", type=int, default=2000)
    parser.add_argument("--few", type=int, default=2)
    parser.add_argument("--many", type=int, default=10)
    args = parser.parse_args()
    extra_tokens = (args.many - args.few) * args.output_tokens
    with tempfile.TemporaryDirectory(prefix="k3deploy-bench-") as tmp:
        model_dir = ensure_rehearsal_model(Path(tmp) / "model")  # vllm bench needs a tokenizer
        dataset = Path(tmp) / "prompts.jsonl"
        dataset.write_text("".join(json.dumps({"prompt": f"prompt number {i}"}) + "\n" for i in range(args.many)))
        with scripted_server(Script(tokens_per_chunk=[1], chunk_delay_s=0.0)) as srv:
            k3 = [cpu_seconds(k3deploy_cmd(srv.url, n, args.output_tokens)) for n in (args.few, args.many)]
            vb = [
                cpu_seconds(vllm_bench_cmd(srv.url, model_dir, dataset, n, args.output_tokens))
                for n in (args.few, args.many)
            ]
    k3_per_k = 1000 * (k3[1] - k3[0]) / extra_tokens
    vb_per_k = 1000 * (vb[1] - vb[0]) / extra_tokens
    print(f"client CPU per 1,000 tokens (one token per chunk, {extra_tokens} marginal tokens):")
    print(f"  k3deploy smoke    {k3_per_k * 1000:8.2f} ms  (runs: {k3[0]:.2f} s / {k3[1]:.2f} s)")
    print(f"  vllm bench serve  {vb_per_k * 1000:8.2f} ms  (runs: {vb[0]:.2f} s / {vb[1]:.2f} s)")
    print(f"  ratio k3deploy / vllm bench = {k3_per_k / vb_per_k:.3f}")


if __name__ == "__main__":
    sys.exit(main())
