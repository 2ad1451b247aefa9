"""One `k3deploy bench` run in this process, printing the CPU seconds spent inside `run_bench` (the requests, not
the imports or the report's printing): the k3deploy side of tests/bench/bench_bench_client_cost.py.

    python -m tests.bench.bench_child URL DATASET_JSONL REQUESTS OUTPUT_TOKENS CONCURRENCY
"""

from __future__ import annotations

import sys

from k3deploy.bench.cli_run import Request, make_plan
from k3deploy.bench.runner import run_bench
from k3deploy.profile import load_profile
from tests.bench.vllm_bench import cpu_seconds


def main(argv: list[str]) -> None:
    """Bench URL with the first REQUESTS prompts of the JSONL file; print CPU seconds inside run_bench."""
    url, dataset, requests, tokens, level = argv
    request = Request(
        endpoint=url,
        profile="local-cpu",
        sets=["speculative=null"],
        dataset=f"jsonl:{dataset}",
        num_prompts=int(requests),
        output_tokens=int(tokens),
        concurrency=[int(level)],
        quiet=True,
    )
    profile = load_profile("local-cpu", request.sets)
    plan = make_plan(request, profile, "cost")
    start = cpu_seconds()
    report = run_bench(profile, url, plan)
    spent = cpu_seconds() - start
    if report.warnings:
        raise SystemExit("; ".join(report.warnings))
    print(spent)


if __name__ == "__main__":
    main(sys.argv[1:])
