"""Local preflight verdicts: exact status and wording for each fact a user can get wrong."""

from __future__ import annotations

from dataclasses import replace

import pytest

from k3deploy.profile import load_profile
from k3deploy.report.model import Status
from k3deploy.targets.local.checks import GIB, HostFacts, evaluate, looks_like_path, needed_ram_bytes

GOOD = HostFacts(
    python="/venv/bin/python",
    python_found=True,
    vllm_version="0.32.0",
    cpu_count=2,
    ram_available_bytes=20 * GIB,
    disk_free_bytes=50 * GIB,
    state_dir="/s",
    port_free=True,
    model_path="/s/model",
    model_is_path=True,
    model_dir_exists=False,
    model_has_config=False,
)


def by_name(profile_sets: list[str], facts: HostFacts) -> dict[str, tuple[Status, str]]:
    results = evaluate(load_profile("local-cpu", profile_sets), facts)
    return {r.name: (r.status, r.detail) for r in results}


def test_healthy_host_passes_every_check_in_fixing_order() -> None:
    results = evaluate(load_profile("local-cpu"), GOOD)
    assert [r.name for r in results] == [
        "local.vllm",
        "local.model",
        "local.cpu",
        "local.ram",
        "local.disk",
        "local.port",
    ]
    assert {r.status for r in results} == {Status.PASS}
    assert results[0].detail == "vLLM 0.32.0 in /venv/bin/python"
    assert results[1].detail == "rehearsal model (random weights, not Kimi K3), generated on first use in /s/model"
    assert results[3].detail == "20.0 GiB available, 5.0 GiB needed"


def test_ram_need_is_runtime_allowance_plus_weights_draft_and_cpu_kv_cache() -> None:
    assert needed_ram_bytes(load_profile("local-cpu")) == 4 * GIB + 8_000_000 + 1 * GIB
    bigger = load_profile("local-cpu", ["speculative.draft_bytes=1000", "vllm.env.VLLM_CPU_KVCACHE_SPACE='3'"])
    assert needed_ram_bytes(bigger) == 4 * GIB + 8_000_000 + 1000 + 3 * GIB


@pytest.mark.parametrize(
    ("facts", "name", "detail"),
    [
        (replace(GOOD, python_found=False, python="/nope/python"), "local.vllm", "interpreter /nope/python not found"),
        (replace(GOOD, vllm_version=None), "local.vllm", "vLLM is not importable by /venv/bin/python"),
        (replace(GOOD, ram_available_bytes=2 * GIB), "local.ram", "2.0 GiB available, 5.0 GiB needed"),
        (replace(GOOD, disk_free_bytes=GIB // 2), "local.disk", "0.5 GiB free under /s"),
        (replace(GOOD, port_free=False), "local.port", "port 18431 on 127.0.0.1 is in use by another process"),
    ],
)
def test_each_missing_fact_fails_its_own_check(facts: HostFacts, name: str, detail: str) -> None:
    results = by_name([], facts)
    assert results[name] == (Status.FAIL, detail)
    assert [n for n, (status, _) in results.items() if status is Status.FAIL] == [name]


def test_port_held_by_our_own_server_passes_and_says_what_happens() -> None:
    same = by_name([], replace(GOOD, port_free=False, running_pid=42, running_same=True, ram_available_bytes=GIB))
    assert same["local.port"] == (
        Status.PASS,
        "127.0.0.1:18431 is served by the k3deploy server (pid 42): it will be reused",
    )
    assert same["local.ram"][0] is Status.PASS  # the running server's memory is already taken
    changed = by_name([], replace(GOOD, port_free=False, running_pid=42, running_same=False))
    assert changed["local.port"][1].endswith("it will be replaced (the profile changed)")


def test_real_model_path_must_exist_and_hold_a_config() -> None:
    sets = ["model.rehearsal=false", "model.id=/models/x"]
    missing = replace(GOOD, model_path="/models/x")
    assert by_name(sets, missing)["local.model"] == (Status.FAIL, "model path /models/x does not exist")
    no_config = replace(missing, model_dir_exists=True)
    assert by_name(sets, no_config)["local.model"] == (Status.FAIL, "model path /models/x has no config.json")
    good = replace(no_config, model_has_config=True)
    assert by_name(sets, good)["local.model"] == (Status.PASS, "model folder /models/x")


def test_hub_id_passes_but_warns_when_the_profile_forbids_downloads() -> None:
    facts = replace(GOOD, model_path="org/name", model_is_path=False)
    offline = by_name(["model.rehearsal=false", "model.id=org/name"], facts)["local.model"]
    assert offline == (
        Status.WARN,
        "hub id org/name: vLLM loads it from the Hugging Face cache (HF_HUB_OFFLINE=1: cache only)",
    )
    online = by_name(["model.rehearsal=false", "model.id=org/name", "vllm.env={}"], facts)["local.model"]
    assert online == (Status.PASS, "hub id org/name: vLLM loads it from the Hugging Face cache")


def test_single_core_only_warns() -> None:
    assert by_name([], replace(GOOD, cpu_count=1))["local.cpu"] == (Status.WARN, "1 CPU core: expect a slow server")


@pytest.mark.parametrize(
    ("model_id", "is_path"),
    [
        ("/abs/model", True),
        ("~/models/x", True),
        ("./x", True),
        ("../x", True),
        (".", True),
        ("org/name", False),
        ("name", False),
    ],
)
def test_paths_are_told_from_hub_ids(model_id: str, is_path: bool) -> None:
    assert looks_like_path(model_id) is is_path
