"""The capacity plan's exact figures, derived from profile fields only."""

from __future__ import annotations

import json

from k3deploy.profile import load_profile
from k3deploy.render.plan import plan

from tests.conftest import run_cli


def test_k3_plan_figures() -> None:
    result = plan(load_profile("kimi-k3-gb300-tp16"))
    assert result.kv_bytes_per_token == 24 * 576 * 1 == 13824
    assert result.linear_state_bytes_per_sequence == 69 * 96 * 128 * 128 * 4
    assert result.weight_bytes_per_gpu == 1_560_000_000_000 // 16
    assert result.bytes_per_full_sequence == 1048576 * 13824 + (69 * 96 * 128 * 128 * 4) // 16
    assert result.fits and result.full_sequences_per_gpu == 11


def test_constants_come_from_the_profile() -> None:
    bf16 = plan(load_profile("kimi-k3-gb300-tp16", ["vllm.kv_cache_dtype=bf16"]))
    assert bf16.kv_bytes_per_token == 2 * 13824
    fewer = plan(load_profile("kimi-k3-gb300-tp16", ["model.mla_layers=12"]))
    assert fewer.kv_bytes_per_token == 12 * 576


def test_plan_fails_when_no_sequence_fits() -> None:
    prof = load_profile("kimi-k3-gb300-tp16", ["hardware.gpu_memory_mib=115000"])
    result = plan(prof)
    assert not result.fits and "no room for one 1048576-token sequence" in result.reason
    cli = run_cli("plan", "-p", "kimi-k3-gb300-tp16", "--set", "hardware.gpu_memory_mib=115000", "-o", "json")
    assert cli.returncode == 1
    assert json.loads(cli.stdout)["fits"] is False
