"""The capacity plan's exact figures, derived from profile fields only.

The figures are checked against vLLM's own cache specs in tests/integration/test_plan_vs_vllm.py; here they
are pinned so that a change to a formula shows up without vLLM installed.
"""

from __future__ import annotations

import json

from k3deploy.profile import load_profile
from k3deploy.profile.plan import GIB, plan
from tests.conftest import run_cli

#: Kimi K3 at TP16, fp8, 7 speculative tokens (the built-in profile).
KDA_RECURRENT = (96 // 16) * 128 * 128 * 4
KDA_CONV = (3 * 96 * 128 // 16) * (4 - 1 + 7) * 2


def test_k3_plan_figures() -> None:
    result = plan(load_profile("kimi-k3-gb300-tp16"))
    assert result.kv_bytes_per_token == 24 * 576 * 1 == 13824
    assert result.draft_kv_bytes_per_token == 5 * 576
    assert result.linear_recurrent_bytes_per_layer == KDA_RECURRENT == 393216
    assert result.linear_conv_bytes_per_layer == KDA_CONV == 46080
    # smallest multiple of 128 tokens whose MLA page (576 B/token) holds one KDA page
    assert result.kv_block_size == 768 and result.mla_page_bytes == 768 * 576 >= KDA_RECURRENT + KDA_CONV
    assert result.linear_page_padded_bytes == result.mla_page_bytes
    assert result.linear_pages_per_sequence == 2 + 7 + 1  # prefix caching: align mode
    # 24 + 5 MLA layers and 69 KDA layers form groups of 29: 3 KDA groups, 18 padding layers that take memory
    assert (result.kv_group_size, result.attention_layer_slots, result.linear_layer_slots) == (29, 29, 87)
    assert result.linear_state_bytes_per_sequence_per_gpu == 87 * 768 * 576 * 10
    assert result.weight_bytes_per_gpu == 1_560_000_000_000 // 16
    blocks = -(-1048576 // 768)
    assert result.bytes_per_full_sequence == blocks * 768 * (13824 + 2880) + 87 * 768 * 576 * 10
    assert result.fits and result.full_sequences_per_gpu == 9


def test_constants_come_from_the_profile() -> None:
    bf16 = plan(load_profile("kimi-k3-gb300-tp16", ["vllm.kv_cache_dtype=bfloat16"]))
    assert bf16.kv_bytes_per_token == 2 * 13824
    assert bf16.kv_block_size == 384  # a bf16 MLA page is twice as large: half the tokens hold a KDA page
    fewer = plan(load_profile("kimi-k3-gb300-tp16", ["model.mla_layers=12"]))
    assert fewer.kv_bytes_per_token == 12 * 576
    no_cache = plan(load_profile("kimi-k3-gb300-tp16", ["vllm.enable_prefix_caching=false"]))
    assert no_cache.linear_pages_per_sequence == 1 + 7


def test_tp8_halves_nothing_of_the_mla_cache_but_doubles_the_kda_state() -> None:
    tp8 = plan(load_profile("kimi-k3-gb300-tp16", ["parallel.nodes=2", "parallel.tensor_parallel_size=8"]))
    tp16 = plan(load_profile("kimi-k3-gb300-tp16"))
    assert tp8.kv_bytes_per_token == tp16.kv_bytes_per_token
    assert tp8.linear_recurrent_bytes_per_layer == 2 * tp16.linear_recurrent_bytes_per_layer
    assert tp8.linear_conv_bytes_per_layer == 2 * tp16.linear_conv_bytes_per_layer


def test_auto_kv_dtype_is_the_model_dtype() -> None:
    local = plan(load_profile("local-cpu"))
    assert local.kv_dtype_bytes == 4  # dtype float32
    assert plan(load_profile("local-cpu", ["vllm.dtype=bfloat16"])).kv_dtype_bytes == 2


def test_local_plan_sizes_the_cpu_kv_space() -> None:
    result = plan(load_profile("local-cpu"))
    # 2 target + 2 draft layers x 2 KV heads x 32 dims x (K + V) x 4 B = 2048 B per token in 1 GiB
    assert result.kv_budget_bytes_per_gpu == GIB
    assert result.kv_tokens_per_gpu == GIB // 2048 == 524288
    assert result.full_sequences_per_gpu == 512
    assert "VLLM_CPU_KVCACHE_SPACE=1" in result.kv_space_source
    four = plan(load_profile("local-cpu", ['vllm.env.VLLM_CPU_KVCACHE_SPACE="4"']))
    assert four.kv_tokens_per_gpu == 4 * 524288


def test_assumptions_name_a_settable_field_and_a_source() -> None:
    result = plan(load_profile("kimi-k3-gb300-tp16"))
    fields = {item.field: item for item in result.assumptions}
    assert {"hardware.runtime_reserve_mib", "speculative.draft_kv_layers", "speculative.draft_bytes"} <= set(fields)
    assert all(item.source for item in result.assumptions)
    changed = plan(
        load_profile("kimi-k3-gb300-tp16", ["hardware.runtime_reserve_mib=16384", "speculative.draft_kv_layers=0"])
    )
    assert changed.reserve_bytes_per_gpu == 16384 * 1024 * 1024
    assert changed.draft_kv_bytes_per_token == 0


def test_plan_prints_the_assumptions() -> None:
    cli = run_cli("plan", "-p", "kimi-k3-gb300-tp16")
    assert cli.returncode == 0
    assert "hardware.runtime_reserve_mib" in cli.stdout and "speculative.draft_kv_layers" in cli.stdout
    local = run_cli("plan", "-p", "local-cpu", "-o", "json")
    assert json.loads(local.stdout)["kv_tokens_per_gpu"] == 524288


def test_plan_fails_when_no_sequence_fits() -> None:
    prof = load_profile("kimi-k3-gb300-tp16", ["hardware.gpu_memory_mib=115000"])
    result = plan(prof)
    assert not result.fits and "no room for one 1048576-token sequence" in result.reason
    cli = run_cli("plan", "-p", "kimi-k3-gb300-tp16", "--set", "hardware.gpu_memory_mib=115000", "-o", "json")
    assert cli.returncode == 1
    assert json.loads(cli.stdout)["fits"] is False
