"""The integration fixtures serve a real vLLM: speculative decoding drafts and accepts, the plain one does not."""

from __future__ import annotations

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.integration

SPEC_COUNTERS = (
    "vllm:spec_decode_num_drafts",
    "vllm:spec_decode_num_draft_tokens",
    "vllm:spec_decode_num_accepted_tokens",
)


def spec_counters(base_url: str) -> dict[str, float]:
    """The speculative-decoding counters of /metrics, summed over engines (0 when absent)."""
    totals = dict.fromkeys(SPEC_COUNTERS, 0.0)
    for family in text_string_to_metric_families(httpx.get(f"{base_url}/metrics", timeout=30).text):
        if family.name in totals:
            totals[family.name] += sum(s.value for s in family.samples if s.name.endswith("_total"))
    return totals


def complete(base_url: str, max_tokens: int) -> int:
    """One greedy completion; returns the number of completion tokens."""
    body = {
        "model": "rehearsal-llama-tiny",
        "prompt": "Count from one to twenty: one, two, three,",
        "max_tokens": max_tokens,
        "temperature": 0.0,
    }
    response = httpx.post(f"{base_url}/v1/completions", json=body, timeout=120)
    response.raise_for_status()
    return int(response.json()["usage"]["completion_tokens"])


def test_speculative_server_accepts_every_draft_of_the_identical_draft_model(vllm_spec_server: str) -> None:
    models = httpx.get(f"{vllm_spec_server}/v1/models", timeout=30).json()
    assert [m["id"] for m in models["data"]] == ["rehearsal-llama-tiny"]
    before = spec_counters(vllm_spec_server)
    assert complete(vllm_spec_server, 64) == 64  # special tokens never win a greedy step: no early EOS
    after = spec_counters(vllm_spec_server)
    delta = {name: after[name] - before[name] for name in SPEC_COUNTERS}
    assert delta["vllm:spec_decode_num_drafts"] > 0
    assert delta["vllm:spec_decode_num_draft_tokens"] == 3 * delta["vllm:spec_decode_num_drafts"]
    assert delta["vllm:spec_decode_num_accepted_tokens"] == delta["vllm:spec_decode_num_draft_tokens"]


def test_plain_server_generates_without_drafts(vllm_plain_server: str) -> None:
    before = spec_counters(vllm_plain_server)
    assert complete(vllm_plain_server, 32) == 32
    assert spec_counters(vllm_plain_server) == before
