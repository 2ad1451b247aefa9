"""`--dataset random` makes the prompts `vllm bench serve --dataset-name random` makes: same tokenizer and seed, the
same texts, token counts and output lengths as vLLM's own RandomDataset.sample (vLLM 0.32), and every prompt
re-encodes to exactly its token count. Uses the rehearsal model's tokenizer (made offline); no server.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from k3deploy.bench.random_dataset import load_tokenizer, random_dataset, sample

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vLLM is not installed; run `bash .ci/setup`"),
]


@pytest.mark.parametrize(("input_len", "output_len", "ratio", "seed"), [(64, 16, 0.0, 0), (200, 32, 0.5, 7)])
def test_random_prompts_are_vllms(
    rehearsal_model_dir: Path, input_len: int, output_len: int, ratio: float, seed: int
) -> None:
    from vllm.benchmarks.datasets import RandomDataset

    tokenizer = load_tokenizer(str(rehearsal_model_dir))
    theirs = RandomDataset(random_seed=seed, dataset_path=None).sample(
        tokenizer=tokenizer, num_requests=12, input_len=input_len, output_len=output_len, range_ratio=ratio
    )
    ours = sample(tokenizer, 12, input_len, output_len, ratio, seed)
    assert [(p.text, p.prompt_tokens, p.output_tokens) for p in ours] == [
        (r.prompt, r.prompt_len, r.expected_output_len) for r in theirs
    ]
    for p in ours:
        assert len(tokenizer.encode(p.text, add_special_tokens=False)) == p.prompt_tokens
    if ratio == 0:
        assert {p.output_tokens for p in ours} == {output_len}
    else:
        assert len({p.prompt_tokens for p in ours}) > 1  # lengths really vary


def test_random_dataset_records_how_it_was_made(rehearsal_model_dir: Path) -> None:
    dataset, settings = random_dataset(str(rehearsal_model_dir), 4, 32, 8, 0.25, 3)
    again, _ = random_dataset(str(rehearsal_model_dir), 4, 32, 8, 0.25, 3)
    assert dataset.prompts == again.prompts  # seeded
    assert dataset.name == "random:32x8~0.25@3" and dataset.categories() == ["random"]
    assert (settings.input_len, settings.output_len, settings.range_ratio, settings.seed) == (32, 8, 0.25, 3)
