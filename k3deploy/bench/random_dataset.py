"""`--dataset random`: synthetic prompts of exact token lengths, made as `vllm bench serve --dataset-name random`.

The same algorithm, step for step, as vLLM 0.32's RandomDataset.sample (vllm/benchmarks/datasets/datasets.py) and
get_sampling_params (vllm/benchmarks/datasets/utils.py), with no prefix: a numpy default_rng(seed) draws each
request's input length from [floor(L*(1-r)), ceil(L*(1+r))] (L = --random-input-len minus the tokenizer's special
tokens), its output length from [max(1, floor(O*(1-r))), ceil(O*(1+r))] and a vocabulary offset; the prompt is the
allowed (non-special) token ids (offset + i + arange(len)) cycled, decoded, re-encoded and adjusted until it
re-encodes to exactly its length (gen_prompt_decode_to_target_len). Same tokenizer and seed: the same prompts as
vLLM's (tests/integration/test_bench_random.py compares them).

numpy and transformers (the tokenizer) are imported here only: they come with the `bench` extra or vLLM.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from k3deploy.bench.datasets import BenchPrompt, Dataset
from k3deploy.errors import EnvironmentProblem, UsageError
from k3deploy.report.bench import RandomSettings

CATEGORY = "random"
MAX_RETRY = 10


def load_tokenizer(name: str) -> Any:
    """The Hugging Face tokenizer at a local path or Hub id (vLLM's get_tokenizer loads the same AutoTokenizer)."""
    try:
        from transformers import AutoTokenizer  # heavy and optional: only --dataset random needs it
    except ImportError:
        raise EnvironmentProblem(
            "--dataset random needs the transformers tokenizer library, which is not installed",
            hint="pip install 'k3deploy[bench]' (or run from the environment that has vLLM)",
        ) from None
    try:
        return AutoTokenizer.from_pretrained(name)
    except (OSError, ValueError) as exc:
        raise UsageError(
            f"--tokenizer {name}: cannot load a tokenizer ({str(exc).splitlines()[0][:200]})",
            hint="pass --tokenizer PATH (a folder with tokenizer.json) or a Hub id this host can fetch",
        ) from None


def _decode_to_length(tokenizer: Any, tokens: list[int], target: int, rng: Any) -> tuple[str, list[int]]:
    """vLLM's gen_prompt_decode_to_target_len: decode, re-encode, pad with random ids or truncate, up to 10 tries."""
    remaining = MAX_RETRY
    while True:
        prompt = tokenizer.decode(tokens)
        tokens = tokenizer.encode(prompt, add_special_tokens=False)
        if remaining <= 0 or len(tokens) == target:
            break
        if len(tokens) < target:
            tokens.extend(rng.integers(0, tokenizer.vocab_size, size=target - len(tokens)).tolist())
        else:
            tokens = tokens[:target]
        remaining -= 1
    return prompt, tokens


def sample(
    tokenizer: Any, num: int, input_len: int, output_len: int, range_ratio: float, seed: int
) -> list[BenchPrompt]:
    """`num` prompts as vLLM's RandomDataset(random_seed=seed).sample(tokenizer, num, input_len=..., output_len=...,
    range_ratio=...) makes them (prefix_len 0)."""
    import numpy as np  # the bench extra (or vLLM's environment), loaded only for --dataset random

    if not 0 <= range_ratio < 1:
        raise UsageError(f"--random-range-ratio {range_ratio:g} must be in [0, 1)", hint="e.g. 0.1 for +-10 %")
    rng = np.random.default_rng(seed)
    special = int(tokenizer.num_special_tokens_to_add())
    real_input = max(0, int(input_len) - special)
    in_low, in_high = math.floor(real_input * (1 - range_ratio)), math.ceil(real_input * (1 + range_ratio))
    out_low = max(math.floor(output_len * (1 - range_ratio)), 1)
    out_high = max(math.ceil(output_len * (1 + range_ratio)), 1)
    if in_low < 1:
        raise UsageError(
            f"--random-input-len {input_len} is too small: with {special} special token(s) and range ratio "
            f"{range_ratio:g} a prompt could have {in_low} tokens",
            hint="raise --random-input-len or lower --random-range-ratio",
        )
    input_lens = rng.integers(in_low, in_high + 1, size=num)
    output_lens = rng.integers(out_low, out_high + 1, size=num)
    offsets = rng.integers(0, tokenizer.vocab_size, size=num)
    all_tokens = np.arange(tokenizer.vocab_size)
    # The same expression as vLLM's, so the allowed ids come out in the same order.
    allowed = np.array(list(set(all_tokens) - set(tokenizer.all_special_ids)))
    prompts = []
    for i in range(num):
        length = int(input_lens[i])
        inner = allowed[(int(offsets[i]) + i + np.arange(length)) % len(allowed)].tolist()
        text, tokens = _decode_to_length(tokenizer, inner, length, rng)
        prompts.append(BenchPrompt(f"random-{i}", CATEGORY, text, int(output_lens[i]), len(tokens)))
    return prompts


def random_dataset(
    tokenizer_name: str, num: int, input_len: int, output_len: int, range_ratio: float, seed: int
) -> tuple[Dataset, RandomSettings]:
    """The random dataset and the settings that made it (recorded in the report)."""
    if input_len < 1 or output_len < 1 or num < 1:
        raise UsageError(
            "--random-input-len, --random-output-len and --num-prompts must be at least 1",
            hint="e.g. --random-input-len 8192 --random-output-len 1024",
        )
    tokenizer = load_tokenizer(tokenizer_name)
    prompts = sample(tokenizer, num, input_len, output_len, range_ratio, seed)
    where = str(Path(tokenizer_name).name) if Path(tokenizer_name).exists() else tokenizer_name
    dataset = Dataset("random", f"{input_len}x{output_len}~{range_ratio:g}@{seed}", None, tuple(prompts))
    return dataset, RandomSettings(
        input_len=input_len, output_len=output_len, range_ratio=range_ratio, seed=seed, tokenizer=where
    )
