"""The serving pods' start-up budget is derived from storage.read_mb_s and the checkpoint's size plus a compile
allowance, not a fixed 7,200 s: the startup probe and VLLM_ENGINE_READY_TIMEOUT_S follow it, and `plan` prints it
with where each part comes from."""

from __future__ import annotations

import json
from typing import Any

import pytest

from k3deploy.profile import load_profile
from k3deploy.profile.startup import DEFAULT_COMPILE_ALLOWANCE_S, DEFAULT_READ_MB_S, StorageSpec
from k3deploy.render.manifests import build
from tests.conftest import run_cli

K3 = "kimi-k3-gb300-tp16"


def _pods(sets: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    lws = next(m.obj for m in build(load_profile(K3, sets)) if m.kind == "LeaderWorkerSet")
    template = lws["spec"]["leaderWorkerTemplate"]
    return template["leaderTemplate"]["spec"], template["workerTemplate"]["spec"]


def _probe_s(pod: dict[str, Any]) -> int:
    probe = pod["containers"][0]["startupProbe"]
    return int(probe["periodSeconds"] * probe["failureThreshold"])


def _ready_env(pod: dict[str, Any]) -> int:
    return int({e["name"]: e.get("value") for e in pod["containers"][0]["env"]}["VLLM_ENGINE_READY_TIMEOUT_S"])


def test_the_defaults_are_the_field_report_and_a_stated_allowance() -> None:
    fields = StorageSpec.model_fields
    assert fields["read_mb_s"].default == DEFAULT_READ_MB_S == 270
    assert "95 min from NFS" in (fields["read_mb_s"].description or "")
    assert fields["compile_allowance_s"].default == DEFAULT_COMPILE_ALLOWANCE_S == 1800


def test_the_builtin_budget_is_the_checkpoint_read_plus_the_allowance() -> None:
    profile = load_profile(K3)
    budget = profile.startup_budget
    weights = profile.model.checkpoint_bytes + (profile.speculative.draft_bytes if profile.speculative else 0)
    assert budget.weight_bytes == weights == 1_567_120_000_000
    assert budget.read_s == 5805  # 1.567 TB at 270 MB/s
    assert budget.total_s == 7610  # + 1,800 s, rounded up to the 10 s probe period
    leader, worker = _pods([])
    assert _probe_s(leader) == 7610
    assert _ready_env(leader) == _ready_env(worker) == 7610


@pytest.mark.parametrize(
    ("sets", "expected"),
    [
        (["storage.read_mb_s=3250"], 2290),  # local NVMe: 482 s + 1,800 s, rounded up
        (["storage.read_mb_s=135"], 13410),  # half the NFS rate: twice the read
        (["storage.compile_allowance_s=0"], 5810),
        (["model.checkpoint_bytes=780000000000"], 4720),  # half the checkpoint
        (["kubernetes.startup_probe_budget_s=10800"], 10800),  # an explicit budget overrides
    ],
)
def test_the_probe_and_the_engine_timeout_follow_each_part(sets: list[str], expected: int) -> None:
    assert load_profile(K3, sets).startup_budget.total_s == expected
    leader, worker = _pods(sets)
    assert _probe_s(leader) == _ready_env(leader) == _ready_env(worker) == expected


def test_plan_prints_the_budget_and_where_each_part_comes_from() -> None:
    table = run_cli("plan", "-p", K3)
    assert table.returncode == 0, table.stderr
    lines = [line for line in table.stderr.splitlines() if line.startswith("start-up budget: ")]
    assert lines == [
        "start-up budget: weights: 1.567 TB (model.checkpoint_bytes + speculative.draft_bytes) at storage.read_mb_s "
        "270 MB/s = 5,805 s",
        "start-up budget: compile and CUDA graphs: storage.compile_allowance_s = 1,800 s",
        "start-up budget: total: 7,610 s (the sum, rounded up to the 10 s probe period)",
        "start-up budget: startup probe 761 x 10 s; VLLM_ENGINE_READY_TIMEOUT_S=7610",
    ]
    data = json.loads(run_cli("plan", "-p", K3, "--set", "kubernetes.startup_probe_budget_s=9000", "-o", "json").stdout)
    assert data["startup_budget"]["total_s"] == 9000 and data["startup_budget"]["override_s"] == 9000
    assert "set by kubernetes.startup_probe_budget_s (derived: 7,610 s)" in data["startup_budget"]["parts"][2]
    local = run_cli("plan", "-p", "local-cpu")
    assert "start-up budget" not in local.stderr
