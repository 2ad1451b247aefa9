"""The capacity plan's cache layout and messages pinned rule by rule (survivors of tests/mutation/run on
k3deploy/profile/plan.py): a model without linear layers has no linear state, a profile without a draft adds
no draft KV or weights, vLLM's KV cache groups switch size at 1.5 x, KV tokens are whole blocks inside the budget,
and each "does not fit" reason gives the figures it compared."""

from __future__ import annotations

import pytest

from k3deploy.profile.load import load_profile
from k3deploy.profile.plan import GIB, MIB, _layer_groups, cache_figures, plan

K3 = "kimi-k3-gb300-tp16"
CPU = "local-cpu"


def test_k3s_linear_state_per_sequence_is_each_kda_layers_recurrent_and_conv_state() -> None:
    """69 KDA layers x (1,572,864 fp32 recurrent elements + 36,864 bf16 conv channels x (kernel 4 - 1 + 7 drafts))."""
    figures = cache_figures(load_profile(K3, check_fit=False))
    assert figures["linear_state_bytes_per_sequence"] == 69 * (1_572_864 * 4 + 36_864 * (4 - 1 + 7) * 2)
    # Per GPU, sharded over TP 16: ceil(elements / 16) per layer, padded to the MLA page.
    assert figures["linear_recurrent_bytes_per_layer"] == 1_572_864 // 16 * 4
    assert figures["linear_conv_bytes_per_layer"] == 36_864 // 16 * 10 * 2
    assert figures["linear_state_bytes_per_sequence_per_gpu"] == 87 * 442_368 * 10


def test_the_conv_window_grows_with_the_draft_length_and_without_a_draft_is_the_kernel_minus_one() -> None:
    no_draft = cache_figures(load_profile(K3, ["speculative=null"], check_fit=False))
    assert no_draft["linear_conv_bytes_per_layer"] == 36_864 // 16 * (4 - 1) * 2
    assert no_draft["linear_state_bytes_per_sequence"] == 69 * (1_572_864 * 4 + 36_864 * 3 * 2)
    # Prefix caching on, no draft: 2 pages + the FlashKDA prefill checkpoint page.
    assert no_draft["linear_pages_per_sequence"] == 3


def test_no_draft_means_no_draft_kv_layers_and_no_draft_weights() -> None:
    figures = cache_figures(load_profile(K3, ["speculative=null"], check_fit=False))
    assert figures["draft_kv_bytes_per_token"] == 0
    assert (figures["kv_group_size"], figures["attention_layer_slots"], figures["linear_layer_slots"]) == (24, 24, 72)
    cpu = plan(load_profile(CPU, ["speculative=null"]))
    assert cpu.draft_bytes_per_gpu == 0 and cpu.draft_kv_bytes_per_token == 0  # TP 1: no rounding hides a -1


def test_a_model_without_linear_layers_has_no_linear_state_and_plain_attention_blocks() -> None:
    figures = cache_figures(load_profile(CPU))
    assert {key: figures[key] for key in figures if key.startswith("linear_")} == {
        "linear_recurrent_bytes_per_layer": 0,
        "linear_conv_bytes_per_layer": 0,
        "linear_page_bytes": 0,
        "linear_page_padded_bytes": 0,
        "linear_pages_per_sequence": 0,
        "linear_state_bytes_per_sequence": 0,
        "linear_layer_slots": 0,
        "linear_state_bytes_per_sequence_per_gpu": 0,
    }
    # Not hybrid: the block is the alignment, and the 2 target + 2 draft attention layers form one group of 4.
    assert (figures["kv_block_size"], figures["kv_group_size"], figures["attention_layer_slots"]) == (1, 4, 4)


@pytest.mark.parametrize(
    ("attention", "linear", "groups"),
    [
        (20, 29, (29, 29, 29)),  # 29 < 1.5 x 20: one group size, the larger count, each type padded to it
        (20, 30, (20, 20, 40)),  # 30 is not under 1.5 x 20: the smaller count, linear padded to two groups
        (29, 69, (29, 29, 87)),  # Kimi K3 with DSpark: 24 + 5 attention layers, 69 KDA layers
        (4, 0, (4, 4, 0)),  # a model of one kind: one group of all its layers
        (0, 7, (7, 0, 7)),
    ],
)
def test_kv_cache_groups_take_the_larger_count_only_under_one_and_a_half_times_the_smaller(
    attention: int, linear: int, groups: tuple[int, int, int]
) -> None:
    assert _layer_groups(attention, linear) == groups


def test_cpu_kv_tokens_are_whole_blocks_of_the_kv_space() -> None:
    """VLLM_CPU_KVCACHE_SPACE=1 GiB, blocks of 16 tokens of 4 slots x 576 fp32 elements: floor to whole blocks."""
    result = plan(load_profile(CPU, ["model.kv_block_alignment_tokens=16", "model.mla_kv_elements=576"]))
    block_bytes = 16 * 4 * 576 * 4
    assert result.kv_tokens_per_gpu == GIB // block_bytes * 16 and isinstance(result.kv_tokens_per_gpu, int)
    assert result.reserve_bytes_per_gpu == 0


def test_no_hardware_and_no_kv_space_reserve_nothing() -> None:
    assert plan(load_profile(CPU, ["vllm.env={}"])).reserve_bytes_per_gpu == 0


def test_a_cpu_kv_space_short_of_one_sequence_names_its_size() -> None:
    result = plan(load_profile(CPU, ["model.mla_kv_elements=131072"], check_fit=False))
    assert result.fits is False
    assert result.reason == "no room for one 1024-token sequence in 1.00 GiB of KV space"


def test_gpu_kv_tokens_are_whole_blocks_that_fit_the_budget() -> None:
    result = plan(load_profile(K3, check_fit=False))
    block, per_token = result.kv_block_size, result.attention_layer_slots * result.mla_bytes_per_token_per_layer
    tokens, budget = result.kv_tokens_per_gpu, result.kv_budget_bytes_per_gpu
    assert tokens is not None and budget is not None and tokens > 0 and tokens % block == 0
    assert tokens * per_token <= budget < (tokens + block) * per_token


def test_a_budget_below_zero_has_no_kv_tokens() -> None:
    result = plan(load_profile(K3, ["model.checkpoint_bytes=6000000000000"], check_fit=False))
    assert result.kv_budget_bytes_per_gpu is not None and result.kv_budget_bytes_per_gpu < 0
    assert result.kv_tokens_per_gpu == 0 and result.full_sequences_per_gpu == 0


def test_gpus_are_nodes_times_gpus_per_node_and_weights_split_over_tp_times_pp() -> None:
    result = plan(
        load_profile(
            K3,
            ["parallel.tensor_parallel_size=8", "parallel.pipeline_parallel_size=2", "model.checkpoint_bytes=1600"],
            check_fit=False,
        )
    )
    assert result.gpus == 16 and result.tensor_parallel_size == 8
    assert result.weight_bytes_per_gpu == 100  # 1,600 B over 8 x 2 shards, not over 8 / 2
    assert result.draft_bytes_per_gpu == -(-load_profile(K3).speculative.draft_bytes // 8)  # the draft is TP only


def test_the_reserve_alone_can_make_the_weights_not_fit() -> None:
    """usable = 284,208 MiB; 280,000 MiB of weights + 0 draft + 8,192 MiB reserve is over it by the reserve alone."""
    sets = [
        "vllm.gpu_memory_utilization=1.0",
        f"model.checkpoint_bytes={280_000 * MIB * 16}",
        "speculative.draft_bytes=0",
        "hardware.runtime_reserve_mib=8192",
    ]
    result = plan(load_profile(K3, sets, check_fit=False))
    assert result.fits is False and result.weights_fit is False
    assert result.reason == (
        "weights do not fit: 273.4 GiB weights + 0.0 GiB draft + 8.0 GiB reserve per GPU > 277.5 GiB usable "
        "(284208 MiB x 1.0)"
    )


def test_the_weights_reason_gives_each_figure_in_gib() -> None:
    sets = [
        "vllm.gpu_memory_utilization=0.5",
        f"model.checkpoint_bytes={100 * GIB * 16}",
        f"speculative.draft_bytes={40 * GIB * 16}",
        "hardware.runtime_reserve_mib=3072",
    ]
    result = plan(load_profile(K3, sets, check_fit=False))
    assert result.reason == (
        "weights do not fit: 100.0 GiB weights + 40.0 GiB draft + 3.0 GiB reserve per GPU > 138.8 GiB usable "
        "(284208 MiB x 0.5)"
    )


def test_the_kv_room_reason_gives_what_one_sequence_needs_and_what_is_left() -> None:
    sets = ["vllm.gpu_memory_utilization=1.0", "hardware.runtime_reserve_mib=0", "speculative.draft_bytes=0"]
    probe = plan(load_profile(K3, sets, check_fit=False))
    left = probe.bytes_per_full_sequence // 2
    weight = probe.usable_bytes_per_gpu - left
    result = plan(load_profile(K3, [*sets, f"model.checkpoint_bytes={weight * 16}"], check_fit=False))
    assert result.kv_budget_bytes_per_gpu == left and result.fits is False
    # One 1,048,576-token sequence: 1,366 blocks of 768 tokens x 29 slots x 576 B, plus 87 x 10 KDA state pages.
    assert probe.bytes_per_full_sequence == 17_908_826_112
    assert result.reason == (
        "no room for one 1048576-token sequence: needs 16.68 GiB, 8.34 GiB left per GPU after weights"
    )


@pytest.mark.parametrize(("sets", "dspark"), [([], True), (["speculative.method=draft_model"], False)])
def test_the_draft_assumptions_cite_the_dspark_card_only_for_dspark(sets: list[str], dspark: bool) -> None:
    found = {a.field: a.source for a in plan(load_profile(K3, sets, check_fit=False)).assumptions}
    assert found["speculative.draft_bytes"].startswith("draft model card (DSpark") is dspark
    assert found["speculative.draft_kv_layers"].startswith("DSpark model card") is dspark


@pytest.mark.parametrize(
    ("profile", "sets", "listed"),
    [(K3, [], True), (K3, ["vllm.enable_prefix_caching=false"], False), (CPU, [], False)],
)
def test_the_prefill_checkpoint_assumption_needs_linear_layers_and_prefix_caching(
    profile: str, sets: list[str], listed: bool
) -> None:
    fields = [a.field for a in plan(load_profile(profile, sets, check_fit=False)).assumptions]
    assert ("model.linear_prefill_checkpoint_blocks" in fields) is listed


@pytest.mark.parametrize(
    ("profile", "source"), [(K3, "checkpoint size (model card"), (CPU, "size of the generated rehearsal model")]
)
def test_the_weights_assumption_cites_the_model_card_for_kimi_and_the_generated_model_for_a_rehearsal(
    profile: str, source: str
) -> None:
    found = {a.field: a.source for a in plan(load_profile(profile, check_fit=False)).assumptions}
    assert found["model.checkpoint_bytes"].startswith(source)
