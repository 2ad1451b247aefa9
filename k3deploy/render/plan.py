"""The capacity plan: every derived memory figure of a profile, computed from its fields alone.

Pure: no I/O. `plan(profile)` is used by `k3deploy plan`, by profile loading (weights must fit) and by
preflight (weights + draft + one full-length sequence must fit).
"""

from __future__ import annotations

import math

from pydantic import BaseModel

from k3deploy.profile.model import Profile

MIB = 1024 * 1024
GIB = 1024 * MIB


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
    kv_bytes_per_token: int
    kv_dtype_bytes: int
    linear_state_bytes_per_sequence: int
    linear_state_bytes_per_sequence_per_gpu: int
    max_model_len: int
    bytes_per_full_sequence: int
    kv_budget_bytes_per_gpu: int | None
    kv_tokens_per_gpu: int | None
    full_sequences_per_gpu: int | None
    fits: bool
    reason: str

    @property
    def weights_fit(self) -> bool:
        """Weights, draft and reserve fit in usable memory (KV room aside); True when no GPU is planned."""
        if self.usable_bytes_per_gpu is None:
            return True
        return self.weight_bytes_per_gpu + self.draft_bytes_per_gpu + self.reserve_bytes_per_gpu <= self.usable_bytes_per_gpu


def plan(profile: Profile) -> CapacityPlan:
    """Compute the capacity plan; never raises for a plan that does not fit (see `fits`)."""
    model, par, vllm = profile.model, profile.parallel, profile.vllm
    shards = par.tensor_parallel_size * par.pipeline_parallel_size
    gpus = par.nodes * par.gpus_per_node
    weight = math.ceil(model.checkpoint_bytes / shards)
    draft_total = profile.speculative.draft_bytes if profile.speculative else 0
    draft = math.ceil(draft_total / par.tensor_parallel_size)
    kv_dtype = vllm.kv_bytes_per_element()
    # MLA's compressed latent is not split by heads, so every TP rank holds the whole cache.
    kv_per_token = model.mla_layers * model.mla_kv_elements * kv_dtype
    state_seq = model.linear_layers * model.linear_state_elements * model.linear_state_dtype_bytes
    state_gpu = math.ceil(state_seq / par.tensor_parallel_size) if model.linear_state_tp_sharded else state_seq
    full_seq = vllm.max_model_len * kv_per_token + state_gpu
    common = dict(
        profile=profile.name, gpus=gpus, tensor_parallel_size=par.tensor_parallel_size, weight_bytes_per_gpu=weight,
        draft_bytes_per_gpu=draft, kv_bytes_per_token=kv_per_token, kv_dtype_bytes=kv_dtype,
        linear_state_bytes_per_sequence=state_seq, linear_state_bytes_per_sequence_per_gpu=state_gpu,
        max_model_len=vllm.max_model_len, bytes_per_full_sequence=full_seq,
    )
    hw = profile.hardware
    if hw is None:
        return CapacityPlan(
            **common, hbm_bytes_per_gpu=None, usable_bytes_per_gpu=None, reserve_bytes_per_gpu=0,
            kv_budget_bytes_per_gpu=None, kv_tokens_per_gpu=None, full_sequences_per_gpu=None,
            fits=True, reason="no GPU hardware in the profile: GPU fit not planned",
        )
    hbm = hw.gpu_memory_mib * MIB
    usable = int(hbm * vllm.gpu_memory_utilization)
    reserve = hw.runtime_reserve_mib * MIB
    budget = usable - weight - draft - reserve
    kv_tokens = max(budget, 0) // kv_per_token if kv_per_token else None
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
        **common, hbm_bytes_per_gpu=hbm, usable_bytes_per_gpu=usable, reserve_bytes_per_gpu=reserve,
        kv_budget_bytes_per_gpu=budget, kv_tokens_per_gpu=kv_tokens, full_sequences_per_gpu=sequences,
        fits=fits, reason=reason,
    )
