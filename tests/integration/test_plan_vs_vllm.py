"""The capacity plan against vLLM's own cache accounting for Kimi K3, byte for byte, per layer type.

No weights: the Kimi K3 architecture is written from its published facts (93 layers, an MLA layer every 4th
layer and the last, kv_lora_rank 512 + qk_rope_head_dim 64, 96 KDA heads of 128, short-conv kernel 4) as vLLM's
own `KimiLinearConfig`, and vLLM's code sizes the caches from it:
- `vllm.models.kimi_k3.nvidia.mla.MultiHeadLatentAttention.get_kv_cache_spec` -> `MLAAttentionSpec` (MLA layers;
  the DSpark draft's layers are the same class, `vllm/models/kimi_k3/nvidia/dspark_mla.py`),
- `KimiLinearForCausalLM.get_mamba_state_shape_from_config` / `get_mamba_state_dtype_from_config` (what
  `KimiK3ForConditionalGeneration` delegates to) -> `MambaSpec` (KDA layers),
- `Platform._align_hybrid_block_size` (`vllm/platforms/interface.py`): the block size and the KDA page padding,
- `_get_kv_cache_groups_uniform_page_size` (`vllm/v1/core/kv_cache_utils.py`): the KV cache groups, padding
  included, and `MambaSpec` / `FullAttentionSpec.max_memory_usage_bytes`: the blocks one sequence takes in each.
The vLLM config is a plain namespace holding only what these functions read. The plan's figures come from the
profile alone; every profile field that feeds them is cross-checked, and the negative cases prove a wrong one
is caught.
"""

from __future__ import annotations

import math
from types import SimpleNamespace as NS
from typing import Any, get_args

import pytest

from k3deploy.profile import load_profile
from k3deploy.profile import plan as plan_module
from k3deploy.profile.model import Profile, VllmSpec
from k3deploy.profile.plan import CapacityPlan, plan

pytestmark = pytest.mark.integration

torch = pytest.importorskip("torch")
pytest.importorskip("vllm")

K3 = "kimi-k3-gb300-tp16"
#: Kimi K3 facts (reference: model card / config.json), 1-based layer numbers as in linear_attn_config.
NUM_LAYERS = 93
MLA_LAYER_NUMBERS = [*range(4, NUM_LAYERS, 4), NUM_LAYERS]
KDA_HEADS, KDA_HEAD_DIM, KDA_CONV_KERNEL = 96, 128, 4
KV_LORA_RANK, QK_ROPE_HEAD_DIM = 512, 64
MODEL_DTYPE = "bfloat16"
#: FlashInfer MLA's kernel block sizes (vllm/v1/attention/backends/mla/flashinfer_mla.py); flashinfer is GPU-only.
FLASHINFER_MLA_KERNEL_BLOCK_SIZES = [32, 64]
#: DSpark's draft layers (Inferact/Kimi-K3-DSpark model card): dense MLA in the target's layout.
DSPARK_LAYERS = 5
#: The prefill backend vLLM picks for KDA on Blackwell; it decides the checkpoint page (an assumption here).
KDA_PREFILL_BACKEND = "flashkda"


def _hf_config() -> Any:
    from vllm.transformers_utils.configs.kimi_linear import KimiLinearConfig

    return KimiLinearConfig(
        num_hidden_layers=NUM_LAYERS,
        kv_lora_rank=KV_LORA_RANK,
        qk_rope_head_dim=QK_ROPE_HEAD_DIM,
        qk_nope_head_dim=128,
        v_head_dim=128,
        linear_attn_config={
            "num_heads": KDA_HEADS,
            "head_dim": KDA_HEAD_DIM,
            "short_conv_kernel_size": KDA_CONV_KERNEL,
            "kda_layers": [n for n in range(1, NUM_LAYERS + 1) if n not in MLA_LAYER_NUMBERS],
            "full_attn_layers": MLA_LAYER_NUMBERS,
        },
    )


class _KernelBlocks:
    @staticmethod
    def get_supported_kernel_block_sizes(kv_cache_spec: Any = None) -> list[int]:
        return FLASHINFER_MLA_KERNEL_BLOCK_SIZES


def _vllm_config(profile: Profile, hf: Any) -> Any:
    """The slice of a VllmConfig the sizing code reads, set as the profile's serve flags set it."""
    from vllm.utils.torch_utils import STR_DTYPE_TO_TORCH_DTYPE

    num_spec = profile.speculative.num_speculative_tokens if profile.speculative else 0
    prefix_caching = profile.vllm.enable_prefix_caching is not False
    cache = NS(
        cache_dtype=profile.vllm.kv_cache_dtype,
        block_size=16,
        mamba_block_size=None,
        mamba_page_size_padded=None,
        mamba_cache_mode="align" if prefix_caching else "none",  # MambaModelConfig.verify_and_update_config
        mamba_cache_dtype="auto",
        mamba_ssm_cache_dtype="auto",
        use_kda_recoverssm=False,
        use_replayssm=False,
    )
    model = NS(
        dtype=STR_DTYPE_TO_TORCH_DTYPE[MODEL_DTYPE],
        use_mla=True,
        hf_config=hf,
        max_model_len=profile.vllm.max_model_len,
        architecture="KimiLinearForCausalLM",
        model_impl="vllm",
        convert_type="none",
        runner_type="generate",
        get_num_kv_heads=lambda parallel: 1,
        get_head_size=lambda: KV_LORA_RANK + QK_ROPE_HEAD_DIM,
    )
    config = NS(
        cache_config=cache,
        model_config=model,
        parallel_config=NS(tensor_parallel_size=profile.parallel.tensor_parallel_size, decode_context_parallel_size=1),
        speculative_config=NS(num_speculative_tokens=num_spec) if num_spec else None,
        num_speculative_tokens=num_spec,
        compilation_config=NS(static_forward_context={}),
    )
    config.with_hf_config = lambda text_config: config
    return config


def vllm_figures(profile: Profile) -> dict[str, Any]:
    """The per-GPU cache figures vLLM's code gives for Kimi K3 served with this profile's flags."""
    from vllm.model_executor.layers.mamba.kda_checkpoint import (
        kda_prefill_checkpoint_alignment,
    )
    from vllm.models.kimi_k3 import (
        KimiK3ForConditionalGeneration,
        KimiLinearForCausalLM,
    )
    from vllm.models.kimi_k3.nvidia.mla import MultiHeadLatentAttention
    from vllm.platforms.interface import Platform
    from vllm.v1.core.kv_cache_utils import _get_kv_cache_groups_uniform_page_size
    from vllm.v1.kv_cache_interface import MambaSpec, MLAAttentionSpec

    hf = _hf_config()
    config = _vllm_config(profile, hf)
    Platform._align_hybrid_block_size(config, _KernelBlocks)
    cache = config.cache_config
    mla_layer = NS(
        head_size=KV_LORA_RANK + QK_ROPE_HEAD_DIM, kv_cache_dtype=cache.cache_dtype, non_causal_multi_token_decode=False
    )
    mla = MultiHeadLatentAttention.get_kv_cache_spec(mla_layer, config)
    shapes = KimiLinearForCausalLM.get_mamba_state_shape_from_config(config)
    dtypes = KimiLinearForCausalLM.get_mamba_state_dtype_from_config(config)
    k3 = NS(**{**vars(config), "model_config": NS(**{**vars(config.model_config), "hf_config": NS(text_config=hf)})})
    assert KimiK3ForConditionalGeneration.get_mamba_state_shape_from_config(k3) == shapes
    kda = MambaSpec(
        shapes=tuple(shapes),
        dtypes=dtypes,
        block_size=cache.mamba_block_size or profile.vllm.max_model_len,
        page_size_padded=cache.mamba_page_size_padded,
        mamba_cache_mode=cache.mamba_cache_mode,
        num_speculative_blocks=config.num_speculative_tokens,
        num_prefill_checkpoint_blocks=int(kda_prefill_checkpoint_alignment(KDA_PREFILL_BACKEND) is not None),
    )
    conv_shape, recurrent_shape = shapes
    conv_dtype, recurrent_dtype = dtypes
    kda_layers = sum(hf.is_kda_layer(i) for i in range(NUM_LAYERS))
    mla_layers = NUM_LAYERS - kda_layers
    draft_layers = DSPARK_LAYERS if profile.speculative else 0
    groups = _get_kv_cache_groups_uniform_page_size(
        {**{f"mla.{i}": mla for i in range(mla_layers + draft_layers)}, **{f"kda.{i}": kda for i in range(kda_layers)}}
    )
    group_size = max(len(group.layer_names) for group in groups)
    # A request of max_model_len takes cdiv(bytes, page) blocks in every group; a block spans group_size layers.
    blocks = {
        kind: sum(
            math.ceil(g.kv_cache_spec.max_memory_usage_bytes(config) / g.kv_cache_spec.page_size_bytes)
            for g in groups
            if isinstance(g.kv_cache_spec, kind)
        )
        for kind in (MLAAttentionSpec, MambaSpec)
    }
    return {
        "layers (mla, kda)": (mla_layers, kda_layers),
        "kv_group_size": group_size,
        "attention_layer_slots": group_size * sum(isinstance(g.kv_cache_spec, MLAAttentionSpec) for g in groups),
        "linear_layer_slots": group_size * sum(isinstance(g.kv_cache_spec, MambaSpec) for g in groups),
        "mla_bytes_per_token_per_layer": mla.page_size_bytes // mla.block_size,
        "kv_bytes_per_token": mla_layers * mla.page_size_bytes // mla.block_size,
        "draft_kv_bytes_per_token": draft_layers * mla.page_size_bytes // mla.block_size,
        "kv_block_size": mla.block_size,
        "mla_page_bytes": mla.page_size_bytes,
        "mla replicated on every rank": mla.max_tp_shards == 1 and mla.num_kv_heads == 1,
        "linear_recurrent_bytes_per_layer": math.prod(recurrent_shape) * recurrent_dtype.itemsize,
        "linear_conv_bytes_per_layer": math.prod(conv_shape) * conv_dtype.itemsize,
        "linear_page_bytes": kda.real_page_size_bytes,
        "linear_page_padded_bytes": kda.page_size_bytes,
        "linear_pages_per_sequence": kda.max_memory_usage_bytes(config) // kda.page_size_bytes,
        "linear_state_bytes_per_sequence_per_gpu": blocks[MambaSpec] * group_size * kda.page_size_bytes,
        "kda heads per rank": recurrent_shape[0],
        "bytes_per_full_sequence": (blocks[MLAAttentionSpec] + blocks[MambaSpec]) * group_size * mla.page_size_bytes,
    }


def plan_figures(result: CapacityPlan, profile: Profile) -> dict[str, Any]:
    """The same figures as the plan states them."""
    sharded = profile.model.linear_state_tp_sharded
    return {
        "layers (mla, kda)": (profile.model.mla_layers, profile.model.linear_layers),
        "mla replicated on every rank": True,  # the plan never divides the MLA cache by TP
        "kda heads per rank": (KDA_HEADS // result.tensor_parallel_size) if sharded else KDA_HEADS,
        **{
            key: getattr(result, key)
            for key in (
                "mla_bytes_per_token_per_layer",
                "kv_bytes_per_token",
                "draft_kv_bytes_per_token",
                "kv_block_size",
                "mla_page_bytes",
                "kv_group_size",
                "attention_layer_slots",
                "linear_layer_slots",
                "linear_recurrent_bytes_per_layer",
                "linear_conv_bytes_per_layer",
                "linear_page_bytes",
                "linear_page_padded_bytes",
                "linear_pages_per_sequence",
                "linear_state_bytes_per_sequence_per_gpu",
                "bytes_per_full_sequence",
            )
        },
    }


def mismatches(profile: Profile) -> list[str]:
    """Every figure where the plan and vLLM disagree, as 'name: plan X != vLLM Y'."""
    ours, theirs = plan_figures(plan(profile), profile), vllm_figures(profile)
    return [f"{key}: plan {ours[key]} != vLLM {theirs[key]}" for key in theirs if ours[key] != theirs[key]]


def _profile(*sets: str) -> Profile:
    return load_profile(K3, list(sets), check_fit=False)


TP = {8: ("parallel.nodes=2", "parallel.tensor_parallel_size=8"), 16: ()}
KV_DTYPES = get_args(VllmSpec.model_fields["kv_cache_dtype"].annotation)


def test_every_kv_cache_dtype_the_profile_allows_is_one_vllm_accepts() -> None:
    from vllm.config.cache import CacheDType

    assert set(KV_DTYPES) <= set(get_args(CacheDType))


@pytest.mark.parametrize("tp", sorted(TP))
@pytest.mark.parametrize("kv_dtype", KV_DTYPES)
def test_plan_matches_vllm_byte_for_byte(kv_dtype: str, tp: int) -> None:
    profile = _profile(f"vllm.kv_cache_dtype={kv_dtype}", *TP[tp])
    assert mismatches(profile) == []


def test_without_prefix_caching_or_speculation() -> None:
    assert mismatches(_profile("vllm.enable_prefix_caching=false")) == []
    assert mismatches(_profile("speculative=null", "vllm.enable_prefix_caching=false")) == []


def test_what_tp_shards_and_what_it_replicates() -> None:
    tp8, tp16 = vllm_figures(_profile(*TP[8])), vllm_figures(_profile())
    assert tp8["mla replicated on every rank"] and tp8["kv_bytes_per_token"] == tp16["kv_bytes_per_token"]
    assert (tp8["kv_block_size"], tp16["kv_block_size"]) == (
        1536,
        768,
    )  # a KDA page twice as large needs twice the tokens
    assert (tp8["kda heads per rank"], tp16["kda heads per rank"]) == (12, 6)
    assert tp8["linear_recurrent_bytes_per_layer"] == 2 * tp16["linear_recurrent_bytes_per_layer"]


#: A wrong profile field, and the figure whose comparison must then fail.
WRONG_FIELDS = [
    ("model.mla_kv_elements=512", "mla_bytes_per_token_per_layer"),  # forgot the rope part
    ("model.mla_layers=23", "layers (mla, kda)"),
    ("model.linear_state_elements=786432", "linear_recurrent_bytes_per_layer"),
    ("model.linear_state_dtype_bytes=2", "linear_recurrent_bytes_per_layer"),
    ("model.linear_state_tp_sharded=false", "kda heads per rank"),
    ("model.linear_conv_dim=0", "linear_conv_bytes_per_layer"),
    ("model.linear_conv_kernel_size=3", "linear_conv_bytes_per_layer"),
    ("model.linear_conv_dtype_bytes=4", "linear_conv_bytes_per_layer"),
    ("model.kv_block_alignment_tokens=512", "kv_block_size"),  # (16 happens to give 768 tokens too)
    ("model.linear_prefill_checkpoint_blocks=0", "linear_pages_per_sequence"),
    ("vllm.kv_cache_dtype_bytes=2", "mla_bytes_per_token_per_layer"),
    ("speculative.draft_kv_layers=0", "draft_kv_bytes_per_token"),
    ("speculative.draft_kv_layers=0", "linear_layer_slots"),  # 24 + 69 layers group by 24, not 29
]


@pytest.mark.parametrize(("wrong", "figure"), WRONG_FIELDS, ids=[f"{w}->{f}" for w, f in WRONG_FIELDS])
def test_a_wrong_profile_field_is_caught(wrong: str, figure: str) -> None:
    found = mismatches(_profile(wrong))
    assert any(line.startswith(f"{figure}:") for line in found), found


def test_a_wrong_formula_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # The old plan: one KDA state per sequence, as if speculative decoding and prefix caching kept no extra pages.
    monkeypatch.setattr(plan_module, "_prefix_caching", lambda profile: False)
    found = mismatches(_profile())
    assert any(line.startswith("linear_pages_per_sequence:") for line in found), found


def test_ignoring_group_padding_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        plan_module, "_layer_groups", lambda attention, linear: (max(attention, linear), attention, linear)
    )
    found = mismatches(_profile())
    assert any(line.startswith("bytes_per_full_sequence:") for line in found), found
