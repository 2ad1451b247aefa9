"""The capacity plan's rules pinned at their boundaries, both sides (the survivors of tests/mutation/run on
k3deploy/profile/plan.py): weights + draft + reserve fit exactly at the usable memory, one sequence is enough."""

from __future__ import annotations

import pytest

from k3deploy.errors import ProfileError
from k3deploy.profile.load import load_profile
from k3deploy.profile.plan import GIB, MIB, plan

K3 = "kimi-k3-gb300-tp16"
#: Every byte of HBM usable and no runtime reserve: the usable memory per GPU is exactly gpu_memory_mib MiB.
EXACT = ["vllm.gpu_memory_utilization=1.0", "hardware.runtime_reserve_mib=0"]
TP = 16
USABLE = 284208 * MIB


def _sized(weight_per_gpu: int, draft_per_gpu: int, *extra: str) -> list[str]:
    return [
        *EXACT,
        f"model.checkpoint_bytes={weight_per_gpu * TP}",
        f"speculative.draft_bytes={draft_per_gpu * TP}",
        *extra,
    ]


def test_weights_and_draft_filling_the_usable_memory_exactly_fit_but_leave_no_kv_room() -> None:
    draft = 2 * GIB
    result = plan(load_profile(K3, _sized(USABLE - draft, draft), check_fit=False))
    assert (result.weight_bytes_per_gpu, result.draft_bytes_per_gpu) == (USABLE - draft, draft)
    assert result.usable_bytes_per_gpu == USABLE and result.weights_fit is True
    assert result.fits is False and result.reason.startswith("no room for one 1048576-token sequence")
    assert result.kv_budget_bytes_per_gpu == 0 and result.kv_tokens_per_gpu == 0


def test_one_byte_more_of_draft_does_not_fit_the_weights() -> None:
    draft = 2 * GIB
    result = plan(load_profile(K3, _sized(USABLE - draft, draft + 1), check_fit=False))
    assert result.weights_fit is False and result.fits is False
    assert result.reason.startswith("weights do not fit: ")
    # Loading refuses such a profile, naming the rule.
    with pytest.raises(ProfileError, match="weights do not fit"):
        load_profile(K3, _sized(USABLE - draft, draft + 1))


def test_the_draft_counts_in_the_weights_rule() -> None:
    # The target's weights alone fit with room to spare; the draft on top does not.
    result = plan(load_profile(K3, _sized(USABLE - GIB, 2 * GIB), check_fit=False))
    assert result.weight_bytes_per_gpu < USABLE and result.weights_fit is False
    assert "2.0 GiB draft" in result.reason


def test_the_reserve_counts_in_the_weights_rule() -> None:
    sets = _sized(USABLE - 2 * GIB, GIB)
    assert plan(load_profile(K3, sets, check_fit=False)).weights_fit is True
    reserved = plan(load_profile(K3, [*sets, "hardware.runtime_reserve_mib=1025"], check_fit=False))
    assert reserved.reserve_bytes_per_gpu == 1025 * MIB and reserved.weights_fit is False


def test_usable_memory_is_the_utilization_share_of_hbm() -> None:
    result = plan(load_profile(K3, ["vllm.gpu_memory_utilization=0.5"], check_fit=False))
    assert result.usable_bytes_per_gpu == 284208 * MIB // 2
    assert result.hbm_bytes_per_gpu == 284208 * MIB


@pytest.mark.parametrize(("spare", "sequences"), [(-1, 0), (0, 1), (1, 1)])
def test_one_full_length_sequence_is_enough_to_fit(spare: int, sequences: int) -> None:
    probe = plan(load_profile(K3, _sized(USABLE // 2, GIB), check_fit=False))
    full = probe.bytes_per_full_sequence
    weight = USABLE - GIB - full - spare
    # The checkpoint is split over 16 GPUs by ceil: keep it a multiple so the per-GPU figure is exact.
    result = plan(load_profile(K3, _sized(weight, GIB), check_fit=False))
    assert result.weight_bytes_per_gpu == weight and result.kv_budget_bytes_per_gpu == full + spare
    assert result.full_sequences_per_gpu == sequences
    assert result.fits is (sequences > 0)


def test_the_checkpoint_is_split_over_tensor_and_pipeline_shards_rounding_up() -> None:
    result = plan(load_profile(K3, ["model.checkpoint_bytes=1600000000001"], check_fit=False))
    assert result.weight_bytes_per_gpu == 100000000001  # ceil(1.6e12 + 1 / 16)
    draft = plan(load_profile(K3, ["speculative.draft_bytes=17"], check_fit=False))
    assert draft.draft_bytes_per_gpu == 2  # ceil(17 / 16)


def test_no_hardware_and_no_cpu_kv_space_plans_nothing_but_fits() -> None:
    result = plan(load_profile("local-cpu", ["vllm.env={}"]))
    assert (result.fits, result.kv_tokens_per_gpu, result.usable_bytes_per_gpu) == (True, None, None)
    assert result.weights_fit is True
    assert result.reason == "no GPU hardware in the profile: GPU fit not planned"


def test_a_cpu_kv_space_too_small_for_one_sequence_does_not_fit() -> None:
    roomy = plan(load_profile("local-cpu"))
    assert roomy.fits and roomy.reason.startswith("512 sequences of 1024 tokens fit in the KV space")
    none = plan(load_profile("local-cpu", ['vllm.env.VLLM_CPU_KVCACHE_SPACE="0"']))
    assert none.full_sequences_per_gpu == 0 and not none.fits
    assert none.reason == "no room for one 1024-token sequence in 0.00 GiB of KV space"
